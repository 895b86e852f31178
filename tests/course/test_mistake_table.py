"""The self-checks' table of known mistakes (autograder/course/mistake_table.py, ``table``) takes any call a
self-check makes, one on the meta device included, where a check's tolerance is a tensor of one entry per output
entry on that device: no value of it can be read there, and none is needed (no mistake is listed at a meta call,
whose outputs hold no values to compare).

Before the fix, a self-check that called ``resize_learned_grid`` or ``window_scores`` on the meta device stopped
the build of the fourth unit's student folder (``Cannot copy out of meta tensor``)."""

import json

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.course.mistake_table import table

UNIT = units.get("vision_positions")


def _resize_call(device, old, new, dim, prefix):
    table_ = torch.randn(prefix + old[0] * old[1], dim, generator=torch.Generator().manual_seed(0)).to(device)
    args, kwargs = [table_, old, new], {"prefix_tokens": prefix}
    returned = UNIT.reference.resize_learned_grid(*args, **kwargs)
    return ("resize_learned_grid", f"{device}:{old}:{new}:{dim}:{prefix}", args, kwargs, returned)


def _window_call(device, windows, heads, side_h, side_w, dh):
    generator = torch.Generator().manual_seed(1)
    n = side_h * side_w
    q, k = (torch.randn(windows, heads, n, dh, generator=generator).to(device) for _ in range(2))
    bias = torch.randn((2 * side_h - 1) * (2 * side_w - 1), heads, generator=generator).to(device)
    args = [q, k, bias, side_h, side_w]
    returned = UNIT.reference.window_scores(*args)
    return ("window_scores", f"{device}:{windows}:{heads}:{side_h}:{side_w}:{dh}", args, {}, returned)


@settings(max_examples=5, deadline=None, derandomize=True)
@given(old=st.tuples(st.integers(2, 5), st.integers(2, 5)), new=st.tuples(st.integers(2, 6), st.integers(2, 6)),
       dim=st.sampled_from([4, 8]), prefix=st.integers(0, 2),
       window=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)))
def test_a_meta_call_beside_cpu_calls_is_kept_and_lists_no_mistake(old, new, dim, prefix, window):
    windows, heads, side_h, side_w = window
    calls = {"check_resize": [_resize_call("cpu", old, new, dim, prefix), _resize_call("meta", old, new, dim, prefix)],
             "check_window": [_window_call("cpu", windows, heads, side_h, side_w, 4),
                              _window_call("meta", windows, heads, side_h, side_w, 4)]}
    found = table(UNIT, calls)
    json.dumps(found)  # the table is written as JSON
    for entries in found.values():
        labels = [entry["label"] for entry in entries]
        assert len(entries) == 2, labels  # both calls, in the order made
        meta = entries[1]
        assert meta["mistakes"] == [], meta["label"]
        # Where mistakes are listed, their outputs are compared under the entry's tolerances: those are kept.
        for entry in entries:
            if entry["mistakes"]:
                assert entry["atol"] is not None and entry["rtol"] is not None, entry["label"]


def test_the_cpu_call_still_lists_the_mistakes_that_change_its_output():
    """An independent check of what the table is for: a resize to another grid, on the CPU, lists declared mistakes
    (the unit declares several that change such an output, see its cases module), each with outputs of its own."""
    found = table(UNIT, {"check": [_resize_call("cpu", (3, 3), (5, 4), 8, 1), _resize_call("meta", (3, 3), (5, 4), 8, 1)]})
    cpu = found["check"][0]
    assert cpu["mistakes"], cpu["label"]
    assert all(outputs and all(stored["shape"] for stored in outputs) for _, outputs in cpu["mistakes"])
