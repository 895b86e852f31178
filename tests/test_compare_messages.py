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
    expected = torch.arange(math.prod(shape), dtype=torch.float64).reshape(shape)
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
