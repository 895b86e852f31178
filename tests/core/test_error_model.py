"""The error model (autograder/core/mutants.py): every task's reference, edited one step at a time, names a student's
output when one of the edits gives it on every case.

For each task of each unit, a seeded sample of the model's own mutants (equivalent ones, which pass every case,
removed by probing) is handed in as students' files, each file with one mutant of every task (the task's function
replaced by it). Each must lose points in its own task only, and be named: its failing tests say "Likely mistake", and where the model names it,
the words named are those of mutants with exactly its outcome on every case (which of those was made cannot be
told from the outputs), never another's.
"""

import ast
import math
import random

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import mutants, units
from autograder.core.cases import build_cases
from autograder.core.grade import Grader

UNITS = ("positional_encodings", "rotary_alibi", "long_context", "vision_positions")
SAMPLE = 20  # mutants per task (the Done-when: at least 20)


def _tasks():
    return [(unit, task) for unit in UNITS for task in units.get(unit).rubric.TASK_NAMES if task != "timing"]


def test_every_task_has_enough_mutants_to_sample():
    for unit_name, task in _tasks():
        assert len(mutants.mutants(units.get(unit_name), task)) >= SAMPLE, (unit_name, task)


def test_mutants_are_the_reference_edited_once_and_say_so():
    unit = units.get("long_context")
    found = {m.words for m in mutants.mutants(unit, "ntk_inverse_frequencies")}
    # The slip a student makes when the exponent's division is an integer division (dh // (dh - 2) is 1 for dh > 4).
    assert any("`head_dim // (head_dim - 2)` where the reference has `head_dim / (head_dim - 2)`" in words
               for words in found), sorted(found)
    assert any(words.startswith("no check `if head_dim < 4 or head_dim % 2 != 0: raise ...`")
               for words in found)
    # A scale used as a divisor where the docstring multiplies by it (its default written as 1 / sqrt(dh)): no edit
    # of one expression gives it, the argument's reciprocal does.
    first = units.get("positional_encodings")
    assert any(m.words.startswith("`1 / scale` in place of `scale`") for m in mutants.mutants(first, "biased_scores"))
    for m in mutants.mutants(unit, "ntk_inverse_frequencies"):
        compile(m.source, "<mutant>", "exec")
        assert m.defined_as.startswith(mutants.PREFIX) and m.defined_as.endswith(m.function)


def _outcome(tensor):
    return {"value": {"tensor": tensor, "device": "cpu"}}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["finite", "nan", "+inf", "-inf"]), min_size=1, max_size=12), st.data())
def test_results_not_finite_in_both_are_the_same_outcome_whichever_of_inf_or_nan_they_hold(kinds, data):
    """Where a divisor is zero, the order of the operations decides between an infinity and NaN: an entry not
    finite in both results is the same outcome, but for infinities of opposite signs; a finite entry still counts,
    and so does whether an entry is finite."""
    values = {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf}
    other_kinds = [kind if kind == "finite" else data.draw(st.sampled_from(["nan", "+inf", "-inf"]))
                   for kind in kinds]
    finite = data.draw(st.lists(st.floats(-100, 100), min_size=len(kinds), max_size=len(kinds)))
    a = torch.tensor([values.get(kind, x) for kind, x in zip(kinds, finite)], dtype=torch.float64)
    b = torch.tensor([values.get(kind, x) for kind, x in zip(other_kinds, finite)], dtype=torch.float64)
    opposite = any({x, y} == {"+inf", "-inf"} for x, y in zip(kinds, other_kinds))
    assert mutants.same_outcome(_outcome(a), _outcome(b), 1e-9, 1e-9) == (not opposite)
    at = data.draw(st.integers(0, len(kinds) - 1))
    moved = b.clone()
    moved[at] = 1.0 if kinds[at] != "finite" else finite[at] + 1.0  # finite where the other is not, or moved
    assert not mutants.same_outcome(_outcome(a), _outcome(moved), 1e-9, 1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3).filter(lambda x: abs(x) > 1e-2), min_size=1, max_size=20),
       st.sampled_from([torch.float32, torch.float16, torch.bfloat16]), st.integers(1, 4))
def test_two_results_of_a_coarse_dtype_are_compared_to_its_own_precision(values, dtype, ulps):
    """Two float32 (or half) results a few of their ulps apart are one outcome, even where the case's check wants
    float64 and holds float64's tolerance; a difference of many ulps still counts."""
    exact = torch.tensor(values, dtype=torch.float64)
    a = exact.to(dtype)
    step = torch.finfo(dtype).eps * a.double().abs().max()  # an ulp of the largest entry
    near = (a.double() + ulps * step * 0.5).to(dtype)
    assert mutants.same_outcome(_outcome(a), _outcome(near), 1e-12, 1e-12)
    far = (a.double() + 1000 * step).to(dtype)
    assert not mutants.same_outcome(_outcome(a), _outcome(far), 1e-12, 1e-12)


def test_the_same_slip_made_twice_on_one_line_is_a_pair_the_model_tries():
    """YaRN's bounds rounded to nearest both (where the formula takes floor and ceil): no single edit gives it, and
    neither edit alone need explain any case, so the model tries the twins of every line."""
    unit = units.get("long_context")
    everything = mutants.mutants(unit, "yarn_inverse_frequencies")
    words = [pair.words for pair in mutants.twins(everything)]
    assert any(said.startswith("`round(low)` where the reference has `math.floor(low)`") and
               "`round(high)` where the reference has `math.ceil(high)`" in said for said in words), words
    for unit_name, task in _tasks():
        found = mutants.mutants(units.get(unit_name), task)
        for pair in mutants.twins(found):
            one, two = pair.parts
            (_, node_one, new_one), (_, node_two, new_two) = (mutants._EDITS[(m.task, m.function, m.number)]
                                                              for m in (one, two))
            assert node_one.lineno == node_two.lineno and type(new_one) is type(new_two), pair.words
            compile(pair.source, "<twin>", "exec")


@pytest.mark.parametrize("unit_name", UNITS)
def test_the_model_never_runs_on_a_blank_release(unit_name, tmp_path):
    """A stub raises NotImplementedError on every call, in a behaviour contract's sequences too: nothing to name,
    and a class's blank notebooks cost no mutant run (the throughput bound of issue 37). Before the fix the
    sequences' calls were not read, the stubs looked like written code, and every task ran its mutants."""
    from autograder.course.build import student_folder

    unit = units.get(unit_name)
    path = tmp_path / "blank.py"
    path.write_text((student_folder(unit) / f"{unit.module_name}.py").read_text(encoding="utf-8"), encoding="utf-8")
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    asked = []
    explain = grader.model.explain
    grader.model.explain = lambda seed, task, cases, student: (asked.append(task), explain(seed, task, cases,
                                                                                          student))[1]
    try:
        result = grader.grade(path)
    finally:
        grader.close()
    assert all(not test.passed for test in result.tests if test.task != "timing") and asked == [], asked


def test_the_model_is_not_asked_where_a_declared_mistake_names_the_task(tmp_path):
    """The first unit's sample mistakes (the demo's class): each is declared and named in its task. Where it names
    one failing test and another of the task fails unnamed (the causal buckets of "not clamped"), the declared
    name is the task's: the model's jobs run for none of them, and the names are the declared ones."""
    from autograder.ways_in import demo

    unit = units.get("positional_encodings")
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    asked = []
    explain = grader.model.explain
    grader.model.explain = lambda seed, task, cases, student: (asked.append(task), explain(seed, task, cases,
                                                                                          student))[1]
    paths = []
    for mistake in demo.mistakes_of(unit):
        path = tmp_path / f"{mistake.name}.py"
        path.write_text(demo.apply(mistake, unit.finished_reference), encoding="utf-8")
        paths.append((mistake, path))
    try:
        results = grader.grade_many([path for _, path in paths], jobs=2)
    finally:
        grader.close()
    for (mistake, _), result in zip(paths, results):
        failed = [test for test in result.tests if not test.passed and test.task == mistake.task]
        assert failed and any(test.diagnosis.mistakes for test in failed), mistake.name
    assert asked == [], asked


def test_mutants_that_a_job_s_time_limit_left_unrun_run_again_until_each_has_its_outcome():
    """A loaded machine runs fewer mutants in a job's time limit: those left run again in jobs of their own, so that
    what the model names never depends on the machine's load (a sample's mutant went unnamed in CI so). The limit is
    injected: each job runs its first three tasks for real and reports the rest unrun, as the deadline does."""
    unit = units.get("positional_encodings")
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        model = grader.model
        cases = build_cases(unit, unit.rubric.SEED)["learned"][:3]
        chosen = list(mutants.mutants(unit, "learned"))[:10]
        jobs = []

        def cut_short(submission, plan, task_names, limits, server):
            jobs.append(len(task_names))
            outcome = model._run(submission, plan, task_names[:3], limits, server)
            for task in task_names[3:]:
                outcome.failures[task] = "not run: the submission's time limit ran out"
            outcome.unrun = list(task_names[3:])
            return outcome

        whole = mutants.run_mutants(unit, cases, chosen, model.limits, model.server, model._run, model._plan_type)
        cut = mutants.run_mutants(unit, cases, chosen, model.limits, model.server, cut_short, model._plan_type)
    finally:
        grader.close()
    assert jobs == [10, 7, 4, 1]
    assert set(cut) == set(whole) == {m.number for m in chosen}
    for number, outcomes in whole.items():
        for case in cases:
            assert mutants.same_outcome(outcomes[case.id], cut[number][case.id]), (number, case.label)


def test_what_the_model_ran_is_what_it_compares_even_where_the_store_pushed_it_out(monkeypatch):
    """The outcomes a call ran are the ones it returns: a store too small for them (another grading thread's
    outcomes push the oldest out past KEPT) once read them back as not run, and a sampled mutant went unnamed."""
    unit = units.get("positional_encodings")
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        cases = build_cases(unit, unit.rubric.SEED)["learned"][:4]
        chosen = list(mutants.mutants(unit, "learned"))[:6]
        whole = grader.model._outcomes(unit.rubric.SEED, "learned", chosen, cases)
        monkeypatch.setattr(mutants, "KEPT", 1)
        small = mutants.Model(unit, grader.limits, grader.server, grader.model._run, grader.model._plan_type)
        kept_one = small._outcomes(unit.rubric.SEED, "learned", chosen, cases)
    finally:
        grader.close()
    for m in chosen:
        for case in cases:
            assert kept_one[m.number][case.id] is not None
            assert mutants.same_outcome(kept_one[m.number][case.id], whole[m.number][case.id]), (m.words, case.label)


def _with_mutants(unit, chosen):
    """The finished reference with each task's function replaced by its mutant in ``chosen`` (one per task): a
    mutant costs its own task only (a task's helpers are the grader's stand-ins while it is graded), so one file
    tests one mutant of every task."""
    source = unit.finished_reference
    for mutant in chosen:
        node = ast.parse(mutant.source).body[0]
        node.name = mutant.function
        source += "\n\n\n" + ast.unparse(node) + "\n"
    return source


def _named_in(words, text):
    """Whether ``text`` (mutants.likely_line's sentence) names the edit ``words``, as a whole entry of its list."""
    return any(words + end in text for end in (", on every case", "; ", " (and ", "."))


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """{unit: (cases by task, live sampled mutants by task with their outcomes, [(file's mutants, result)])}."""
    found = {}
    for unit_name in UNITS:
        unit = units.get(unit_name)
        folder = tmp_path_factory.mktemp(unit_name)
        grader = Grader(unit, sandbox="auto", timing_mode="give")
        try:
            cases = build_cases(unit, unit.rubric.SEED)
            live = {}
            for task in unit.rubric.TASK_NAMES:
                if task == "timing":
                    continue
                every = list(mutants.mutants(unit, task))
                random.Random(f"error model:{unit_name}:{task}").shuffle(every)
                alive, outcomes = [], {}
                while len(alive) < SAMPLE and every:
                    # Equivalent mutants (passing every case) removed by probing: run on the task's cases.
                    drawn, every = every[:2 * SAMPLE], every[2 * SAMPLE:]
                    more, probed = grader.model.outcomes(unit.rubric.SEED, task, cases[task], drawn)
                    alive += more
                    outcomes.update(probed)
                live[task] = (alive[:SAMPLE], outcomes)
            paths, files = [], []
            for number in range(SAMPLE):
                chosen = [alive[number] for alive, _ in live.values() if number < len(alive)]
                path = folder / f"mutants_{number}.py"
                path.write_text(_with_mutants(unit, chosen), encoding="utf-8")
                paths.append(path)
                files.append(chosen)
            results = grader.grade_many(paths, jobs=2)
        finally:
            grader.close()
        found[unit_name] = (cases, live, list(zip(files, results)))
    return found


def test_each_task_has_a_sample_of_twenty_live_mutants(sampled):
    for unit_name, (_, live, _) in sampled.items():
        for task, (alive, _) in live.items():
            assert len(alive) >= SAMPLE, (unit_name, task, len(alive))


@pytest.mark.parametrize("unit_name", UNITS)
def test_a_sampled_mutant_is_caught_in_its_task_only_and_named_as_itself(sampled, unit_name):
    cases, live, files = sampled[unit_name]
    problems = []
    for chosen, result in files:
        tasks = {mutant.task for mutant in chosen}
        failed = [test for test in result.tests if not test.passed and test.task != "timing"]
        assert {test.task for test in failed} == tasks, (sorted(tasks - {test.task for test in failed}),
                                                         sorted({test.task for test in failed} - tasks))
        for mutant in chosen:
            own = [test for test in failed if test.task == mutant.task]
            said = "\n".join(test.output for test in own)
            if "Likely mistake" not in said and not any(test.diagnosis.mistakes for test in own):
                # (A contract's check names what it finds itself: "no gradient reaches k".)
                problems.append(f"{mutant.task} ({mutant.words}): not named\n{said[:400]}")
                continue
            model_named = [test for test in own if any("your output equals the reference's" in m
                                                       for m in test.diagnosis.mistakes)]
            if not model_named:
                continue  # a declared mistake of the task names it: the hand-written name stays first
            alive, outcomes = live[mutant.task]
            # The mutants of the sample with exactly its outcome on every case: which of them was made cannot be
            # told. Any other mutant of the sample named beside it is a wrong name.
            same = {m.words for m in alive if mutants._agrees(cases[mutant.task], outcomes[mutant.number],
                                                              outcomes[m.number])}
            text = model_named[0].diagnosis.mistakes[0]
            if not any(_named_in(words, text) for words in same | {mutant.words}) \
                    and "more edits give it too" not in text:
                problems.append(f"{mutant.task} ({mutant.words}): named as {text[:300]}")
            wrong = [m.words for m in alive if m.words not in same and _named_in(m.words, text)]
            if wrong:
                problems.append(f"{mutant.task} ({mutant.words}): also named as another: {wrong[:2]}")
    assert not problems, "\n".join(problems)
