"""Self-checks for task rope_scores: rope_scores. Run: pytest -k rope_scores"""

import torch

from checks import assert_close
from rotary_alibi import rope_scores


def test_rope_scores_have_shape_batch_heads_lq_lk():
    got = rope_scores(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8))
    assert isinstance(got, torch.Tensor) and got.shape == (2, 3, 5, 7), \
        f"expected (B, H, Lq, Lk) = (2, 3, 5, 7), got {tuple(getattr(got, 'shape', ()))}"


def test_rope_scores_at_position_0_are_plain_scaled_scores():
    q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)
    assert_close(rope_scores(q, k), (q @ k.transpose(-2, -1)) / 8 ** 0.5, what="scores of q and k at position 0",
                 atol=1e-5, hint="position 0 turns nothing; the scale is 1/sqrt(dh) by default.")


def test_rope_scores_depend_on_the_positions_only_through_their_difference():
    # The property RoPE is built for: shift every query and every key by the same amount, nothing changes.
    q, k = torch.randn(1, 2, 4, 16, dtype=torch.float64), torch.randn(1, 2, 6, 16, dtype=torch.float64)
    base = rope_scores(q, k, positions_q=torch.arange(4), positions_k=torch.arange(6))
    for shift in (1, 50, 1000):
        moved = rope_scores(q, k, positions_q=torch.arange(4) + shift, positions_k=torch.arange(6) + shift)
        assert_close(moved, base, what=f"scores with every position shifted by {shift}", atol=1e-8,
                     hint="rotate q by its positions and k by its own, with the same layout, then q @ k^T.")


def test_rope_scores_change_when_only_the_keys_move():
    q, k = torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8)
    assert not torch.allclose(rope_scores(q, k), rope_scores(q, k, positions_k=torch.arange(3) + 5)), \
        "moving the keys alone changes every distance m - n, so the scores must change"
