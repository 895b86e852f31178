"""The commands that grade put torch in their own process on one thread before their grader starts (issue 38):
the command line, the platforms' entry point and nbgrader's TrustedGrades. Each is run here in this process, with
torch set to two threads first; afterwards it has one. A Grader made in a program of one's own leaves that
program's threads alone.

Why: the grading process's own tensor work is small, and the CPUs are its jobs'. In Gradescope's default container
of half a CPU, torch's thread per CPU made the grader's start take 7.8 s against 6.5 s (benchmarks/RESULTS.md).
"""

import shutil

import nbformat
import pytest
import torch

from autograder.core.grade import GRADER_THREADS, Grader
from autograder.ways_in import cli, platform
from conftest import NOTEBOOK, SOURCE, UNIT
from nbgrader_class import trusted_grades


@pytest.fixture
def two_threads():
    """Torch on two threads for the test, put back as it was after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_the_command_line_grades_with_torch_on_one_thread(two_threads, tmp_path, capsys):
    path = tmp_path / "reference.py"
    shutil.copy(UNIT.reference_path, path)
    assert cli.main(["grade", str(path), "--unit", UNIT.name]) == 0
    assert torch.get_num_threads() == GRADER_THREADS == 1


def test_the_platforms_entry_point_grades_with_torch_on_one_thread(two_threads, tmp_path, capsys):
    upload = tmp_path / "submission"
    upload.mkdir()
    shutil.copy(UNIT.reference_path, upload / f"{UNIT.module_name}.py")
    result, *_ = platform.grade_upload(upload, UNIT)
    assert result.score == UNIT.rubric.MAX_SCORE
    assert torch.get_num_threads() == 1


def test_nbgrader_s_trusted_grades_grade_with_torch_on_one_thread(two_threads, monkeypatch):
    trusted_grades(nbformat.read(SOURCE / NOTEBOOK, as_version=4), UNIT, "threads", monkeypatch)
    assert torch.get_num_threads() == 1


def test_a_grader_made_in_a_program_of_one_s_own_leaves_its_threads_alone(two_threads):
    grader = Grader(UNIT)
    grader.close()
    assert torch.get_num_threads() == 2
