"""Invariant 6, its second half: a fault of the grading machine is never charged to the student graded then.

When the machine cannot start a job (out of processes or memory, a fork server that died), the grader
tries again; when it still cannot, the row says the grader failed, not the submission, and a resumed
class run grades that submission again. The faults are made for real where that is safe (the fork server
killed under the grader) and injected at the one place a job is started where it is not (running the
machine out of processes would harm everything else on it).
"""

import os
import signal

import pytest

from autograder import batch
from autograder.sandbox import ForkServer, ServerFailed


@pytest.fixture()
def reference_file(tmp_path, reference_text):
    path = tmp_path / "reference.py"
    path.write_text(reference_text)
    return path


def test_a_fork_server_killed_under_the_grader_costs_the_next_submission_nothing(grader, reference_file):
    os.kill(grader.server.process.pid, signal.SIGKILL)
    grader.server.process.wait()
    result = grader.grade(reference_file)
    assert not result.grader_fault
    assert {test.id: test.output for test in result.tests if not test.passed and test.task != "timing"} == {}


def test_a_job_the_machine_could_not_start_is_tried_again(grader, reference_file, monkeypatch):
    real, calls = ForkServer.spawn, []

    def spawn_failing_once(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ServerFailed("fork: Resource temporarily unavailable")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ForkServer, "spawn", spawn_failing_once)
    result = grader.grade(reference_file)
    assert len(calls) >= 2 and not result.grader_fault
    assert all(test.passed for test in result.tests if test.task != "timing")


def test_a_machine_that_cannot_start_jobs_is_the_grader_s_fault_and_is_graded_again_on_resume(
        grader, reference_file, tmp_path, monkeypatch):
    def never(self, *args, **kwargs):
        raise ServerFailed("fork: Resource temporarily unavailable")

    monkeypatch.setattr(ForkServer, "spawn", never)
    results, _ = batch.grade_class(grader, [reference_file], tmp_path / "out")
    [result] = results
    assert result.grader_fault and result.score == 0
    assert "through no fault of the submission" in result.tests[0].output
    monkeypatch.undo()
    results, resumed = batch.grade_class(grader, [reference_file], tmp_path / "out")
    assert resumed == 0  # not taken from the file: graded again
    assert not results[0].grader_fault and results[0].score > 0
