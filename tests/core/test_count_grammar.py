"""The count is the verdict (issue 36, point 4): paths drawn from a grammar, counted by the timing job's own counter.

A drawn path is an iteration mechanism (a for or while loop, a comprehension, a generator, map, filter, reduce,
itertools, the iterator and the sequence protocols, iter(f, sentinel), a sort or min key, a re.sub callback,
recursion written out, through an operator or through copy.deepcopy, Tensor.apply_) crossed with what its trip
count is made of (the positions, chunks of them, the heads, a constant, the positions above a threshold of the
path's own) and a body (tensor work or index work). Most of these mechanisms hold no loop the static check reads
as one; the count sees them all, since it counts every line of the submission's code that runs, in any frame, and
every torch operation.

The expected verdict comes from the trip count alone: one made of positions, chunks of them, or positions above a
threshold below the longest length counted, grows with the length, and the path loses the tier; one made of
heads or a constant does not, and the path is timed. Each path is counted as the timing tier counts it:
``loop_check.counted`` (the code the timing job runs) at ``timing.count_lengths`` (the fixed lengths, the timed
one, and lengths drawn for each count), the first call set aside, the verdict ``loop_check.count_changes``.
"""

import random
import sys
import textwrap

import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from torch.overrides import TorchFunctionMode

from autograder.core import loop_check, timing, units

FILENAME = "<submission>"
RUBRIC = units.get("positional_encodings").rubric
HEADS = 4  # x's second axis, as the heads of a score path

# Each mechanism runs BODY once per trip, TRIP times; BODY reads the trip's index as ``i`` (an int).
MECHANISMS = {
    "for": """
        total = 0
        for i in range(TRIP):
            total = total + BODY
        return total""",
    "while": """
        total, i = 0, 0
        while i < TRIP:
            total = total + BODY
            i += 1
        return total""",
    "list comprehension": """
        return sum([BODY for i in range(TRIP)], 0)""",
    "generator": """
        return sum((BODY for i in range(TRIP)), 0)""",
    "map": """
        return sum(list(map(lambda i: BODY, range(TRIP))), 0)""",
    "filter": """
        return len(list(filter(lambda i: (BODY) is not None, range(TRIP))))""",
    "reduce": """
        return functools.reduce(lambda total, i: total + BODY, range(TRIP), 0)""",
    "itertools": """
        return sum(itertools.starmap(lambda i: BODY, zip(range(TRIP))), 0)""",
    "iterator protocol": """
        class Steps:
            def __init__(self):
                self.i = 0
            def __iter__(self):
                return self
            def __next__(self):
                i = self.i
                if i >= TRIP:
                    raise StopIteration
                self.i += 1
                return BODY
        return sum(list(Steps()), 0)""",
    "sequence protocol": """
        class Steps:
            def __getitem__(self, i):
                if i >= TRIP:
                    raise IndexError(i)
                return BODY
        return sum(tuple(Steps()), 0)""",
    "iter with a sentinel": """
        state, end = [0], object()
        def step():
            i = state[0]
            state[0] += 1
            return BODY if i < TRIP else end
        return sum(iter(step, end), 0)""",
    "sorted key": """
        return sum(sorted(range(TRIP), key=lambda i: float(BODY)), 0)""",
    "min key": """
        return min(range(TRIP), key=lambda i: float(BODY), default=0)""",
    "re.sub callback": """
        return len(re.sub(".", lambda match: str(float((lambda i: BODY)(match.start()))), "a" * TRIP))""",
    "recursion": """
        def step(i):
            return 0 if i >= TRIP else BODY + step(i + 1)
        return step(0)""",
    "recursion through an operator": """
        class Step:
            def __init__(self, i):
                self.i = i
            def __add__(self, other):
                i = self.i
                return other if i >= TRIP else (Step(i + 1) + (other + BODY))
        return Step(0) + 0""",
    "recursion through copy.deepcopy": """
        class Step:
            def __init__(self, i):
                self.i = i
            def __deepcopy__(self, memo):
                i = self.i
                return 0 if i >= TRIP else BODY + copy.deepcopy(Step(i + 1))
        return copy.deepcopy(Step(0))""",
    "Tensor.apply_": """
        steps = torch.arange(TRIP, dtype=torch.float64)
        steps.apply_(lambda value: float((lambda i: BODY)(int(value))))
        return steps.sum()""",
}
BODIES = {
    "tensor work": "x[i % x.shape[0]].sum()",
    "index work": "((i * 7) % 5)",
}
# What the trip count is made of, and whether it grows with the length L (``threshold``: the path's own choice).
TRIPS = {
    "positions": ("L", True),
    "chunks of positions": ("(L + 7) // 8", True),
    "heads": ("x.shape[1]", False),
    "a constant": ("3", False),
}


def path_source(mechanism, trip, body):
    code = MECHANISMS[mechanism].replace("TRIP", f"({trip})").replace("BODY", f"({BODIES[body]})")
    return "def path(x):\n    L = x.shape[0]\n" + textwrap.indent(textwrap.dedent(code).strip("\n"), "    ") + "\n"


def build(source):
    import copy
    import functools
    import itertools
    import re

    namespace = {"torch": torch, "copy": copy, "functools": functools, "itertools": itertools, "re": re}
    exec(compile(source, FILENAME, "exec"), namespace)  # noqa: S102 (the test's own generated code)
    return namespace["path"]


def verdict(path, lengths):
    """As the timing tier decides: the first call set aside, then one counted call at each length; the first length
    whose count differs from the first's, or None."""
    counts = []
    for number, length in enumerate((lengths[0],) + tuple(lengths)):
        x = torch.randn(length, HEADS)
        _, steps, operations, intact = loop_check.counted(lambda: path(x), FILENAME.__eq__, sys.settrace,
                                                          sys.gettrace, TorchFunctionMode)
        assert intact
        if number == 0:
            continue
        counts.append((length, steps + operations))
        changed = loop_check.count_changes(counts)
        if changed:
            return changed
    return None


@st.composite
def drawn_paths(draw):
    mechanism = draw(st.sampled_from(sorted(MECHANISMS)))
    body = draw(st.sampled_from(sorted(BODIES)))
    lengths = timing.count_lengths(RUBRIC, "cpu", random.Random(draw(st.integers(0, 2**32))))
    if draw(st.integers(0, 4)) == 0:  # the positions above a threshold of the path's own
        threshold = draw(st.integers(lengths[0], max(lengths) + 64))
        trip, grows = f"(L if L > {threshold} else 0)", any(length > threshold for length in lengths)
    else:
        trip, grows = TRIPS[draw(st.sampled_from(sorted(TRIPS)))]
    return path_source(mechanism, trip, body), lengths, grows


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn_paths())
def test_a_count_that_grows_with_the_length_is_a_loop_over_positions_whatever_runs_it(drawn):
    source, lengths, grows = drawn
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20 * max(lengths)))  # recursion over every position, each call a few frames
    try:
        found = verdict(build(source), lengths)
    finally:
        sys.setrecursionlimit(limit)
    assert (found is not None) == grows, (source, lengths, found)


def test_the_lengths_counted_hold_the_timed_one_and_some_of_their_own():
    timed = RUBRIC.TIMING_SIZES["cpu"]["length"]
    drawn = {timing.count_lengths(RUBRIC, "cpu", random.Random(seed)) for seed in range(20)}
    assert all(timed in lengths and set(RUBRIC.TIMING_COUNT_LENGTHS) <= set(lengths) for lengths in drawn)
    assert len(drawn) > 1  # drawn afresh: no fixed list decides where a path is counted
    assert all(list(lengths) == sorted(set(lengths)) for lengths in drawn)
