"""The units that borrow the second unit's rotation (the third, long_context, and the fourth, vision_positions)
graded by every route, for real (issue 26, point 6; issue 39's "Done when"): `nbgrader autograde` with a real
kernel, the kit's command line, and Gradescope's and PrairieLearn's entry points (in process; the containers are
tested in test_platform_containers.py).

A small class per unit: the reference, the blank release and each sample mistake of the unit (samples.py, the
reference with one line changed). The reference scores full and the blank 0 by every route; each mistake loses
points in its own task only, is named in nbgrader's feedback and in the command line's, and the gradebook agrees
with the command line test for test. The released notebook holds the second unit's rotation as a plain cell
(BORROWS): whatever a student does to it, the grader runs the second unit's reference.
"""

import json
import shutil

import pytest

from autograder.core import units
from autograder.core.grade import Grader
from autograder.course.build import ROOT, make_stub, solution_regions
from autograder.course.notebook import COURSE, filled_notebook, notebook_name
from autograder.course.release import release
from autograder.ways_in import gradescope, prairielearn
from autograder.ways_in.demo import apply, mistakes_of
from nbgrader_class import autograde_class, shard_courses, submit_class, submitted

BORROWERS = [unit for unit in units.all_units() if "rotary_alibi" in getattr(unit.rubric, "BORROWS", {})]
MISTAKES = [(unit, mistake) for unit in BORROWERS for mistake in mistakes_of(unit)]

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the course's kernel runs under bubblewrap")




def _filled(unit, released, text):
    """The release with each solution cell holding its function from ``text`` (a whole finished file)."""
    return filled_notebook(released, unit.rubric.TASK_OF_FUNCTION, text)


def _spoiled_given_cell(unit, released):
    """The finished notebook with the given cell of the second unit's rotation turned clockwise: the grader runs
    the second unit's reference all the same."""
    notebook = _filled(unit, released, unit.finished_reference)
    given = [cell for cell in notebook["cells"] if cell["cell_type"] == "code" and "def apply_rotary(" in
             "".join(cell["source"])]
    assert len(given) == 1
    source = "".join(given[0]["source"])
    given[0]["source"] = source.replace("def apply_rotary(", "def _apply_rotary_given(") + (
        "\n\n\ndef apply_rotary(x, positions, base=10000.0, *, interleaved=True):\n"
        "    return _apply_rotary_given(x, -positions, base, interleaved=interleaved)  # clockwise\n")
    return notebook


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """{unit name: (gradebook, the command line's results, the released folder, the students' notebooks)}, each
    unit's class graded once, on first use."""
    made = {}

    def graded(unit):
        if unit.name not in made:
            made[unit.name] = _graded(unit, tmp_path_factory.mktemp(f"nbgrader-{unit.name}"))
        return made[unit.name]

    return graded


def _graded(unit, root):
    assignment, notebook_file = unit.name, notebook_name(unit)
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    folder, _ = release(unit, root / "dist", course=course)
    released = json.loads((course / "release" / assignment / notebook_file).read_text())
    finished = unit.finished_reference  # the reference as a student's finished file reads (the given code in it)
    students = {"reference": _filled(unit, released, finished), "blank": released,
                "given_cell_spoiled": _spoiled_given_cell(unit, released)}
    for mistake in mistakes_of(unit):
        students[mistake.name] = _filled(unit, released, apply(mistake, finished))
    homes = submit_class(shard_courses(course, 2), assignment, notebook_file, students)
    book = autograde_class(homes, assignment, notebook_file)
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        cli = {result.name: result for result in grader.grade_many(submitted(homes), jobs=2)}
    finally:
        grader.close()
    return book, cli, folder, students


@pytest.mark.parametrize("unit", BORROWERS, ids=lambda unit: unit.name)
def test_the_release_gives_the_second_units_rotation_and_no_answer_of_this_unit(classes, unit):
    _, _, folder, _ = classes(unit)
    text = (folder / notebook_name(unit)).read_text()
    assert "def apply_rotary(" in text  # the borrowed code, given finished
    reference = unit.reference_path.read_text(encoding="utf-8")
    source = reference.splitlines()
    # The answers' longer lines, but those the lesson shows or the stubs keep on purpose (a line of a worked
    # example in a markdown cell, a docstring's formula).
    shown = (ROOT / "autograder" / "units" / unit.name / "lesson.py").read_text(encoding="utf-8") + make_stub(
        reference, unit)
    answers = [line.strip() for begin, end in solution_regions(reference) for line in source[begin + 1:end]
               if len(line.strip()) > 40 and line.strip() not in shown]
    assert len(answers) > 20 and not [line for line in answers if line in text]


@pytest.mark.parametrize("unit", BORROWERS, ids=lambda unit: unit.name)
def test_the_reference_scores_full_and_the_blank_release_zero_in_nbgrader_and_on_the_command_line(classes, unit):
    book, cli, _, _ = classes(unit)
    assert sum(book.scores("reference").values()) == unit.rubric.MAX_SCORE
    assert sum(book.scores("blank").values()) == 0
    assert cli["reference"].score == unit.rubric.MAX_SCORE and cli["blank"].score == 0


@pytest.mark.parametrize("unit", BORROWERS, ids=lambda unit: unit.name)
def test_a_spoiled_given_cell_changes_nothing(classes, unit):
    book, cli, _, _ = classes(unit)
    assert sum(book.scores("given_cell_spoiled").values()) == unit.rubric.MAX_SCORE
    assert cli["given_cell_spoiled"].score == unit.rubric.MAX_SCORE


@pytest.mark.parametrize("unit", BORROWERS, ids=lambda unit: unit.name)
def test_the_gradebook_agrees_with_the_command_line_test_for_test(classes, unit):
    book, cli, _, students = classes(unit)
    for student in students:
        assert not book.disagreements(student, cli[student]), (student, book.disagreements(student, cli[student]))


@pytest.mark.parametrize("unit, mistake", MISTAKES, ids=[f"{unit.name}:{mistake.name}" for unit, mistake in MISTAKES])
def test_each_mistake_costs_its_own_task_and_is_named_by_both_routes(classes, unit, mistake):
    book, cli, _, _ = classes(unit)
    name = mistake.name
    lost = {test for test, score in book.scores(name).items() if score < unit.rubric.TEST_BY_ID[test].points}
    assert lost and {unit.rubric.TEST_BY_ID[test].task for test in lost} - {"timing"} == {mistake.task}, lost
    assert mistake.says in book.feedback(name), (name, mistake.says)
    said = "\n".join(test.output for test in cli[name].tests if test.task == mistake.task)
    assert mistake.says in said, said


@pytest.mark.parametrize("unit", BORROWERS, ids=lambda unit: unit.name)
@pytest.mark.parametrize("finished", [True, False], ids=["reference", "blank"])
def test_gradescope_and_prairielearn_grade_a_borrowing_unit(tmp_path, monkeypatch, unit, finished):
    text = unit.finished_reference if finished else make_stub(unit.reference_path.read_text(encoding="utf-8"), unit)
    score = unit.rubric.MAX_SCORE if finished else 0
    monkeypatch.setenv(gradescope.UNIT_VARIABLE, unit.name)
    (tmp_path / "gs" / "submission").mkdir(parents=True)
    (tmp_path / "gs" / "submission" / unit.file_names[0]).write_text(text)
    assert gradescope.run(tmp_path / "gs") == 0
    results = json.loads((tmp_path / "gs" / "results" / "results.json").read_text())
    assert results["score"] == score, results["output"]  # without a GPU the path is timed on the CPU (limits.py)
    (tmp_path / "pl" / "student").mkdir(parents=True)
    (tmp_path / "pl" / "student" / unit.file_names[0]).write_text(text)
    (tmp_path / "pl" / "tests").mkdir()
    (tmp_path / "pl" / "tests" / "unit").write_text(unit.name)
    assert prairielearn.run(tmp_path / "pl") == 0
    answer = json.loads((tmp_path / "pl" / "results" / "results.json").read_text())
    assert answer["gradable"] is True
    assert answer["score"] == pytest.approx(results["score"] / unit.rubric.MAX_SCORE)
