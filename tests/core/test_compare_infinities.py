"""compare.mismatch with infinities and NaN (issue 24, item 4).

The tolerance ``atol + rtol * |expected|`` is infinite where the expected value is -inf, so on its own it lets
any number pass there: a -1e9 where a mask's -inf is expected, and, with a known mistake's output in the place
of the expected one, a mistake that puts -inf somewhere would be named for outputs it does not reproduce. An
infinity matches only the same infinity, a NaN only a NaN, and a finite value only a finite one.
"""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.cases import Mistake, build_cases, tensor_check
from autograder.core.compare import first_wrong, mismatch, relation

INF, NAN = math.inf, math.nan


def _causal_scores():
    """(3, 3) scores with the future keys masked by -inf, as attention before its softmax."""
    scores = torch.tensor([[0.5, 0.0, 0.0], [1.0, -2.0, 0.0], [0.25, 3.0, -1.0]])
    return scores.masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), -INF)


def _returned(tensor):
    """What the worker sends back for a call that returned ``tensor`` (see cases.returned_value)."""
    return {"value": {"tensor": tensor, "device": "cpu"}}


# --- regressions: each failed before the fix ----------------------------------------------------------------

def test_a_finite_number_where_minus_inf_is_expected_is_a_mismatch():
    expected = _causal_scores()
    got = expected.masked_fill(torch.isinf(expected), -1e9)
    message = mismatch(got, expected, what="scores")
    assert message is not None
    assert message.startswith("scores is wrong at [0, 1]: expected -inf, got -1e+09 (3 of 9 entries differ")
    assert "3 should be -inf and are not" in message and "float('-inf')" in message


def test_plus_inf_where_minus_inf_is_expected_is_a_mismatch():
    expected = torch.tensor([0.0, -INF])
    message = mismatch(torch.tensor([0.0, INF]), expected)
    assert message is not None and "expected -inf, got inf" in message and "1 should be -inf and is not" in message


def test_minus_inf_matches_minus_inf():
    expected = _causal_scores()
    assert mismatch(expected.clone(), expected) is None
    assert mismatch(expected.clone(), expected, atol=0.0, rtol=0.0) is None


@pytest.mark.parametrize("got", [1.0, 0.0, INF, -INF])
def test_only_nan_matches_an_expected_nan(got):
    expected = torch.tensor([2.0, NAN])
    assert mismatch(torch.tensor([2.0, NAN]), expected) is None
    message = mismatch(torch.tensor([2.0, got]), expected, atol=1e6, rtol=1e6)
    assert message is not None and "expected nan" in message and "1 should be nan and is not" in message


def test_an_infinity_where_a_finite_value_is_expected_is_a_mismatch_at_any_tolerance():
    message = mismatch(torch.tensor([1.0, -INF]), torch.tensor([1.0, 0.0]), atol=INF)
    assert message is not None and "expected 0, got -inf" in message and "1 is infinite where a finite" in message


def test_a_nan_where_minus_inf_is_expected_says_where_and_what_was_expected():
    message = mismatch(torch.tensor([NAN, -INF, NAN]), torch.tensor([-INF, -INF, 1.0]))
    assert message.startswith("the output contains NaN (2 entries, the first at [0]): expected -inf there")


def test_a_per_entry_tolerance_still_works_beside_infinities():
    expected = torch.tensor([[0.0, -INF], [0.0, 0.0]])
    got = torch.tensor([[0.05, -INF], [0.15, 0.0]])
    per_row = torch.tensor([[0.1], [0.2]])
    assert mismatch(got, expected, atol=per_row, rtol=0.0) is None
    assert mismatch(got, expected, atol=0.1, rtol=0.0) is not None
    assert mismatch(got.masked_fill(torch.isinf(got), 0.0), expected, atol=per_row, rtol=0.0) is not None


def test_a_mask_mistake_is_not_named_for_an_output_it_does_not_reproduce():
    # An ALiBi bias: the future keys are 0; a known mistake puts -inf there. A student whose bias is -|i - j|
    # (negative in the future, too) did not make that mistake, yet -inf's infinite tolerance took every value.
    slope = 0.5
    distance = (torch.arange(3)[:, None] - torch.arange(4)[None, :]).to(torch.float32)  # i - j
    expected = -slope * distance.clamp(min=0)
    masked = expected.masked_fill(distance < 0, -INF)
    check = tensor_check("alibi_bias(3, 4, ...)", expected,
                         mistakes=(Mistake("the future keys get -inf", lambda: masked),))
    verdict = check(_returned(-slope * distance.abs()))
    assert not verdict.passed
    assert verdict.mistake == "" and verdict.explained == ()
    # the output the mistake does give is still named
    assert check(_returned(masked.clone())).mistake == "the future keys get -inf"


def test_a_mistake_is_not_named_where_the_output_has_minus_1e9_for_its_minus_inf():
    # Both the mistake's output and the expected one hold -inf; the student's holds -1e9 there and the mistake's
    # values elsewhere: the mistake explains only part of the difference.
    expected = _causal_scores()
    unscaled = expected * 2.0
    check = tensor_check("scores(...)", expected, mistakes=(Mistake("the scores are not scaled", lambda: unscaled),))
    verdict = check(_returned(unscaled.masked_fill(torch.isinf(unscaled), -1e9)))
    assert not verdict.passed and verdict.mistake == ""
    assert "3 should be -inf and are not, the first at [0, 1] (got -1e+09)" in verdict.message
    assert check(_returned(unscaled.clone())).mistake == "the scores are not scaled"


def test_a_right_output_with_minus_inf_passes_a_tensor_check():
    expected = _causal_scores()
    check = tensor_check("scores(...)", expected, mistakes=(Mistake("unscaled", lambda: expected * 2.0),))
    assert check(_returned(expected.clone())).passed


def test_the_relation_of_an_output_with_minus_inf_holds_no_nan():
    expected = _causal_scores().double()
    assert relation(expected.clone(), expected) is None
    got = expected.masked_fill(torch.isinf(expected), -1e9)
    said = relation(got, expected, axes=("query", "key"))
    assert said is None or "nan" not in said


# --- properties on generated tensors -----------------------------------------------------------------------

KINDS = ("finite", "inf", "-inf", "nan")
DTYPES = (torch.float16, torch.float32, torch.float64)


def _kind(value):
    return "nan" if math.isnan(value) else "inf" if value == INF else "-inf" if value == -INF else "finite"


def _entry(draw, kind):
    if kind == "finite":
        return draw(st.floats(-1000.0, 1000.0, allow_nan=False, allow_infinity=False))
    return {"inf": INF, "-inf": -INF, "nan": NAN}[kind]


@st.composite
def tensors_with_non_finite(draw):
    """A float tensor of up to three axes, each entry finite, inf, -inf or NaN (at least one of each class
    is likely), every size drawn apart."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    count = math.prod(shape)
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=count, max_size=count))
    values = [_entry(draw, kind) for kind in kinds]
    return torch.tensor(values, dtype=torch.float64).reshape(shape).to(draw(st.sampled_from(DTYPES)))


ATOLS = st.one_of(st.just(0.0), st.floats(0.0, 1e30), st.just(INF))
RTOLS = st.one_of(st.just(0.0), st.floats(0.0, 1e30))  # not inf: inf * 0, where 0 is expected, is NaN


@st.composite
def tolerances(draw, shape):
    """(atol, rtol): atol a number, or a tensor of one tolerance per entry."""
    rtol = draw(RTOLS)
    if draw(st.booleans()):
        return draw(ATOLS), rtol
    values = draw(st.lists(ATOLS, min_size=math.prod(shape), max_size=math.prod(shape)))
    return torch.tensor(values, dtype=torch.float64).reshape(shape), rtol


@settings(max_examples=150, deadline=None)
@given(tensors_with_non_finite(), st.data())
def test_a_tensor_matches_itself_whatever_its_infinities_and_nans(x, data):
    atol, rtol = data.draw(tolerances(x.shape))
    assert mismatch(x.clone(), x, atol=atol, rtol=rtol) is None
    assert mismatch(x.clone(), x, atol=0.0, rtol=0.0) is None


def _with_one_entry_of_another_kind(x, data):
    flat = x.detach().to(torch.float64).flatten().clone()
    at = data.draw(st.integers(0, flat.numel() - 1))
    old = _kind(float(flat[at]))
    new = data.draw(st.sampled_from([kind for kind in KINDS if kind != old]))
    flat[at] = _entry(data.draw, new)
    return flat.reshape(x.shape).to(x.dtype)


@settings(max_examples=200, deadline=None)
@given(tensors_with_non_finite(), st.data())
def test_changing_the_class_of_one_entry_is_a_mismatch_at_any_tolerance(x, data):
    got = _with_one_entry_of_another_kind(x, data)
    atol, rtol = data.draw(tolerances(x.shape))
    assert mismatch(got, x, atol=atol, rtol=rtol) is not None


@settings(max_examples=150, deadline=None)
@given(tensors_with_non_finite(), st.data())
def test_what_is_said_of_an_entry_of_another_class_does_not_depend_on_the_tolerance(x, data):
    got = _with_one_entry_of_another_kind(x, data)
    first, second = data.draw(tolerances(x.shape)), data.draw(tolerances(x.shape))
    assert mismatch(got, x, atol=first[0], rtol=first[1]) == mismatch(got, x, atol=second[0], rtol=second[1])


# --- the real hidden cases of both units ---------------------------------------------------------------------

def _tensor_checks(check, depth=2):
    """The tensor_checks a case's check is or calls: some tasks wrap theirs (alibi_bias accepts BLOOM's form
    beside the contract's, learned reads the forward's outcome out of the module's), holding it in a closure
    or a default argument."""
    if hasattr(check, "mistakes"):
        yield check
        return
    if depth == 0:
        return
    held = [cell.cell_contents for cell in getattr(check, "__closure__", None) or ()]
    for inner in held + list(getattr(check, "__defaults__", None) or ()):
        if callable(inner):
            yield from _tensor_checks(inner, depth - 1)


def _tensor_cases():
    for name in ("positional_encodings", "rotary_alibi"):
        for task, cases in build_cases(units.get(name)).items():
            for case in cases:
                for number, check in enumerate(_tensor_checks(case.check)):
                    yield f"{name}/{task}/{case.id}" + (f"/{number}" if number else ""), check


TENSOR_CASES = dict(_tensor_cases())


def test_every_task_with_a_tensor_output_has_its_checks_here():
    tasks = {case_id.split("/")[1] for case_id in TENSOR_CASES}
    assert {"learned", "alibi_bias", "sinusoidal", "biased_scores", "rope_scores"} <= tasks


@pytest.mark.parametrize("case_id", sorted(TENSOR_CASES))
def test_the_references_own_output_passes_and_matches_no_known_mistake(case_id):
    check = TENSOR_CASES[case_id]
    expected = check.expected
    verdict = check(_returned(expected.clone()))
    assert verdict.passed and not verdict.mistake, (case_id, verdict.message)
    for mistake in check.mistakes:
        try:
            output = mistake.output()
        except Exception:
            continue
        if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
            continue
        if mismatch(output.to(expected.dtype), expected, atol=check.atol, rtol=check.rtol, check_dtype=False) is None:
            continue  # the mistake gives the right answer on this case: explanations() never names it here
        # Then the reference's output must not match the mistake's either: else it would be "explained" by it.
        assert mismatch(expected, output.to(expected.dtype), atol=check.atol, rtol=check.rtol,
                        check_dtype=False) is not None, (case_id, mistake.explain)


# --- first_wrong and mismatch agree ----------------------------------------------------------------------------

_ENTRIES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.sampled_from([0.0, -0.0, 1.0]))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(st.lists(_ENTRIES, min_size=n, max_size=n),
                                                       st.lists(_ENTRIES, min_size=n, max_size=n))),
       st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool]),
       st.sampled_from([0.0, 1e-5, 0.5]), st.sampled_from([0.0, 1e-5, 0.5]), st.booleans())
def test_first_wrong_finds_an_entry_exactly_where_mismatch_says_the_outputs_differ(entries, dtype, atol, rtol,
                                                                                   per_entry):
    """The error model compares hundreds of mutants' outputs with the student's through first_wrong, which says
    no words (core/mutants.py, ``_same_value``): it must accept exactly what the check's comparison accepts, NaN,
    infinities, exact dtypes and a per-entry tolerance included."""
    got, expected = (torch.tensor(values, dtype=torch.float64) for values in entries)
    if not dtype.is_floating_point:  # whole numbers (or truth values) drawn from the same entries
        got, expected = (torch.nan_to_num(t, nan=0.0, posinf=7.0, neginf=-7.0).clamp(-100, 100).round().to(dtype)
                         for t in (got, expected))
    else:
        got, expected = got.to(dtype), expected.to(dtype)
    tolerance = torch.full(expected.shape, atol, dtype=torch.float64) if per_entry else atol
    found = first_wrong(got, expected, atol=tolerance, rtol=rtol)
    said = mismatch(got, expected, atol=tolerance, rtol=rtol)
    assert (found is None) == (said is None), (got, expected, found, said)
