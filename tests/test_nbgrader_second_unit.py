"""The second unit as an assignment of the same nbgrader course, for real: `nbgrader generate_assignment`,
`autograde`, `generate_feedback` and `export` on rotary_alibi, with a real kernel, and a gradebook that agrees
test for test with `python -m autograder grade --unit rotary_alibi` on the same notebooks.

A small class (the reference, the blank release, two typical mistakes, BLOOM's equivalent ALiBi form): the
first unit's course test (test_nbgrader_course.py) runs the red-team corpus and the traps of nbgrader itself;
this one shows that the same machinery serves a second unit unchanged.
"""

import json
import re
import shutil
from pathlib import Path

import pytest

from autograder import units
from autograder.build import strip_markers
from autograder.course import COURSE, function_source, notebook_name, release, run_nbgrader
from autograder.grade import Grader
from autograder.sandbox import Limits

UNIT = units.get("rotary_alibi")
ASSIGNMENT, NOTEBOOK = UNIT.name, notebook_name(UNIT)
SUBMISSIONS = Path(__file__).parent / "submissions" / "rotary_alibi"
# student name: the submission file whose one function replaces the reference's
CHANGED = {"clockwise": "mistakes/apply_rotary__clockwise.py", "slopes_of_every_n": "mistakes/alibi_slopes__power_of_two_rule_for_every_n.py",
           "bloom_form": "mistakes/alibi_bias__key_position_form.py"}

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the course's kernel runs under bubblewrap")


def _grade_id(cell):
    return ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")


def _filled(release_notebook, code_text, changed=""):
    """The release with each solution cell holding its function from ``code_text``, or from ``changed`` (a
    submission file of one function) for the function that one defines."""
    notebook = json.loads(json.dumps(release_notebook))
    for cell in notebook["cells"]:
        name = _grade_id(cell)
        if name in UNIT.rubric.TASK_OF_FUNCTION:
            cell["source"] = function_source(changed if f"def {name}(" in changed else code_text, name)
    return notebook


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader-second")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    folder, archive = release(UNIT, root / "dist", course=course)
    released = json.loads((course / "release" / ASSIGNMENT / NOTEBOOK).read_text())
    reference = strip_markers(UNIT.reference_path.read_text(encoding="utf-8"))
    students = {"reference": _filled(released, reference), "blank": released}
    for name, file in CHANGED.items():
        students[name] = _filled(released, reference, (SUBMISSIONS / file).read_text(encoding="utf-8"))
    for name, notebook in students.items():
        target = course / "submitted" / name / ASSIGNMENT
        target.mkdir(parents=True)
        (target / NOTEBOOK).write_text(json.dumps(notebook, indent=1))
    grader = Grader(UNIT, limits=Limits(wall_seconds=30, task_seconds=10), sandbox="auto", timing_mode="give")
    try:
        cli = {result.name: result for result in grader.grade_many([course / "submitted" / name for name in students],
                                                                  jobs=2)}
    finally:
        grader.close()
    run_nbgrader(["autograde", ASSIGNMENT, "--force", "--TrustedGrades.wall_seconds=30",
                  "--TrustedGrades.task_seconds=10"], course=course)
    run_nbgrader(["generate_feedback", ASSIGNMENT, "--force"], course=course)
    run_nbgrader(["export", "--to", str(course / "grades.csv")], course=course)
    return course, folder, students, cli


def _gradebook(course, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        return {grade.name: grade.score for grade in notebook.grades}


def test_the_release_of_the_second_unit_holds_its_notebook_its_checks_and_no_answer(course):
    _, folder, _, _ = course
    names = {path.name for path in folder.iterdir()}
    assert {NOTEBOOK, "checks.py", "capstone.py", "conftest.py", "pytest.ini", "test_rope_scores.py"} <= names
    reference = UNIT.reference_path.read_text(encoding="utf-8")
    for line in ("return (q_turned * scale) @ k_turned.transpose(-2, -1)  # (B, H, Lq, Lk)",
                 "closest = 1 << (num_heads.bit_length() - 1)  # the largest power of two <= num_heads"):
        assert line in reference  # the lines looked for are the reference's own
        assert line not in (folder / NOTEBOOK).read_text()


def test_the_gradebook_of_the_second_unit_agrees_with_the_command_line_test_for_test(course):
    path, _, students, cli = course
    for student in students:
        book = _gradebook(path, student)
        for test in cli[student].tests:
            if test.task == "timing":
                continue  # timed in nbgrader's own run, against its own clock: a ratio, not the same number
            assert book[test.id] == pytest.approx(test.score), (student, test.id, test.output)
    assert sum(_gradebook(path, "reference").values()) == UNIT.rubric.MAX_SCORE
    assert sum(_gradebook(path, "blank").values()) == 0


def test_the_mistakes_cost_their_own_task_and_bloom_s_form_is_accepted_where_it_is_equivalent(course):
    path, _, _, _ = course
    clockwise, slopes, bloom = (_gradebook(path, name) for name in ("clockwise", "slopes_of_every_n", "bloom_form"))
    lost = {test for test, score in clockwise.items() if score < UNIT.rubric.TEST_BY_ID[test].points}
    # charged in its own task only (and once: a later test that shows only the same mistake keeps its points)
    # (the RoPE path is timed only once apply_rotary is right: its timing points wait for that, by design)
    assert "apply_rotary_interleaved" in lost
    assert {UNIT.rubric.TEST_BY_ID[test].task for test in lost} - {"timing"} == {"apply_rotary"}
    assert slopes["alibi_slopes_other_counts"] == 0 and slopes["alibi_slopes_power_of_two"] == 5
    assert bloom["alibi_bias_causal"] == 6 and bloom["alibi_bias_bidirectional"] == 0
    feedback = (path / "feedback" / "bloom_form" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "BLOOM" in feedback and "Your results, test by test" in feedback
    assert len(re.findall(r'<math [^>]*xmlns="http://www.w3.org/1998/Math/MathML"', feedback)) > 10
