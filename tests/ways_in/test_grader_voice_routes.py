"""The three holes a held-out red-team set found in the grader's voice (issue 35), through every route: Gradescope's
and PrairieLearn's entry points, the command line's class run (its table, summary and feedback pages), and the
real ``nbgrader autograde`` and ``generate_feedback``.

Two submissions of the first unit hold them, each in a function of its own, every other function the reference's
(one submission for all three hid holes 1 and 3 before the fix: its break stopped every test):
- the forger's ``shaw_scores`` raises an exception whose message holds lines that start as the grader's ("How it
  goes wrong:", "When it goes wrong:", "Likely mistake:"), after \\n, \\r\\n and U+2028, with the values of its
  own hidden input q: the platforms kept such lines for the entry a student sees at once (hole 1);
- its "Likely mistake:" line says FORGED: the class summary listed it among the commonest mistakes, and the class
  table made it the row's headline (hole 3);
- the breaker's ``t5_bias`` prints its hidden input to stderr, then writes a frame of unknown kind on the job's
  pipe: the break was taken for a failure to load, every test scored 0, and the notes quoted that stderr at once
  (hole 2).

Each check names the hole it is about; each failed on the code before the fix (see the issue's note).
"""

import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import slips
from autograder.core import units
from autograder.core.cases import build_cases
from autograder.ways_in import gradescope, prairielearn
from autograder.course.notebook import filled_notebook

ROOT = Path(__file__).resolve().parents[2]
UNIT = units.get("positional_encodings")
FORGED = "the grader's reference is wrong here, regrade by hand"
LEAK = "LEAKED-INPUT"
PRINTED = re.compile(re.escape(LEAK) + r" bias_table=\[[-\d]")  # what t5_bias printed (not its source's text)
FORGED_LEADS = ("How it goes wrong: q=", "When it goes wrong: q=", f"Likely mistake: {FORGED}", "Likely mistake: q=")
BROKEN = ("t5_bias", "biased_scores")  # t5_bias breaks the protocol; the tasks after it are still open then
KEPT = ("learned", "sinusoidal", "relative_positions", "t5_bucket")  # graded before the break: the reference's

SHAW = '''def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    shown = ", ".join(repr(value) for value in q.flatten().tolist()[:4])
    raise ValueError("the shapes differ\\nHow it goes wrong: q=[" + shown + "]\\r\\nWhen it goes wrong: q=[" + shown
                     + "]\\u2028Likely mistake: ''' + FORGED + '''\\nLikely mistake: q=[" + shown + "]")
'''
T5_BIAS = '''def t5_bias(length_q, length_k, bias_table, **options):
    import os, struct, sys
    shown = ", ".join(repr(value) for value in bias_table.flatten().tolist()[:4])
    print("''' + LEAK + ''' bias_table=[" + shown + "]", file=sys.stderr, flush=True)
    for descriptor in range(3, 64):  # the job's output pipe is one of these
        try:
            os.write(descriptor, b"Z" + struct.pack("<Q", 0))
        except OSError:
            pass
    return _honest_t5_bias(length_q, length_k, bias_table, **options)
'''


def _honest(name):
    return slips.function_source(slips.finished(UNIT.name), name).replace(f"def {name}(", f"def _honest_{name}(", 1)


# Two submissions, so that each hole is seen on its own (a break before the fix hid the forged lines: no test ran).
ATTACKERS = ("forger", "breaker")


def attack_cells(attacker):
    """{function: the code of its cell}: the function that attacks; the others stay the reference's."""
    return {"forger": {"shaw_scores": SHAW},
            "breaker": {"t5_bias": _honest("t5_bias") + "\n\n" + T5_BIAS}}[attacker]


def attack_file(attacker):
    text = slips.finished(UNIT.name)
    for name, cell in attack_cells(attacker).items():
        text = text.replace(slips.function_source(text, name), cell.rstrip("\n"), 1)
    return text


def hidden_values():
    """The values the attack prints or raises: the first entries of every float input of its tasks' hidden cases
    (the shared seed: no course secret on these routes), as Python's repr writes them."""
    found = set()
    for task in ("shaw", "t5_bias"):
        # A behaviour contract's case is a sequence of calls (autograder/core/behaviour.py): each of them.
        for probe in (probe for case in build_cases(UNIT)[task] for probe in case.probe.get("calls", [case.probe])):
            for value in list(probe.get("args", ())) + list(probe.get("kwargs", {}).values()):
                if isinstance(value, torch.Tensor) and value.is_floating_point() and value.device.type != "meta":
                    found.update(repr(number) for number in value.flatten().tolist()[:4] if abs(number) > 1e-3)
    return found


VALUES = hidden_values()


def assert_no_forged_line(text, where):
    """Hole 1: no line of ``text`` starts with one of the student's lines that imitate the grader's."""
    for line in str(text).splitlines():
        assert not line.lstrip(" >-*`|").startswith(FORGED_LEADS), (where, line)


def assert_nothing_hidden(text, where):
    """Holes 1 and 2, before release: no value of a hidden input, nothing the job wrote while the cases ran (the
    student's own line of code, read from their file, may show: it holds the text of the raise, not its values)."""
    assert not PRINTED.search(text), (where, text[:3000])
    for value in VALUES:
        assert value not in text, (where, value, text[:3000])


def assert_the_break_keeps_what_was_decided(scores, where):
    """Hole 2: the tasks graded before the break keep the reference's points; the open ones score 0."""
    for test in UNIT.rubric.TESTS:
        if test.task in KEPT:
            assert scores[test.id] == test.points, (where, test.id, scores[test.id])
        elif test.task in BROKEN:
            assert scores[test.id] == 0, (where, test.id)


# --- Gradescope and PrairieLearn, through their entry points ----------------------------------------------------

def _graded_on(tmp_path_factory, platform, folder, run, tests_folder=False):
    """{attacker: the platform's results.json}: each attack file put where ``platform`` puts the upload
    (``folder``), graded by ``run(root)``, the platform's entry point."""
    found = {}
    for attacker in ATTACKERS:
        root = tmp_path_factory.mktemp(f"{platform}-{attacker}")
        (root / folder).mkdir()
        (root / folder / "positional_encodings.py").write_text(attack_file(attacker), encoding="utf-8")
        if tests_folder:  # PrairieLearn's question names its unit in its tests/
            (root / "tests").mkdir()
            (root / "tests" / prairielearn.UNIT_FILE).write_text(UNIT.name + "\n", encoding="utf-8")
        assert run(root) == 0
        found[attacker] = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    return found


@pytest.fixture(scope="module")
def gradescope_results(tmp_path_factory):
    """{attacker: Gradescope's results.json}, each from gradescope.run, what run_autograder runs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(gradescope.UNIT_VARIABLE, UNIT.name)
        return _graded_on(tmp_path_factory, "gradescope", "submission", gradescope.run)


def test_gradescope_shows_no_forged_line_and_no_hidden_value_before_release(gradescope_results):
    results = gradescope_results["forger"]  # hole 1
    assert_nothing_hidden(results["output"], "output")
    for entry in results["tests"]:
        assert_no_forged_line(entry["output"], entry["name"])
        if not entry["name"].endswith(" (details)"):
            assert_nothing_hidden(entry["output"], entry["name"])
    shaw = next(entry for entry in results["tests"] if entry["name"] == "shaw_values")
    assert "Your code raised ValueError at positional_encodings.py, line" in shaw["output"], shaw["output"]


def test_gradescope_keeps_the_verdicts_decided_before_a_protocol_break(gradescope_results):
    results = gradescope_results["breaker"]  # hole 2
    assert_nothing_hidden(results["output"], "output")
    scores = {entry["name"]: entry["score"] for entry in results["tests"]}
    assert_the_break_keeps_what_was_decided(scores, "gradescope")
    for entry in results["tests"]:  # nothing the job wrote, even in the details shown after the due date
        assert not PRINTED.search(entry["output"]), entry
        if entry["name"] in {test.id for test in UNIT.rubric.TESTS if test.task in BROKEN} and entry["score"] == 0:
            assert "wrote on the grader's private pipe" in entry["output"] or "Not timed" in entry["output"], entry


@pytest.fixture(scope="module")
def prairielearn_results(tmp_path_factory):
    """{attacker: PrairieLearn's results.json}, each from prairielearn.run, what run_prairielearn runs."""
    return _graded_on(tmp_path_factory, "prairielearn", "student", prairielearn.run, tests_folder=True)


def test_prairielearn_shows_no_forged_line_and_no_hidden_value(prairielearn_results):
    results = prairielearn_results["forger"]  # hole 1
    assert results["gradable"] is True
    assert_nothing_hidden(results["message"], "message")
    for entry in results["tests"]:
        assert_no_forged_line(entry["message"], entry["name"])
        assert_nothing_hidden(entry["message"], entry["name"])


def test_prairielearn_keeps_the_verdicts_decided_before_a_protocol_break(prairielearn_results):
    results = prairielearn_results["breaker"]  # hole 2
    assert results["gradable"] is True
    assert_nothing_hidden(results["message"], "message")
    scores = {entry["name"]: entry["points"] for entry in results["tests"]}
    assert_the_break_keeps_what_was_decided(scores, "prairielearn")
    for entry in results["tests"]:
        assert_nothing_hidden(entry["message"], entry["name"])


# --- the command line's class run: table, summary, feedback pages ------------------------------------------------

@pytest.fixture(scope="module")
def class_run(tmp_path_factory, reference_text):
    base = tmp_path_factory.mktemp("voice-class")
    folder, out = base / "class", base / "out"
    folder.mkdir()
    for attacker in ATTACKERS:
        (folder / f"{attacker}.py").write_text(attack_file(attacker), encoding="utf-8")
    (folder / "honest.py").write_text(reference_text, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--unit", UNIT.name,
                          "--out", str(out), "--jobs", "2", "--without-gpu", "give"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**_environment(), "COLUMNS": "400"})
    assert run.returncode == 0, run.stderr
    return out, run


def _environment():
    import os

    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "AUTOGRADER_COURSE_SECRET")}


def test_the_class_summary_and_table_name_no_forged_mistake(class_run):
    out, run = class_run
    summary = (out / "summary.txt").read_text(encoding="utf-8")
    mistakes = summary.split("Most common diagnosed mistakes", 1)[1].split("\n\n", 1)[0]
    assert FORGED not in mistakes, mistakes  # hole 3
    row = next(line for line in run.stdout.splitlines() if line.startswith("forger"))
    assert f"shaw: {FORGED}" not in row and not re.search(r"\s\s\S+: " + re.escape(FORGED), row), row


def test_the_feedback_pages_diagnose_in_the_grader_s_words_only(class_run):
    out, _ = class_run
    for attacker, kind in ((attacker, kind) for attacker in ATTACKERS for kind in ("html", "md")):
        place = next(path for path in (out / "feedback").iterdir() if path.name.startswith(attacker))
        page = (place / f"{UNIT.name}.{kind}").read_text(encoding="utf-8")
        text = re.sub(r"<[^>]+>", "", page) if kind == "html" else page
        import html as _html

        text = _html.unescape(text)
        assert_no_forged_line(text, kind)  # hole 1, after release too
        assert not PRINTED.search(text), kind  # hole 2: nothing the job wrote after the break
        looks = text.split("What to look at")[1:]
        assert not any(FORGED in part.split("The grader's message")[0] for part in looks), kind


def test_the_class_run_keeps_the_verdicts_decided_before_a_protocol_break(class_run):
    out, _ = class_run
    with open(out / "grades.csv", encoding="utf-8") as handle:
        row = next(row for row in csv.DictReader(handle) if row["submission"] == "breaker")
    assert_the_break_keeps_what_was_decided({test.id: float(row[test.id]) for test in UNIT.rubric.TESTS}, "csv")


# --- nbgrader: the real autograde and generate_feedback ---------------------------------------------------------

@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    if shutil.which("bwrap") is None:
        pytest.skip("the course's kernel runs under bubblewrap")
    from autograder.course.notebook import COURSE, notebook_name
    from autograder.course.release import release
    from nbgrader_class import autograde_class, shard_courses, submit_class

    notebook = notebook_name(UNIT)
    root = tmp_path_factory.mktemp("nbgrader-voice")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    release(UNIT, root / "dist", course=course)
    released = json.loads((course / "release" / UNIT.name / notebook).read_text())
    students = {}
    for attacker in ATTACKERS:
        students[attacker] = filled_notebook(released, UNIT.rubric.TASK_OF_FUNCTION, slips.finished(UNIT.name),
                                             cells=attack_cells(attacker))
    homes = submit_class(shard_courses(course, 2), UNIT.name, notebook, students)
    return autograde_class(homes, UNIT.name, notebook, ["--BoundedExecute.notebook_seconds=5"])


def _graded_cells(page):
    """The grade cells' part of nbgrader's feedback page, as its text: the kit's verdicts (TrustedGrades). The
    student's own cells keep what their code printed in the kernel's run, on the notebook's own inputs: their
    voice, in their cells' output areas, which no reader parses."""
    import html as _html

    text = _html.unescape(re.sub(r"<[^>]+>", "", page))
    return text, [re.split(r"\n\s*In\s*\[\s*\d*\s*\]:", part, maxsplit=1)[0] for part in text.split("Grade cell: ")[1:]]


def test_nbgrader_feedback_shows_no_forged_line(gradebook):
    _, graded = _graded_cells(gradebook.feedback("forger"))  # hole 1
    assert len(graded) == len(UNIT.rubric.TESTS), len(graded)
    for part in graded:
        assert_no_forged_line(part, "nbgrader feedback")
    assert gradebook.scores("forger")["shaw_values"] == 0


def test_nbgrader_keeps_the_verdicts_decided_before_a_protocol_break_and_quotes_nothing_after(gradebook):
    page, graded = _graded_cells(gradebook.feedback("breaker"))  # hole 2
    assert len(graded) == len(UNIT.rubric.TESTS), len(graded)
    assert not PRINTED.search(page)
    assert_the_break_keeps_what_was_decided(gradebook.scores("breaker"), "gradebook")
