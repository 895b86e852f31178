"""The timing tier's figures are the work's own (issue 23, points 1, 2 and 7).

1. No code of the submission runs untimed between a timed call's inputs and its reply: the job makes the call's
   inputs in the call's own window, so work hidden in what the input draw calls is timed.
2. The job's own answers cannot be rewritten by the submission: what the job's main thread calls to read a
   command, read an output and send a reply was taken before the submission ran, and the submission's code
   (its modes, hooks and threads) never runs in that thread. A submission that patches the modules the job
   uses, replaces builtins or leaves a torch mode active gets the figures of what it really computed.
7. The memory figure cannot be restarted by the job: its code cannot open /proc's clear_refs or exec; and without
   control groups the figure is watched from outside through the call, so a restart (through readline's
   history file, in a dumpable job) lowers nothing (issue 36, point 6).

Each attack here is a whole submission: the reference, plus code that makes the timed path fast and wrong
(zeros, at the timing sizes only, so that the correctness tests pass and the path is timed) and then tries to
make the job report the right entries anyway, computed untimed. Before this change, each of these kept the
tier's points (checked on the code before it: the json pair, the builtin float and the function mode forged
the sample; the pause in the input draw was untimed).
"""

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core.grade import Grader
from autograder.sandbox.server import JOB_USERS, SandboxMissing
from conftest import UNIT
from timing_attacks import (HOLDS_THEN_RESTARTS_THE_MARK, INDEX_TAPS, MODE_FORGER, RESTARTS_THE_HIGH_WATER_MARK,
                            SLOW_BUT_PRECOMPUTED, VALUE_FORGERS, WRONG_WHEN_TIMED)

def _shaw(result):
    return next(test for test in result.tests if test.id == "shaw_speed")


# Tier A (bubblewrap) always; tier C (a user per job, seccomp) where these run as root: the attacks are the same
# in the Gradescope and PrairieLearn containers, which grade in tier C with this same worker.
TIERS = ["auto"] + ([JOB_USERS] if os.geteuid() == 0 else [])


@pytest.fixture(scope="module", params=TIERS)
def grader(request):
    try:
        grader = Grader(UNIT, sandbox=request.param)
    except SandboxMissing as missing:  # tier C wants a Python environment every user can read
        pytest.skip(f"tier C cannot run here: {missing}")
    yield grader
    grader.close()


@pytest.fixture
def job_alone(monkeypatch):
    """The static loop check set aside (it finds nothing): the job's own defences are what is tested here, and
    the check, a separate line on the trusted side, refuses some of these attacks before any job runs."""
    from autograder.core import timing

    monkeypatch.setattr(timing, "static_check", lambda chunks, path, unit: [])


def _grade(grader, tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return grader.grade(path)


def test_the_reference_keeps_the_tier(grader, tmp_path, reference_text):
    test = _shaw(_grade(grader, tmp_path, "reference", reference_text))
    assert test.score == test.max_score, test.output


def test_work_hidden_in_the_input_draw_is_timed(grader, tmp_path, reference_text, job_alone):
    """Before: the slow path computed in the wrapped input draw kept full points (its work fell in `prepare`)."""
    test = _shaw(_grade(grader, tmp_path, "precomputed", reference_text + SLOW_BUT_PRECOMPUTED))
    assert test.score < test.max_score, test.output


@pytest.mark.parametrize("taps", [("json.loads", "json.dumps"), ("JSONDecoder.decode", "JSONEncoder.encode"),
                                  ("json.loads", "builtins.float")])
def test_patched_modules_and_builtins_do_not_forge_the_sample(grader, tmp_path, reference_text, taps, job_alone,
                                                              monkeypatch):
    from autograder.core import timing

    tap, forger = taps
    text = reference_text + WRONG_WHEN_TIMED + INDEX_TAPS[tap] + VALUE_FORGERS[forger]
    # The count set aside: it refuses this path first (its steps change at the timed sizes, where it returns zeros);
    # what is tested here is the next line, the sampled entries.
    monkeypatch.setattr(timing, "count_loops", lambda *args, **kwargs: None)
    test = _shaw(_grade(grader, tmp_path, "forged", text))
    assert test.score == 0, test.output
    assert "differs from the reference" in test.output, test.output


def test_a_torch_function_mode_does_not_forge_the_sample(grader, tmp_path, reference_text, job_alone):
    test = _shaw(_grade(grader, tmp_path, "moded", reference_text + WRONG_WHEN_TIMED + MODE_FORGER))
    assert test.score == 0, test.output


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(taps=st.lists(st.sampled_from(sorted(INDEX_TAPS)), min_size=1, max_size=2, unique=True),
       forgers=st.lists(st.sampled_from(sorted(VALUE_FORGERS)), min_size=1, max_size=3, unique=True),
       mode=st.booleans(), seed=st.integers(0, 2**16))
def test_no_combination_of_hooks_and_modes_forges_a_figure(grader, tmp_path_factory, reference_text, taps, forgers,
                                                          mode, seed):
    """Whatever the submission patches, in whatever order, with or without a mode: the zeros are what is read."""
    from autograder.core import timing

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timing, "static_check", lambda chunks, path, unit: [])
        _forge_once(grader, tmp_path_factory, reference_text, taps, forgers, mode, seed)


def _forge_once(grader, tmp_path_factory, reference_text, taps, forgers, mode, seed):
    parts = [INDEX_TAPS[name] for name in taps] + [VALUE_FORGERS[name] for name in forgers]
    random.Random(seed).shuffle(parts)
    text = reference_text + WRONG_WHEN_TIMED + "".join(parts) + (MODE_FORGER if mode else "")
    test = _shaw(_grade(grader, tmp_path_factory.mktemp("forge"), "forged", text))
    assert test.score == 0, test.output


HOOKED_PER_CALL = {  # what the job's input draw (worker.Draw) calls on every timed call
    "torch.Tensor.__mul__": True, "torch.Tensor.view": True, "torch.Tensor.to": True,
    "torch.Tensor.__getitem__": True,
    "torch.randn": False,  # the pool, drawn once at setup: not a call's inputs
}


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(target=st.sampled_from(sorted(HOOKED_PER_CALL)), milliseconds=st.integers(20, 60))
def test_time_spent_in_anything_the_input_draw_calls_is_the_calls(grader, tmp_path_factory, reference_text,
                                                                  target, milliseconds):
    from autograder.core import timing

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timing, "static_check", lambda chunks, path, unit: [])
        _pause_once(grader, tmp_path_factory, reference_text, target, milliseconds)


def _pause_once(grader, tmp_path_factory, reference_text, target, milliseconds):
    """A pause in any torch function the job's input draw calls is in the timed window: the honest path that
    pauses there loses full points (the reference's call takes about a millisecond here)."""
    owner, name = target.rsplit(".", 1)
    hook = f'''

import time as _time
import torch as _torch
_owner = {owner}
_original = getattr(_owner, "{name}")


def _paused(*args, **kwargs):
    value = _original(*args, **kwargs)
    if _torch.is_tensor(value) and value.numel() >= 2 ** 14:
        _time.sleep({milliseconds / 1000})
    return value


setattr(_owner, "{name}", _paused)
'''
    test = _shaw(_grade(grader, tmp_path_factory.mktemp("pause"), "paused", reference_text + hook))
    if HOOKED_PER_CALL[target]:
        assert test.score < test.max_score, (target, test.output)
    else:
        assert test.score == test.max_score, (target, test.output)


def test_the_job_cannot_restart_its_memory_high_water_mark(grader, tmp_path, reference_text, job_alone):
    """Opening clear_refs and exec are refused in a timing job: the path carries on, and keeps its points."""
    # The attempt runs at every call of the timing job, counted ones included, so the count stays the same.
    test = _shaw(_grade(grader, tmp_path, "restarts", reference_text + RESTARTS_THE_HIGH_WATER_MARK))
    assert test.score == test.max_score, test.output



@pytest.fixture(scope="module", params=TIERS)
def grader_without_groups(request):
    """A grader with no control group per job (as in tier B, and in tier C in a platform's container): the memory
    figure is then the runner's own high-water mark."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AUTOGRADER_CGROUP", "off")
        try:
            grader = Grader(UNIT, timing_mode="cpu", sandbox=request.param)
        except SandboxMissing as missing:
            pytest.skip(f"tier C cannot run here: {missing}")
    assert grader.groups is None
    yield grader
    grader.close()


def test_the_reference_keeps_the_tier_without_control_groups(grader_without_groups, tmp_path, reference_text):
    """The memory watch (timing.MemoryWatch) takes none of an honest path's points."""
    test = _shaw(_grade(grader_without_groups, tmp_path, "reference", reference_text))
    assert test.score == test.max_score, test.output


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow])
@given(copies=st.integers(40, 80))
def test_memory_held_before_the_mark_is_restarted_is_still_counted_without_control_groups(
        grader_without_groups, copies, tmp_path_factory, reference_text, job_alone):
    """Issue 36, point 6: where no control group measures the job, the memory figure was the runner's own
    high-water mark, which a dumpable job (bubblewrap without control groups) restarted through readline's history
    file, an open that no audit hook sees: holding 40 to 80 score-sized tensors per call then kept half the
    tier's points (0 MiB measured). The figure is now watched from outside through the call (timing.MemoryWatch):
    the path loses the tier in every tier, and in tier C, where the job cannot restart the mark at all, the figure
    still counts it."""
    path = tmp_path_factory.mktemp("mark") / "holds_then_restarts.py"
    path.write_text(reference_text + HOLDS_THEN_RESTARTS_THE_MARK.format(copies=copies))
    test = _shaw(grader_without_groups.grade(path))
    assert test.score == 0, test.output
    assert "Over it" in test.output, test.output
