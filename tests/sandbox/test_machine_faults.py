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
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.ways_in import batch
from autograder.sandbox.server import ForkServer, ServerFailed
from autograder.core.timing import ServeChild


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


# The timing tier runs two jobs of its own per path (the student's and a reference job kept for the whole
# run), so the same invariant is tested there: a fault of the grader's in the tier is retried, and what is
# left of a failed job (a reply that comes late) never reaches the grading of another path or submission.

def _timing(result):
    return {test.id: test for test in result.tests if test.task == "timing"}


def test_a_reference_job_with_a_late_reply_pending_costs_the_next_submission_nothing(grader, reference_file):
    grader.grade(reference_file)  # this thread's reference job is started and kept
    reference = grader.references.get()
    with pytest.raises(Exception):  # a call past its time: the job's reply is still on its way
        reference.request({"command": "sample", "indices": [0]}, timeout=1e-9)
    result = grader.grade(reference_file)
    assert not result.grader_fault
    assert {test.id: test.output for test in _timing(result).values() if not test.passed} == {}


def test_a_timing_job_the_machine_could_not_start_is_tried_again(grader, reference_file, monkeypatch):
    real, calls = ForkServer.spawn, []

    def timing_job_failing_once(self, request, *args, **kwargs):
        if request.get("mode") == "serve":
            calls.append(1)
            if len(calls) == 1:
                raise ServerFailed("fork: Resource temporarily unavailable")
        return real(self, request, *args, **kwargs)

    monkeypatch.setattr(ForkServer, "spawn", timing_job_failing_once)
    grader.references.close()  # so that this thread's reference job is started under the patch too
    result = grader.grade(reference_file)
    assert len(calls) >= 2 and not result.grader_fault
    assert {test.id: test.output for test in _timing(result).values() if not test.passed} == {}


def test_timing_jobs_the_machine_never_starts_are_the_grader_s_fault_and_leave_correctness_standing(
        grader, reference_file, monkeypatch):
    real = ForkServer.spawn

    def no_timing_job(self, request, *args, **kwargs):
        if request.get("mode") == "serve":
            raise ServerFailed("fork: Resource temporarily unavailable")
        return real(self, request, *args, **kwargs)

    monkeypatch.setattr(ForkServer, "spawn", no_timing_job)
    grader.references.close()
    result = grader.grade(reference_file)
    assert result.grader_fault
    assert all(test.passed for test in result.tests if test.task != "timing")
    for test in _timing(result).values():
        assert test.score == 0 and "through no fault of the submission" in test.output


# shaw_scores past the time of one call at the timing sizes only (the hidden cases are far smaller).
SLOW_AT_THE_TIMING_SIZES = """

import time as _time
_shaw_scores = shaw_scores


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    if q.shape[-2] >= 384:
        _time.sleep(3)
    return _shaw_scores(q, k, rel_k, max_relative_position, scale=scale)
"""


def test_a_call_past_its_time_in_one_path_costs_the_next_path_nothing(grader, tmp_path, reference_text,
                                                                      monkeypatch):
    from autograder.sandbox import limits

    monkeypatch.setattr(limits, "TIMING_CALL_SECONDS", 1.0)  # the call's reply comes 2 s after it is given up
    # The count set aside: the path is slow at the timing sizes only, so its steps change with the length (the count
    # refuses that first); what is tested here is a call past its time.
    from autograder.core import timing as tier

    monkeypatch.setattr(tier, "count_loops", lambda *args, **kwargs: None)
    path = tmp_path / "slow_shaw.py"
    path.write_text(reference_text + SLOW_AT_THE_TIMING_SIZES)
    result = grader.grade(path)
    timing = _timing(result)
    assert timing["shaw_speed"].score == 0 and "one call took more than 1 s" in timing["shaw_speed"].output
    assert timing["t5_speed"].passed, timing["t5_speed"].output
    assert not result.grader_fault


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(min_value=1, max_value=60), fault=st.sampled_from(["late reply", "killed"]))
def test_one_fault_of_the_reference_job_anywhere_in_the_tier_costs_the_student_nothing(
        grader, reference_file, monkeypatch, at, fault):
    """The reference job fails once, at its ``at``-th request of the tier (its reply comes too late, or its
    process is killed): the path is timed again with fresh jobs, and the reference, graded as the student,
    keeps every point of the tier with no fault on its row."""
    real, seen = ServeChild.request, []

    def failing_once(self, command, timeout):
        if self.reference:
            seen.append(command["command"])
            if len(seen) == at:
                if fault == "killed":
                    os.kill(self.worker_pid, signal.SIGKILL)
                else:
                    timeout = 1e-9
        return real(self, command, timeout)

    grader.references.close()
    monkeypatch.setattr(ServeChild, "request", failing_once)
    result = grader.grade(reference_file)
    monkeypatch.undo()
    assert not result.grader_fault
    assert {test.id: test.output for test in _timing(result).values() if not test.passed} == {}
