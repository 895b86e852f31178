"""A wrong number is told as a number (issue 34, point 6): a 0-d output has no index ("wrong at []") and no
entries to count, and no relation that every pair of numbers satisfies ("every entry is off by the same
constant") is claimed for it; only what says more than the two numbers do (a flipped sign, a named factor)."""

import math

import pytest
import torch
from hypothesis import assume, given, settings, strategies as st

from autograder.core import units
from autograder.core.compare import mismatch, relation
from autograder.core.grade import Grader

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
ENTRY_WORDS = ("[]", "entries", "entry", "constant", "1 of 1")


def _apart(got, expected):
    return abs(got - expected) > 1e-5 + 1e-5 * abs(expected)


@settings(max_examples=200, deadline=None)
@given(finite, finite, st.sampled_from([torch.float64, torch.float32]))
def test_a_wrong_scalar_is_told_as_one_number_with_both_values(got, expected, dtype):
    g, e = torch.tensor(got, dtype=dtype), torch.tensor(expected, dtype=dtype)
    assume(_apart(g.item(), e.item()))
    message = mismatch(g, e, what="scale(4.0)")
    assert message.startswith("scale(4.0) is wrong: expected ")
    assert not any(word in message for word in ENTRY_WORDS), message
    assert f"expected {e.item():.6g}, got {g.item():.6g}" in message
    how = relation(g, e) or ""
    assert not any(word in how for word in ENTRY_WORDS), how


@settings(max_examples=200, deadline=None)
@given(finite, finite)
def test_a_scalar_relation_is_claimed_only_where_it_holds(got, expected):
    g, e = torch.tensor(got, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64)
    assume(_apart(got, expected))
    how = relation(g, e, factors={"sqrt(dh)": math.sqrt(8)})
    if how is None:
        return
    if "opposite sign" in how:
        assert math.isclose(got, -expected, rel_tol=1e-5)
    else:
        assert "sqrt(dh)" in how and math.isclose(got, expected * math.sqrt(8), rel_tol=1e-3)


@given(st.floats(0.1, 1e3), st.sampled_from(["sign", "factor"]))
@settings(max_examples=50, deadline=None)
def test_a_flipped_sign_and_a_named_factor_are_told_for_a_scalar(value, kind):
    expected = torch.tensor(value, dtype=torch.float64)
    got = -expected if kind == "sign" else expected * math.sqrt(8)
    how = relation(got, expected, factors={"sqrt(dh)": math.sqrt(8)})
    assert how and ("opposite sign" if kind == "sign" else "times sqrt(dh)") in how


def test_a_scalar_nan_and_infinity_are_named_without_an_index():
    one = torch.tensor(1.5, dtype=torch.float64)
    nan = mismatch(torch.tensor(float("nan"), dtype=torch.float64), one, what="s")
    assert nan.startswith("s is NaN: expected 1.5.") and "[]" not in nan
    inf = mismatch(torch.tensor(float("inf"), dtype=torch.float64), one, what="s")
    assert inf == "s is wrong: expected 1.5, got inf." and relation(torch.tensor(float("inf")), one) is None


def test_a_tensor_of_many_entries_keeps_its_index_and_counts():
    expected = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    got = expected + 1
    assert mismatch(got, expected).startswith("the output is wrong at [0, 0]: expected 0, got 1 (6 of 6 entries")
    assert "every entry is off by the same constant" in relation(got, expected)


def test_the_grader_tells_a_wrong_scalar_in_scalar_words(tmp_path):
    """The third unit's yarn_attention_scale returns a float: 1% too large, it is told as one number."""
    unit = units.get("long_context")
    text = unit.finished_reference
    assert text.count("return root * root") == 1
    path = tmp_path / "long_context.py"
    path.write_text(text.replace("return root * root", "return root * root * 1.01"), encoding="utf-8")
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        result = grader.grade(path)
    finally:
        grader.close()
    failed = [test for test in result.tests if not test.passed]
    assert {test.task for test in failed} == {"yarn_attention_scale"}, failed
    values = next(test for test in failed if test.id == "yarn_attention_scale_values").output
    assert " is wrong: expected " in values and "(off by +" in values, values
    assert not any(word in values for word in ENTRY_WORDS), values
