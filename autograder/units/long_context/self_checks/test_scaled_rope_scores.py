"""Self-checks for task scaled_rope_scores: scaled_rope_scores. Run: pytest -k scaled_rope_scores"""

import math

import pytest
import torch

from checks import assert_close
from long_context import scaled_rope_scores

AXES = ("batch", "head", "query", "key")


def _rotate_half(x, positions, theta):
    """x turned pair by pair, pair i = (x[i], x[i + dh/2]) by t * theta_i, in float64."""
    a, b = x.double().chunk(2, dim=-1)
    angle = positions.double()[:, None] * theta.double()
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
                 axes=AXES, hint="the scale multiplies the scores once, not q and k each.")


@pytest.mark.parametrize("theta, kwargs", [(torch.ones(8), {}), (torch.ones(4), {"positions_q": torch.arange(5)})])
def test_scaled_rope_scores_reject_what_the_docstring_calls_invalid(theta, kwargs):
    with pytest.raises(ValueError):
        scaled_rope_scores(torch.randn(1, 2, 4, 8), torch.randn(1, 2, 6, 8), theta, **kwargs)
