"""The timing tier of one submission has a budget: a job that pauses in every step cannot hold the machine.

The tier holds the machine alone while it times a submission, so its length is every other student's wait. The
student's job may spend TIMING_TIER_SECONDS plus TIMING_TIER_FACTOR times what the reference's job spent on the same
commands; past that the tier's points still to come are lost, with a message, and the grader moves on. These run
the real tier (two jobs, the grader's clock), with a budget made small so that a pause of a second shows.
"""

import re
import time

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core.grade import Grader
from autograder.sandbox import limits
from conftest import UNIT

# At import, the submission wraps the torch method that the grader's job makes the timing inputs with (each
# input tensor goes through Tensor.to: the pool at setup, and each call's inputs in the call): every input draw then
# pauses. Before the inputs were made in the timed call, those pauses fell outside it and kept full points; now
# they are timed too, and the budget still bounds how long the whole tier holds the machine (only tensors the size
# of the timing inputs pause, and only in the timing job, whose steps run in threads of their own: a correctness job
# runs its cases in its main thread).
PAUSE_IN_THE_INPUT_DRAW = """

import threading as _threading
import time as _time
import torch as _torch
_to = _torch.Tensor.to


def _slow_to(self, *args, **kwargs):
    if self.numel() >= 2 ** 14 and _threading.current_thread() is not _threading.main_thread():
        _time.sleep({seconds})
    return _to(self, *args, **kwargs)


_torch.Tensor.to = _slow_to
"""
PAUSE_AT_IMPORT = """

import time as _time
_time.sleep({seconds})
"""
SPENT = re.compile(r"its job spent ([0-9.]+) s of the ([0-9.]+) s allowed")


@pytest.fixture(scope="module")
def grader():
    grader = Grader(UNIT, sandbox="auto")
    yield grader
    grader.close()


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(limits, "TIMING_TIER_SECONDS", 6.0)
    monkeypatch.setattr(limits, "TIMING_TIER_FACTOR", 4.0)


def _timing(result):
    return {test.id: test for test in result.tests if test.task == "timing"}


def _grade(grader, tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    started = time.monotonic()
    result = grader.grade(path)
    return result, time.monotonic() - started


def test_a_job_that_pauses_in_every_input_draw_loses_the_tier_and_the_grader_moves_on(grader, tmp_path,
                                                                                     reference_text, small_budget):
    honest, honest_seconds = _grade(grader, tmp_path, "honest", reference_text)
    assert all(test.score == test.max_score for test in _timing(honest).values()), \
        [test.output for test in _timing(honest).values()]
    paused, paused_seconds = _grade(grader, tmp_path, "paused", reference_text
                                    + PAUSE_IN_THE_INPUT_DRAW.format(seconds=1.0))
    assert paused.score == honest.score - sum(test.max_score for test in _timing(paused).values())
    for test in _timing(paused).values():
        assert test.score == 0, test.output
        assert "the timing tier's time for a submission ran out" in test.output, test.output
    # the budget: 6 s plus 4 times the reference's share, spent once for the whole tier, not once per path
    assert paused_seconds < honest_seconds + 6.0 + 4.0 * honest_seconds + 10.0


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=st.sampled_from(["input draw", "import"]), seconds=st.floats(0.3, 2.5))
def test_the_student_job_never_spends_more_than_its_budget(grader, tmp_path_factory, reference_text, where, seconds):
    pause = PAUSE_IN_THE_INPUT_DRAW if where == "input draw" else PAUSE_AT_IMPORT
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "TIMING_TIER_SECONDS", 4.0)
        patch.setattr(limits, "TIMING_TIER_FACTOR", 3.0)
        result, _ = _grade(grader, tmp_path_factory.mktemp("budget"), "pausing",
                           reference_text + pause.format(seconds=seconds))
    for test in _timing(result).values():
        told = SPENT.search(test.output)
        if told:  # over the budget: no points, and the job was stopped at the budget, not after it
            spent, allowed = map(float, told.groups())
            assert test.score == 0
            assert spent <= allowed + 0.5, test.output
        else:  # inside the budget: timed as any submission is
            assert "Time (" in test.output or "Not timed" in test.output, test.output
