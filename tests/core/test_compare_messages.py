"""Failure messages go type, then dtype, then shape, then the first wrong value."""

import math
import re

import torch
from hypothesis import given, settings, strategies as st

from autograder.core.compare import mismatch, relation


def test_a_non_tensor_is_reported_by_its_type():
    assert mismatch([1.0], torch.zeros(1)) == "the output should be a torch.Tensor, but it is a list."


def test_dtype_is_checked_before_shape():
    assert "dtype torch.int32, expected torch.int64" in mismatch(torch.zeros(3, dtype=torch.int32),
                                                                 torch.zeros(2, dtype=torch.int64))


def test_shape_is_checked_before_values():
    assert mismatch(torch.zeros(2, 3), torch.ones(3, 2)) == "the output has shape (2, 3), expected (3, 2)."


def test_a_value_mismatch_names_the_first_wrong_index_and_the_largest_error():
    expected = torch.zeros(2, 3)
    got = expected.clone()
    got[0, 2], got[1, 1] = 0.5, -2.0
    message = mismatch(got, expected, what="t")
    assert message == ("t is wrong at [0, 2]: expected 0, got 0.5 (2 of 6 entries differ; "
                       "largest error 2 at [1, 1]).")


def test_nan_is_called_out():
    got = torch.tensor([1.0, float("nan")])
    assert "contains NaN (1 entries, the first at [1])" in mismatch(got, torch.ones(2))


def test_integers_must_match_exactly_and_floats_within_tolerance():
    assert mismatch(torch.tensor([1, 2]), torch.tensor([1, 3])) is not None
    assert mismatch(torch.tensor([1.0]), torch.tensor([1.0 + 1e-7])) is None
    assert mismatch(torch.tensor([1.0]), torch.tensor([1.1]), atol=0.0, rtol=0.0) is not None


def test_a_tolerance_can_grow_along_an_axis():
    expected = torch.zeros(3, 1)
    got = torch.tensor([[0.0], [0.0], [0.15]])
    assert mismatch(got, expected, atol=torch.tensor([[0.0], [0.1], [0.2]]), rtol=0.0) is None
    assert mismatch(got, expected, atol=0.1, rtol=0.0) is not None


@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=3), data=st.data())
def test_an_unnamed_axis_is_never_quoted(shape, data):
    """Where a check names no axes, "how it goes wrong" says nothing of "axis 0" (before: "right for axis 0 0..1,
    wrong from axis 0 2 on", which tells a student nothing)."""
    # Values with no pattern: on torch.arange, 3 added from some index on along an axis of stride 3 is also the
    # output shifted by one along it, a true relation that this test would take for a quoted axis.
    expected = torch.randn(shape, generator=torch.Generator().manual_seed(math.prod(shape)), dtype=torch.float64)
    axis = data.draw(st.integers(0, len(shape) - 1))
    start = data.draw(st.integers(0, shape[axis] - 1))
    pattern = data.draw(st.sampled_from(["from", "odd", "even", "upto"]))
    index = torch.arange(shape[axis])
    chosen = {"from": index >= start, "odd": index % 2 == 1, "even": index % 2 == 0, "upto": index <= start}[pattern]
    wrong = chosen.reshape([-1 if a == axis else 1 for a in range(len(shape))]).expand(shape)
    got = expected + 3.0 * wrong
    said = relation(got, expected, atol=1e-9, rtol=0) or ""
    assert not re.search(r"\baxis \d", said), said
    named = relation(got, expected, atol=1e-9, rtol=0, axes=tuple(f"a{number}" for number in range(len(shape))))
    assert named is None or "axis" not in named


# ---------------------------------------------------------------------------------------------------------------
# A sentence names an axis by the check's name for it ("the query axis") or by its place ("the last axis"), never
# as "the axis 1 axis", "your axis 0 0" or "axis 1", which read as names the student never gave.

_UNNAMED = re.compile(r"\baxis \d|axes? axis")


def _moved(tensor, how, axis):
    """``tensor`` changed along ``axis`` the way a mistake changes it."""
    size = tensor.shape[axis]
    if how == "flip":
        return tensor.flip(axis)
    if how == "swap":  # the first two slices exchanged
        order = list(range(size))
        order[0], order[1] = 1, 0
        return tensor.index_select(axis, torch.tensor(order))
    if how == "shift":
        return torch.cat((tensor.narrow(axis, 1, size - 1), tensor.narrow(axis, 0, 1)), axis)
    if how == "transpose":
        return tensor.transpose(-1, -2)
    if how == "softmax":
        return tensor.softmax(-1)
    return tensor.narrow(axis, 0, size - 1)  # "short": a length taken from the wrong argument


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(3, 5), min_size=1, max_size=3), seed=st.integers(0, 2**16),
       how=st.sampled_from(["flip", "swap", "shift", "transpose", "softmax", "short"]), data=st.data(),
       named=st.booleans())
def test_a_relation_names_each_axis_once(shape, seed, how, data, named):
    if how == "transpose":
        shape = shape[:-1] + [shape[-1], shape[-1]] if len(shape) >= 2 else [shape[0], shape[0]]
    expected = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    axis = data.draw(st.integers(0, expected.dim() - 1))
    axes = ("batch", "query", "key", "feature")[-expected.dim():] if named else None
    got = _moved(expected, how, axis)
    sentence = relation(got, expected, axes=axes) if got.shape == expected.shape else mismatch(got, expected)
    text = sentence or ""
    assert not _UNNAMED.search(text), text
    if named and got.shape == expected.shape and how in ("flip", "swap"):
        assert f"{axes[axis]}" in text, text  # the named axis is the one said


def test_entries_of_a_vector_in_another_order_are_called_entries():
    expected = torch.tensor([0.1, 0.9, -0.3, 0.7], dtype=torch.float64)
    got = expected[[1, 0, 3, 2]]  # each pair (sin, cos) given as (cos, sin)
    sentence = relation(got, expected)
    assert sentence == ("the entries are the expected ones in another order (your entry [0] is the expected "
                        "entry [1])."), sentence
