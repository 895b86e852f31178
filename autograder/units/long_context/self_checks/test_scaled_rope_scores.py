"""Self-checks for task scaled_rope_scores: scaled_rope_scores. Run: pytest -k scaled_rope_scores"""

import math

import pytest
import torch

from checks import assert_close
from long_context import scaled_rope_scores

AXES = ("batch", "head", "query", "key")


def _rotate_half(x, positions, theta):
    """x turned pair by pair, pair i = (x[i], x[i + dh/2]) by t * theta_i, in float64 (positions: (L,) or a shape
    that broadcasts to x's (B, H, L))."""
    a, b = x.double().chunk(2, dim=-1)
    angle = positions.double()[..., :, None] * theta.double()
    return torch.cat((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), dim=-1)


def test_scaled_rope_scores_have_shape_batch_heads_lq_lk():
    got = scaled_rope_scores(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.ones(4) / 10)
    assert isinstance(got, torch.Tensor) and got.shape == (2, 3, 5, 7), \
        f"expected (B, H, Lq, Lk) = (2, 3, 5, 7), got {tuple(getattr(got, 'shape', ()))}"


def test_scaled_rope_scores_match_the_worked_example():
    one = torch.tensor([1.0, 0.0]).view(1, 1, 1, 2)
    got = scaled_rope_scores(one, one, torch.tensor([0.5]), positions_q=torch.tensor([3]),
                             positions_k=torch.tensor([1]))
    assert_close(got, torch.tensor([[[[math.cos(1.0) / math.sqrt(2)]]]]),
                 what="scaled_rope_scores of (1, 0) at positions 3 and 1, frequency 0.5", atol=1e-6,
                 hint="cos((3 - 1) * 0.5) / sqrt(2): the angle is t * theta, and the score is divided by sqrt(dh).")


def test_scaled_rope_scores_turn_the_pairs_i_and_i_plus_half():
    q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 6, 8)
    theta = torch.tensor([1.0, 0.3, 0.05, 0.002])
    expected = _rotate_half(q, torch.arange(4), theta) @ _rotate_half(k, torch.arange(6), theta).transpose(-2, -1)
    assert_close(scaled_rope_scores(q, k, theta), (expected / math.sqrt(8)).float(),
                 what="scaled_rope_scores(q, k, [1.0, 0.3, 0.05, 0.002]), Lq = 4, Lk = 6", atol=1e-5, axes=AXES,
                 hint="rotate half: pair i is (x[i], x[i + dh/2]), turned by t * theta_i; both defaults count from 0.")


def test_scaled_rope_scores_multiply_by_the_attention_scale_once():
    q, k = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 3, 4)
    theta = torch.tensor([0.5, 0.01])
    plain = scaled_rope_scores(q, k, theta)
    assert_close(scaled_rope_scores(q, k, theta, attention_scale=1.3), plain * 1.3,
                 what="scaled_rope_scores(..., attention_scale=1.3) against attention_scale=1.0", atol=1e-5,
                 axes=AXES, hint="the scale multiplies the scores once (q and k each take its square root, if "
                                 "you fold it into them); and q and k themselves stay as they were passed.")


def test_scaled_rope_scores_turn_by_fractional_positions_far_from_0_and_per_sequence():
    # Positions of shape (B, 1, L), fractional and far out: the angles t * theta_i in float64, each sequence its own.
    q, k = torch.randn(2, 3, 4, 8, dtype=torch.float64), torch.randn(2, 3, 5, 8, dtype=torch.float64)
    theta = torch.tensor([1.0, 0.3, 0.05, 0.002])
    positions_q = torch.tensor([[[1e6 + 0.5, 1e6 + 1.5, 1e6 + 2.5, 1e6 + 3.5]], [[0.25, 1.25, 2.25, 3.25]]],
                               dtype=torch.float64)
    positions_k = torch.arange(5, dtype=torch.float64).view(1, 1, 5) + torch.tensor([1e6, 0.0]).view(2, 1, 1)
    expected = _rotate_half(q, positions_q, theta) @ _rotate_half(k, positions_k, theta).transpose(-2, -1)
    got = scaled_rope_scores(q, k, theta, positions_q=positions_q, positions_k=positions_k)
    assert_close(got, expected / math.sqrt(8), what="float64 scaled_rope_scores at positions of shape (2, 1, L), "
                 "about 1e6 + 0.5 for the first sequence and 0.25 for the second", atol=1e-9, axes=AXES,
                 hint="float64 q and k give float64 scores; the angles t * theta_i in float64 (a float32 product "
                      "loses the fast pairs' angles near 1e6); each sequence turns by its own positions.")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_scaled_rope_scores_keep_half_precision(dtype):
    got = scaled_rope_scores(torch.randn(1, 2, 3, 8).to(dtype), torch.randn(1, 2, 4, 8).to(dtype),
                             torch.tensor([1.0, 0.3, 0.05, 0.002]))
    assert isinstance(got, torch.Tensor) and got.dtype == dtype, \
        f"{dtype} q and k should give {dtype} scores (the dtype of q), got {getattr(got, 'dtype', type(got).__name__)}"


def test_scaled_rope_scores_are_made_on_the_device_of_q_whatever_the_frequencies():
    # The meta device holds no values, needs no GPU and refuses to be mixed with the CPU, as CUDA does: the
    # frequencies come from the CPU (where this unit's functions make them), the scores belong on q's device.
    q, k = torch.empty(2, 3, 5, 8, device="meta"), torch.empty(2, 3, 7, 8, device="meta")
    got = scaled_rope_scores(q, k, torch.tensor([1.0, 0.3, 0.05, 0.002]))
    assert isinstance(got, torch.Tensor) and got.device.type == "meta" and tuple(got.shape) == (2, 3, 5, 7), \
        (f"expected (2, 3, 5, 7) on the meta device, got {tuple(getattr(got, 'shape', ()))} on "
         f"{getattr(got, 'device', type(got).__name__)}: make the default positions, and move the frequencies and "
         "positions, to q's device")


@pytest.mark.parametrize("theta, kwargs", [(torch.ones(8), {}), (torch.ones(4), {"positions_q": torch.arange(5)}),
                                           (torch.ones(4), {"positions_k": torch.arange(1)})])
def test_scaled_rope_scores_reject_what_the_docstring_calls_invalid(theta, kwargs):
    with pytest.raises(ValueError):
        scaled_rope_scores(torch.randn(1, 2, 4, 8), torch.randn(1, 2, 6, 8), theta, **kwargs)
