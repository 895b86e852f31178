"""Hidden cases of one's own (issue 12): a seed per student from the course secret, recorded in the result.

The properties: the same student gets the same cases on a regrade, two students get different ones, the seed a
result records grades the file again exactly as before, and the secret reaches no job. Under any seed, every
correct formulation keeps its full marks and every one-mistake file of the sample class still loses its points.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import seeds
from autograder.units.positional_encodings import rubric
from autograder.core.cases import build_cases
from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES
from autograder.ways_in.gradescope import gradescope_identity
from autograder.core import grade
from autograder.core.grade import Grader
from autograder.ways_in.prairielearn import variant_identity
from conftest import UNIT

ROOT = Path(__file__).resolve().parents[2]
ALTERNATIVES = sorted((ROOT / "tests" / "submissions" / "alternatives").glob("*.py"))
SECRET = b"a course secret for the tests, 32+"

identities = st.text(min_size=1, max_size=40)


@given(identities, identities)
def test_a_student_s_seed_is_fixed_by_the_secret_and_the_identity_and_differs_between_students(one, other):
    assert seeds.student_seed(SECRET, one) == seeds.student_seed(SECRET, one)
    assert 0 <= seeds.student_seed(SECRET, one) < 2**31
    if one != other:  # a 31-bit hash: a collision here is a 1 in 2**31 chance, not a property
        assert seeds.student_seed(SECRET, one) != seeds.student_seed(SECRET, other)
    assert seeds.student_seed(SECRET, one) != seeds.student_seed(SECRET + b"!", one)


def _probe_tensors(cases):
    """Every input tensor the probes send, in the cases' order (call arguments, a module's x and weight)."""
    found = []
    for task in cases.values():
        for case in task:
            values = list(case.probe.get("args", [])) + [case.probe.get(key) for key in ("x", "weight", "grad_out")]
            # A meta tensor (the learned module's meta case) has no values to compare: its shape is fixed.
            found += [value for value in values if isinstance(value, torch.Tensor) and value.device.type != "meta"]
    return found


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
def test_the_same_seed_gives_the_same_cases_and_another_seed_other_inputs(seed, other):
    one, again = build_cases(UNIT, seed), build_cases(UNIT, seed)
    assert [case.id for task in one.values() for case in task] == [case.id for task in again.values() for case in task]
    assert all(torch.equal(a, b) for a, b in zip(_probe_tensors(one), _probe_tensors(again)))
    if seed != other:
        different = build_cases(UNIT, other)
        pairs = list(zip(_probe_tensors(one), _probe_tensors(different)))
        changed = [a for a, b in pairs if a.shape != b.shape or not torch.equal(a, b)]
        # The random inputs (the Shaw and score tensors, the bias tables, the scattered bucket positions) change.
        assert len(changed) >= len(pairs) // 2, f"{len(changed)} of {len(pairs)} input tensors changed"


def test_a_course_secret_is_refused_when_too_short_or_a_link(tmp_path):
    short = tmp_path / "short"
    short.write_text("abc\n")
    with pytest.raises(seeds.SecretProblem, match="at least"):
        seeds.read_secret_file(short)
    good = seeds.write_secret(tmp_path / "secret")
    assert stat.S_IMODE(good.stat().st_mode) == 0o600
    link = tmp_path / "link"
    link.symlink_to(good)
    with pytest.raises(seeds.SecretProblem):
        seeds.read_secret_file(link)
    with pytest.raises(FileExistsError):
        seeds.write_secret(good)
    assert seeds.course_secret(environ={}) is None
    assert seeds.course_secret(environ={seeds.SECRET_FILE_VARIABLE: str(good)}) == good.read_bytes().strip()


@pytest.fixture(scope="module")
def secret_grader():
    grader = Grader(UNIT, sandbox="auto", timing_mode="give", course_secret=SECRET)
    yield grader
    grader.close()


def _mistake_file(tmp_path, reference_text, name="sin_cos_swapped"):
    mistake = next(m for m in MISTAKES if m.name == name)
    path = tmp_path / "positional_encodings.py"
    path.write_text(apply(mistake, reference_text))
    return path


def test_two_students_see_different_hidden_inputs_and_a_regrade_sees_the_same(secret_grader, tmp_path,
                                                                               reference_text):
    path = _mistake_file(tmp_path, reference_text, "scaled_bias")  # a wrong score: its feedback quotes values
    alice = secret_grader.grade(path, student="alice")
    bob = secret_grader.grade(path, student="bob")
    again = secret_grader.grade(path, student="alice")
    assert alice.seed == seeds.student_seed(SECRET, "alice") and bob.seed == seeds.student_seed(SECRET, "bob")
    assert "this student's own" in alice.cases_from and str(alice.seed) in alice.cases_from
    outputs = lambda result: [test.output for test in result.tests if test.task != "timing"]
    assert outputs(alice) == outputs(again)
    assert outputs(alice) != outputs(bob), "the feedback quotes the same hidden values to two students"
    assert alice.score == bob.score  # the same mistake costs the same points, whatever the inputs


def test_a_class_graded_at_once_gets_each_student_s_own_cases_as_if_graded_alone(secret_grader, tmp_path,
                                                                                  reference_text):
    """grade_many builds the next students' cases while the jobs run (grade.CASES_AHEAD ahead): each student is
    graded on their own seed all the same, with the feedback a grader of their own gives them alone."""
    names = [f"student{number}" for number in range(grade.CASES_AHEAD + 4)]
    folders = []
    for name in names:
        (tmp_path / name).mkdir()
        _mistake_file(tmp_path / name, reference_text, "scaled_bias")  # its feedback quotes hidden values
        folders.append(tmp_path / name)
    together = secret_grader.grade_many(folders, jobs=2)
    alone = Grader(UNIT, sandbox="auto", timing_mode="give", course_secret=SECRET)  # no case built ahead there
    try:
        for name, folder, result in zip(names, folders, together):
            assert result.seed == seeds.student_seed(SECRET, name), name
            by_itself = alone.grade(folder)
            assert [test.output for test in result.tests] == [test.output for test in by_itself.tests], name
    finally:
        alone.close()
    quoted = {tuple(test.output for test in result.tests if test.task != "timing") for result in together}
    assert len(quoted) == len(names), "two students were quoted the same hidden values"


def test_the_seed_a_result_records_grades_the_file_again_the_same_way(secret_grader, tmp_path, reference_text):
    path = _mistake_file(tmp_path, reference_text, "scaled_bias")
    first = secret_grader.grade(path, student="carol")
    plain = Grader(UNIT, sandbox="auto", timing_mode="give")  # no secret at all: only the recorded seed
    try:
        again = plain.grade(path, seed=first.seed)
        shared = plain.grade(path)
    finally:
        plain.close()
    assert [t.output for t in again.tests] == [t.output for t in first.tests]
    assert shared.seed == rubric.SEED and "the shared seed" in shared.cases_from


@pytest.mark.parametrize("seed", [987654321])
def test_under_any_seed_correct_formulations_keep_full_marks_and_mistakes_still_cost(tmp_path, reference_text, seed):
    grader = Grader(UNIT, sandbox="auto", timing_mode="give")
    try:
        for path in ALTERNATIVES:
            task = path.name.split("__")[0]
            text = reference_text + "\n\n# --- the alternative ---\n" + path.read_text()
            submission = tmp_path / path.name
            submission.write_text(text)
            result = grader.grade(submission, seed=seed)
            assert result.task_score(task) == rubric.task_points(task), (path.name, seed, [
                t.output for t in result.tests if t.task == task and not t.passed])
        for mistake in MISTAKES:
            submission = tmp_path / f"{mistake.name}.py"
            submission.write_text(apply(mistake, reference_text))
            result = grader.grade(submission, seed=seed)
            assert result.score < rubric.MAX_SCORE, (mistake.name, seed)
    finally:
        grader.close()


def test_the_course_secret_reaches_no_job(tmp_path, reference_text):
    """A submission that looks for the secret in its environment and in the file the grader read gets full marks
    only if it finds nothing: the sinusoidal table is right only while the secret is out of its reach."""
    secret_file = seeds.write_secret(tmp_path / "course_secret")
    probe = reference_text + f"""

_right_table = sinusoidal_table


def _secret_found():
    import os
    if any("COURSE_SECRET" in name for name in os.environ):
        return True
    try:
        with open({str(secret_file)!r}) as file:
            return bool(file.read())
    except OSError:
        return False


def sinusoidal_table(*args, **kwargs):
    table = _right_table(*args, **kwargs)
    return table + 1 if _secret_found() else table
"""
    submission = tmp_path / "looks_for_the_secret.py"
    submission.write_text(probe)
    environment = {**os.environ, seeds.SECRET_FILE_VARIABLE: str(secret_file),
                   seeds.SECRET_VARIABLE: "also-in-the-environment-0123456789"}
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submission), "--json", "--without-gpu",
                          "give"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    sinusoidal = [test for test in result["tests"] if test["number"] == "sinusoidal"]
    assert all(test["status"] == "passed" for test in sinusoidal), sinusoidal
    assert "drawn for you alone" in result["output"]  # the secret gave this student cases of their own


@given(st.lists(st.fixed_dictionaries({"id": st.integers(1, 10**9), "email": st.emails()}), min_size=1, max_size=4))
def test_gradescope_s_identity_is_the_group_s_user_ids_in_any_order(users):
    folder = Path(os.environ.get("TMPDIR", "/tmp"))
    metadata = folder / f"metadata-{os.getpid()}.json"
    metadata.write_text(json.dumps({"users": users}))
    shuffled = folder / f"metadata-{os.getpid()}-reversed.json"
    shuffled.write_text(json.dumps({"users": list(reversed(users))}))
    try:
        identity = gradescope_identity(metadata)
        assert identity == gradescope_identity(shuffled)
        assert all(str(user["id"]) in identity for user in users)
    finally:
        metadata.unlink()
        shuffled.unlink()


def test_platform_identities_read_nothing_they_cannot_trust(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert gradescope_identity(broken) is None and gradescope_identity(tmp_path / "absent.json") is None
    assert variant_identity(broken) is None
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"variant_seed": 123456, "params": {}}))
    assert variant_identity(data) == "prairielearn-variant:123456"
    data.write_text(json.dumps({"params": {}}))
    assert variant_identity(data) is None


def test_the_command_line_makes_a_secret_and_grades_each_student_with_their_own_seed(tmp_path, reference_text):
    secret = tmp_path / "secret"
    made = subprocess.run([sys.executable, "-m", "autograder", "course-secret", str(secret)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0 and secret.is_file(), made.stderr
    again = subprocess.run([sys.executable, "-m", "autograder", "course-secret", str(secret)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "exists already" in again.stderr
    for name in ("dana", "eli"):
        (tmp_path / f"{name}.py").write_text(reference_text)
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "dana.py"),
                          str(tmp_path / "eli.py"), "--course-secret", str(secret), "--out", str(out),
                          "--without-gpu", "give"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    saved = {name: json.loads((out / f"{name}.json").read_text())["autograder"] for name in ("dana", "eli")}
    key = seeds.read_secret_file(secret)
    assert saved["dana"]["seed"] == seeds.student_seed(key, "dana")
    assert saved["eli"]["seed"] == seeds.student_seed(key, "eli")
    assert saved["dana"]["seed"] != saved["eli"]["seed"]


def test_a_course_secret_where_jobs_could_read_it_stops_the_grader(tmp_path):
    """In the bubblewrap tier the system's and the Python environment's folders are mounted into every job: a
    secret kept there is refused before any job runs, with the reason."""
    from autograder.sandbox.server import BUBBLEWRAP, SandboxMissing, bubblewrap_problem, visible_to_jobs

    inside = Path(sys.prefix) / "course_secret_for_a_test"
    assert visible_to_jobs([inside]) == [str(inside)]
    assert visible_to_jobs([tmp_path / "course_secret"]) == []
    if bubblewrap_problem():
        pytest.skip(f"bubblewrap cannot run here: {bubblewrap_problem()}")
    with pytest.raises(SandboxMissing, match="in every job's view"):
        Grader(UNIT, sandbox=BUBBLEWRAP, secrets=[inside])


def test_nbgrader_s_trusted_grades_draw_each_student_s_cases_from_the_course_secret(tmp_path, monkeypatch):
    """TrustedGrades (nbgrader autograde's step that decides the grade) grades with the course secret of its
    config and the student id nbgrader gives it, so the gradebook holds grades of each student's own cases."""
    import nbformat

    from autograder.ways_in import nbgrader_bridge

    secret_file = seeds.write_secret(tmp_path / "course_secret")
    seen = []

    class Recording(Grader):
        def grade(self, path, student=None, seed=None):
            result = super().grade(path, student=student, seed=seed)
            seen.append((student, result.seed))
            return result

    monkeypatch.setattr("autograder.core.grade.Grader", Recording)
    monkeypatch.setattr(nbgrader_bridge.TrustedGrades, "_graders", {})
    notebook = nbformat.read(ROOT / "assignments" / "source" / "positional_encodings" / "positional_encodings.ipynb",
                             as_version=4)
    step = nbgrader_bridge.TrustedGrades(course_secret_file=str(secret_file))
    try:
        step.preprocess(notebook, {"nbgrader": {"student": "fatima", "assignment": "positional_encodings",
                                                "notebook": "positional_encodings"}})
    finally:
        for grader in nbgrader_bridge.TrustedGrades._graders.values():
            grader.close()
    key = seeds.read_secret_file(secret_file)
    assert seen == [("nbgrader:fatima", seeds.student_seed(key, "nbgrader:fatima"))]


# What a student reads says whether the hidden cases are their own, never the seed (with the kit, a seed gives the
# cases themselves), the course secret, or how an instructor grades again; the instructor's record keeps all that.
_INSTRUCTOR_ONLY = ("--seed", "course secret", "docs/instructors.md", "autograder grade", "grades it again")


def _student_texts(result):
    """Every text of ``result`` a student is shown: Gradescope's and PrairieLearn's results, the feedback pages."""
    from autograder.course.feedback import html_page, markdown_page
    from autograder.ways_in import gradescope, prairielearn

    return {"gradescope": json.dumps(gradescope.to_results(result, graded_file="positional_encodings.py")),
            "gradescope (--json)": json.dumps(result.to_gradescope()),
            "prairielearn": json.dumps(prairielearn.to_results(result, graded_file="positional_encodings.py")),
            "feedback page": html_page(result), "feedback markdown": markdown_page(result)}


@pytest.mark.parametrize("student", ["alice", "bob 2", "s.o'neil"])
def test_what_a_student_reads_never_holds_the_seed_or_the_instructors_words(secret_grader, tmp_path,
                                                                             reference_text, student):
    path = _mistake_file(tmp_path, reference_text, "scaled_bias")
    own = secret_grader.grade(path, student=student)
    plain = Grader(UNIT, sandbox="auto", timing_mode="give")
    try:
        shared = plain.grade(path)
    finally:
        plain.close()
    for result, told in ((own, "drawn for you alone"), (shared, "the same for the whole class")):
        assert str(result.seed) in result.cases_from  # the instructor's record: the seed, to grade again
        for where, text in _student_texts(result).items():
            assert told in text, where
            assert str(result.seed) not in text, (where, result.seed)
            found = [word for word in _INSTRUCTOR_ONLY if word in text]
            assert not found, (where, found)


@given(secret=st.binary(min_size=16, max_size=40), identity=st.text(min_size=1, max_size=20))
def test_the_students_line_never_quotes_a_seed(secret, identity):
    seed = seeds.student_seed(secret, identity)
    line = seeds.for_student(UNIT, seed)
    assert str(seed) not in line and line.startswith("Hidden cases:")
    assert ("alone" in line) == (seed != rubric.SEED)
