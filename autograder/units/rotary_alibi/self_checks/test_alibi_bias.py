"""Self-checks for task alibi_bias: alibi_bias. Run: pytest -k alibi_bias"""

import warnings

import pytest
import torch

from checks import assert_close
from rotary_alibi import alibi_bias

BLOOM = ("Accepted: your causal bias is slope_h * j, BLOOM's form (the key's own position). It differs from "
         "-slope_h * (i - j) by slope_h * i, the same for every key of row i, so under the causal mask the softmax "
         "is the same, and the grader accepts it for causal=True. Without the mask (causal=False) it is not the "
         "same: there the bias must be -slope_h * |i - j|.")


def _expected(length_q, length_k, slopes, causal):
    distance = torch.arange(length_q)[:, None] - torch.arange(length_k)[None, :]  # (Lq, Lk): i - j
    distance = distance.clamp(min=0) if causal else distance.abs()
    return (-slopes.to(torch.float64)[:, None, None] * distance).unsqueeze(0).to(slopes.dtype)  # (1, H, Lq, Lk)


def _bloom(length_q, length_k, slopes):
    return (slopes.to(torch.float64)[:, None, None] * torch.arange(length_k).expand(length_q, -1)).unsqueeze(0).to(
        slopes.dtype)


def _causes(length_q, length_k, slopes, causal):
    right = _expected(length_q, length_k, slopes, causal)
    found = [(-right, "the sign is reversed: the bias is a penalty, -slope * (i - j)."),
             (_expected(length_k, length_k, slopes, causal)[..., length_k - length_q:, :] if length_k >= length_q
              else right, "the queries are placed at the last Lq key positions: query i and key j both count from "
                          "0; a caller with a cache takes the last rows of alibi_bias(Lk, Lk, slopes) itself.")]
    if causal:
        found += [(_expected(length_q, length_k, slopes, False), "|i - j| is used where causal=True: keys after "
                                                                 "the query get 0 (the caller's mask removes them)."),
                  (right.masked_fill(torch.ones_like(right, dtype=torch.bool).triu(1), float("-inf")),
                   "the future keys get -inf: the bias carries no mask, they get 0.")]
    else:
        found += [(_bloom(length_q, length_k, slopes), "the bias is slope * j, BLOOM's form: right under a causal "
                                                       "mask only; causal=False asks for -slope * |i - j|."),
                  (_expected(length_q, length_k, slopes, True), "the causal form is used where causal=False asks "
                                                                "for -slope * |i - j| in both directions.")]
    return found


def _check(length_q, length_k, slopes, causal=True):
    got = alibi_bias(length_q, length_k, slopes, causal=causal)
    expected = _expected(length_q, length_k, slopes, causal)
    what = f"alibi_bias({length_q}, {length_k}, {slopes.tolist()}, causal={causal})"
    atol = 1e-7 + 2.5e-7 * max(length_q, length_k) * float(slopes.abs().max())
    if causal and isinstance(got, torch.Tensor) and got.shape == expected.shape and got.dtype == expected.dtype:
        bloom = _bloom(length_q, length_k, slopes)
        if torch.allclose(got.to(torch.float64), bloom.to(torch.float64), atol=atol, rtol=1e-6) \
                and not torch.allclose(bloom, expected):
            warnings.warn(BLOOM)
            return
    assert_close(got, expected, what=what, atol=atol, rtol=1e-6, causes=_causes(length_q, length_k, slopes, causal),
                 axes=("batch", "head", "query", "key"),
                 hint="query i and key j count from 0; causal: -slope * (i - j) for j <= i and 0 for j > i; "
                      "causal=False: -slope * |i - j|.")


def test_alibi_bias_has_shape_1_heads_lq_lk():
    got = alibi_bias(3, 5, torch.tensor([0.5, 0.25]))
    assert isinstance(got, torch.Tensor) and got.shape == (1, 2, 3, 5), \
        f"expected (1, H, Lq, Lk) = (1, 2, 3, 5), got {tuple(getattr(got, 'shape', ()))}"


def test_alibi_bias_causal_matches_the_worked_example():
    # slope 0.5: [[0, 0, 0], [-0.5, 0, 0], [-1, -0.5, 0]]; BLOOM's slope * j is accepted here, as the grader does
    _check(3, 3, torch.tensor([0.5]))


def test_alibi_bias_without_the_mask_costs_both_directions():
    # slope 0.5: [[0, -0.5, -1], [-0.5, 0, -0.5], [-1, -0.5, 0]]
    _check(3, 3, torch.tensor([0.5]), causal=False)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("length_q, length_k", [(2, 6), (5, 3)])
def test_alibi_bias_counts_queries_and_keys_from_0_when_lq_differs_from_lk(length_q, length_k, causal):
    _check(length_q, length_k, torch.tensor([0.5, 0.125, 0.0625]), causal=causal)


def test_alibi_bias_takes_the_dtype_of_the_slopes():
    slopes = torch.tensor([0.75, 0.1875], dtype=torch.float64)
    got = alibi_bias(4, 6, slopes, causal=False)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64, \
        f"float64 slopes should give a float64 bias, got {getattr(got, 'dtype', type(got).__name__)}"
    _check(4, 6, slopes, causal=False)


def test_alibi_bias_is_constant_along_each_diagonal():
    bias = alibi_bias(6, 6, torch.tensor([0.3, 0.7]), causal=False)[0]
    assert torch.equal(bias[:, 1:, 1:], bias[:, :-1, :-1]), "the bias must depend on i - j only"


@pytest.mark.parametrize("slopes", [torch.tensor([[0.5], [0.25]]), torch.tensor(0.25), torch.tensor([[0.5, 0.25, 0.125]])],
                         ids=["(2, 1)", "0-d", "(1, 3)"])
def test_alibi_bias_rejects_slopes_that_are_not_one_per_head(slopes):
    with pytest.raises(ValueError):
        alibi_bias(3, 3, slopes)  # slopes are (H,): one per head
