"""The third unit graded by every route, for real (issue 26, point 6 and its "Done when"): `nbgrader autograde`
with a real kernel, the kit's command line, and Gradescope's and PrairieLearn's entry points (in process; the
containers are tested once for every unit in test_platform_containers.py).

A small class: the reference, the blank release and each sample mistake of the unit (samples.py, the reference
with one line changed). The reference scores full and the blank 0 by every route; each mistake loses points in
its own task only, is named in nbgrader's feedback and in the command line's, and the gradebook agrees with the
command line test for test. The released notebook holds the second unit's rotation as a plain cell (BORROWS):
whatever a student does to it, the grader runs the second unit's reference.
"""

import json
import shutil

import pytest

from autograder.core import units
from autograder.core.grade import Grader
from autograder.course.notebook import COURSE, filled_notebook, notebook_name
from autograder.course.release import release
from autograder.ways_in import gradescope, prairielearn
from autograder.ways_in.demo import apply, mistakes_of
from nbgrader_class import autograde_class, shard_courses, submit_class, submitted

UNIT = units.get("long_context")
ASSIGNMENT, NOTEBOOK = UNIT.name, notebook_name(UNIT)
MISTAKES = {mistake.name: mistake for mistake in mistakes_of(UNIT)}
FINISHED = UNIT.finished_reference  # the reference as a student's finished file reads (the given code written in)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the course's kernel runs under bubblewrap")




def _filled(released, text):
    """The release with each solution cell holding its function from ``text`` (a whole finished file)."""
    return filled_notebook(released, UNIT.rubric.TASK_OF_FUNCTION, text)


def _spoiled_given_cell(released):
    """The finished notebook with the given cell of the second unit's rotation turned clockwise: the grader runs
    the second unit's reference all the same."""
    notebook = _filled(released, FINISHED)
    given = [cell for cell in notebook["cells"] if cell["cell_type"] == "code" and "def apply_rotary(" in
             "".join(cell["source"])]
    assert len(given) == 1
    source = "".join(given[0]["source"])
    given[0]["source"] = source.replace("def apply_rotary(", "def _apply_rotary_given(") + (
        "\n\n\ndef apply_rotary(x, positions, base=10000.0, *, interleaved=True):\n"
        "    return _apply_rotary_given(x, -positions, base, interleaved=interleaved)  # clockwise\n")
    return notebook


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader-third")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    folder, _ = release(UNIT, root / "dist", course=course)
    released = json.loads((course / "release" / ASSIGNMENT / NOTEBOOK).read_text())
    students = {"reference": _filled(released, FINISHED), "blank": released,
                "given_cell_spoiled": _spoiled_given_cell(released)}
    for name, mistake in MISTAKES.items():
        students[name] = _filled(released, apply(mistake, FINISHED))
    homes = submit_class(shard_courses(course, 2), ASSIGNMENT, NOTEBOOK, students)
    book = autograde_class(homes, ASSIGNMENT, NOTEBOOK)
    grader = Grader(UNIT, sandbox="auto", timing_mode="give")
    try:
        cli = {result.name: result for result in grader.grade_many(submitted(homes), jobs=2)}
    finally:
        grader.close()
    return book, cli, folder, students


def test_the_release_gives_the_second_units_rotation_and_no_answer_of_this_unit(graded):
    _, _, folder, _ = graded
    text = (folder / NOTEBOOK).read_text()
    assert "def apply_rotary(" in text  # the borrowed code, given finished
    for line in ("scaled_base = base * factor ** (head_dim / (head_dim - 2))",
                 "grown = max(1.0, factor * length / trained_length - (factor - 1))"):
        assert line in UNIT.reference_path.read_text(encoding="utf-8")  # the line looked for is the reference's
        assert line not in text


def test_the_reference_scores_full_and_the_blank_release_zero_in_nbgrader_and_on_the_command_line(graded):
    book, cli, _, _ = graded
    assert sum(book.scores("reference").values()) == UNIT.rubric.MAX_SCORE
    assert sum(book.scores("blank").values()) == 0
    assert cli["reference"].score == UNIT.rubric.MAX_SCORE and cli["blank"].score == 0


def test_a_spoiled_given_cell_changes_nothing(graded):
    book, cli, _, _ = graded
    assert sum(book.scores("given_cell_spoiled").values()) == UNIT.rubric.MAX_SCORE
    assert cli["given_cell_spoiled"].score == UNIT.rubric.MAX_SCORE


def test_the_gradebook_agrees_with_the_command_line_test_for_test(graded):
    book, cli, _, students = graded
    for student in students:
        scores = book.scores(student)
        for test in cli[student].tests:
            if test.task == "timing":
                continue  # timed in nbgrader's own run, against its own clock: a ratio, not the same number
            assert scores[test.id] == pytest.approx(test.score), (student, test.id, test.output)


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_each_mistake_costs_its_own_task_and_is_named_by_both_routes(graded, name):
    book, cli, _, _ = graded
    mistake = MISTAKES[name]
    lost = {test for test, score in book.scores(name).items() if score < UNIT.rubric.TEST_BY_ID[test].points}
    assert lost and {UNIT.rubric.TEST_BY_ID[test].task for test in lost} - {"timing"} == {mistake.task}, lost
    assert mistake.says in book.feedback(name), (name, mistake.says)
    said = "\n".join(test.output for test in cli[name].tests if test.task == mistake.task)
    assert mistake.says in said, said


@pytest.mark.parametrize("text, score", [(FINISHED, UNIT.rubric.MAX_SCORE), (None, 0)])
def test_gradescope_and_prairielearn_grade_the_third_unit(tmp_path, monkeypatch, text, score):
    from autograder.course.build import make_stub

    text = text if text is not None else make_stub(UNIT.reference_path.read_text(encoding="utf-8"), UNIT)
    monkeypatch.setenv(gradescope.UNIT_VARIABLE, UNIT.name)
    (tmp_path / "gs" / "submission").mkdir(parents=True)
    (tmp_path / "gs" / "submission" / UNIT.file_names[0]).write_text(text)
    assert gradescope.run(tmp_path / "gs") == 0
    results = json.loads((tmp_path / "gs" / "results" / "results.json").read_text())
    assert results["score"] == score, results["output"]  # without a GPU the path is timed on the CPU (limits.py)
    (tmp_path / "pl" / "student").mkdir(parents=True)
    (tmp_path / "pl" / "student" / UNIT.file_names[0]).write_text(text)
    (tmp_path / "pl" / "tests").mkdir()
    (tmp_path / "pl" / "tests" / "unit").write_text(UNIT.name)
    assert prairielearn.run(tmp_path / "pl") == 0
    answer = json.loads((tmp_path / "pl" / "results" / "results.json").read_text())
    assert answer["gradable"] is True
    assert answer["score"] == pytest.approx(results["score"] / UNIT.rubric.MAX_SCORE)
