"""The count is made where the path is timed, and what it counts is checked (issue 36, point 2), end to end.

Each submission is the second unit's reference with its ``alibi_bias`` replaced: a correct version that runs a
Python loop over chunks of 8 rows (a loop over positions, 1.3 to 2x the reference's time on two cores, inside the
full-points band) on some calls only, and on the others the reference's own vectorized code, or zeros. Which calls
loop is the submission's choice, drawn here:

* after so many calls of the timing job (``after K calls``): before this issue's recounts, a path counted only in
  its first calls ran its loop, uncounted, in the calls timed;
* at the lengths of the timed calls only (``in the timed window``): the timed calls' lengths are drawn in the last
  eighth below the timing length, and before, the count ran at one of them (the timing length itself) and at a few
  drawn anywhere between 16 and 768;
* whenever the call is not being counted (``zeros when counted``, told by how much CPU time its own lines take under
  the counter's trace function): before, a counted call's output was never checked.

Each loses ``alibi_speed``, as the plain chunked loop does. A path that keeps a table per length (a cache, built
by tensor operations, the first call at each length) is no loop and keeps its points: each counted call is the first
at its length, the set-aside first call included.
"""

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.grade import Grader
from autograder.core.units import strip_markers

ROTARY = units.get("rotary_alibi")
TIMED = ROTARY.rubric.TIMING_SIZES["cpu"]["length"]
WINDOW = (TIMED - TIMED // 8, TIMED)  # timing.timed_range: the lengths of the calls timed on the CPU

# Rows of the bias in chunks of 8: the same numbers as the reference (torch's arithmetic on the same integers), one
# trip per chunk of queries.
CHUNKED = '''

import time as _time
import torch as _torch

_reference_alibi_bias = alibi_bias
_calls = [0]


def _rows(start, stop, length_k, slopes, causal):
    distance = (_torch.arange(start, stop, device=slopes.device)[:, None]
                - _torch.arange(length_k, device=slopes.device)[None, :])
    distance = distance.clamp(min=0) if causal else distance.abs()
    return -(slopes[:, None, None] * distance.to(slopes.dtype))


def _chunked(length_q, length_k, slopes, causal):
    parts = [_rows(start, min(start + 8, length_q), length_k, slopes, causal) for start in range(0, length_q, 8)]
    return _torch.cat(parts, dim=1).unsqueeze(0)


def _counted():
    # Under the count's trace function each line runs a Python callback: 5000 trips take about a millisecond of this
    # thread's CPU time, not a fifth of one (its CPU time: a wait for the CPU does not count).
    started = _time.thread_time()
    for _ in range(5000):
        pass
    return _time.thread_time() - started > 4.2e-4


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1 or slopes.is_meta or slopes.shape[0] == 0 or length_q == 0:
        return _reference_alibi_bias(length_q, length_k, slopes, causal=causal)
    _calls[0] += 1
    if LOOPS:
        return _chunked(length_q, length_k, slopes, causal)
    return OTHERWISE
'''

OTHERWISE = {
    "the reference": "_reference_alibi_bias(length_q, length_k, slopes, causal=causal)",
    "zeros": "slopes.new_zeros(1, slopes.shape[0], length_q, length_k)",
}

CACHED = '''

import functools as _functools
import torch as _torch


@_functools.lru_cache(maxsize=None)
def _distance(length_q, length_k, causal, device):
    distance = _torch.arange(length_q, device=device)[:, None] - _torch.arange(length_k, device=device)[None, :]
    return distance.clamp(min=0) if causal else distance.abs()


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one per head, of shape (H,)")
    return -(slopes[:, None, None] * _distance(length_q, length_k, causal, slopes.device).to(slopes.dtype)).unsqueeze(0)
'''


WAYS = ("after K calls", "in the timed window", "zeros when counted")


@st.composite
def cheats(draw, way):
    """(what, loops, otherwise): a correct chunked loop on the calls ``loops`` picks, ``otherwise`` on the others."""
    if way == "after K calls":
        # Fewer calls than any timing of the path makes (its counts alone are more than 20), more than the counts of
        # the code before this issue (9 to 12 calls): the loop runs in timed calls only.
        calls = draw(st.integers(12, 20))
        return f"{way} (K = {calls})", f"_calls[0] > {calls}", OTHERWISE["the reference"]
    if way == "in the timed window":
        low = draw(st.integers(WINDOW[0], WINDOW[0] + 7))  # 41 of the window's 49 lengths or more, the timing one not
        return f"{way} ({low} <= L < {WINDOW[1]})", f"{low} <= length_q < {WINDOW[1]}", OTHERWISE["the reference"]
    return way, "not _counted()", OTHERWISE["zeros"]


@pytest.fixture(scope="module")
def grader():
    grader = Grader(ROTARY, sandbox="auto", timing_mode="cpu")
    yield grader
    grader.close()


@pytest.fixture(scope="module")
def reference_text():
    return strip_markers(ROTARY.reference_path.read_text(encoding="utf-8"))


def _speed(grader, paths):
    """Each submission's alibi_speed result, once every correctness test of it passed (only the timing tells them
    apart)."""
    found = []
    for path, result in zip(paths, grader.grade_many(paths, jobs=2)):
        wrong = [(test.id, test.output) for test in result.tests if test.task != "timing" and not test.passed]
        assert not wrong, (path.name, wrong)
        found.append(next(test for test in result.tests if test.id == "alibi_speed"))
    return found


@settings(max_examples=1, deadline=None, database=None)
@given(st.tuples(*(cheats(way) for way in WAYS for _ in range(3))))
def test_a_loop_on_some_calls_only_loses_the_tier_as_the_plain_loop_does(grader, reference_text, tmp_path_factory,
                                                                           drawn):
    folder = tmp_path_factory.mktemp("cheats")
    paths = []
    for number, (_, loops, otherwise) in enumerate([("the plain loop", "True", "None"), *drawn]):
        path = folder / f"cheat{number:02}.py"
        path.write_text(reference_text + CHUNKED.replace("LOOPS", loops).replace("OTHERWISE", otherwise), "utf-8")
        paths.append(path)
    plain, *cheated = _speed(grader, paths)
    assert plain.score == 0 and "a Python loop over positions" in plain.output, plain.output
    for (what, _, _), speed in zip(drawn, cheated):
        assert speed.score == 0, (what, speed.output)


def test_a_table_kept_per_length_is_no_loop_and_keeps_the_tier(grader, reference_text, tmp_path):
    path = tmp_path / "cached.py"
    path.write_text(reference_text + CACHED, "utf-8")
    (speed,) = _speed(grader, [path])
    assert speed.score == speed.max_score, speed.output
    assert "it is not a loop over positions, and the path is timed" in speed.output, speed.output
