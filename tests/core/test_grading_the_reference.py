"""The reference earns every point, the blank stubs none, and every graded test has a row."""

import pytest

from autograder.units.positional_encodings import rubric
from conftest import notebook


def test_rubric_totals_100_points_over_the_seven_tasks_and_the_timing_tier():
    assert rubric.MAX_SCORE == 100
    assert {test.task for test in rubric.TESTS} == set(rubric.TASK_NAMES) | {"timing"}
    assert len(rubric.TASK_NAMES) == 7
    assert rubric.task_points("timing") == 15
    assert {path.test for path in rubric.TIMED_PATHS} == {test.id for test in rubric.tests_of("timing")}


def test_reference_scores_100(grader, tmp_path, reference_text):
    path = tmp_path / "reference.py"
    path.write_text(reference_text)
    result = grader.grade(path)
    failed = {test.id: test.output for test in result.tests if not test.passed}
    assert failed == {}
    assert (result.score, result.max_score) == (100, 100)


def test_blank_stubs_score_0_with_a_not_implemented_message_for_each_task(grader, tmp_path, stub_text):
    path = tmp_path / "blank.py"
    path.write_text(stub_text)
    result = grader.grade(path)
    assert result.score == 0
    assert len(result.tests) == len(rubric.TESTS)
    for test in result.tests:
        if test.task == "timing":
            assert test.output.startswith("Not timed: every correctness test of this path must pass first")
        else:
            assert "not implemented" in test.output, (test.id, test.output)


def test_reference_as_a_notebook_scores_100_with_magics_shell_lines_and_failing_test_cells(grader, tmp_path, reference_text):
    # Split the module at each top-level def/class: one cell each, as a student's notebook would be.
    parts, current = [], []
    for line in reference_text.splitlines():
        if line.startswith(("def ", "class ")) and current:
            parts.append("\n".join(current))
            current = []
        current.append(line)
    parts.append("\n".join(current))
    cells = ["%matplotlib inline\n!pip list | head -1\nimport torch"] + parts + [
        "x = !ls\nsinusoidal_table?",
        "%%bash\necho this cell is shell, not Python",
        "assert False, 'an nbgrader test cell: the grader skips it'",
        "raise RuntimeError('a student cell that fails: the rest still counts')",
    ]
    test_cell = len(cells) - 2
    meta = {test_cell: {"nbgrader": {"grade": True, "solution": False, "grade_id": "t", "points": 1}}}
    path = tmp_path / "reference.ipynb"
    path.write_text(notebook(cells, meta))
    result = grader.grade(path)
    assert result.score == 100, {t.id: t.output for t in result.tests if not t.passed}
    notes = "\n".join(result.notes)
    assert "RuntimeError" in notes and "%%bash" in notes


def test_a_student_folder_is_graded_by_its_positional_encodings_file(grader, tmp_path, reference_text):
    folder = tmp_path / "ada"
    folder.mkdir()
    (folder / "positional_encodings.py").write_text(reference_text)
    (folder / "scratch.py").write_text("raise SystemExit('not the submission')")
    result = grader.grade(folder)
    assert result.name == "ada" and result.score == 100


@pytest.mark.parametrize("test_id", [test.id for test in rubric.TESTS if test.task in rubric.TASK_NAMES])
def test_every_correctness_test_has_hidden_cases(grader, test_id):
    cases = [case for cases in grader.cases.values() for case in cases if case.test == test_id]
    assert cases, f"{test_id} has no hidden case"
    assert all("expected" not in case.probe for case in cases)
