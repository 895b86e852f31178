"""Self-checks for task alibi_slopes: alibi_slopes. Run: pytest -k alibi_slopes"""

import pytest
import torch

from checks import assert_close
from rotary_alibi import alibi_slopes


def test_alibi_slopes_for_8_heads_halve_at_every_head():
    expected = torch.tensor([2.0 ** -(h + 1) for h in range(8)])  # 2 ** (-8 (h + 1) / 8)
    got = alibi_slopes(8)
    assert isinstance(got, torch.Tensor) and got.shape == (8,), f"expected a tensor of shape (8,), got {got!r}"
    assert_close(got, expected, what="alibi_slopes(8)", atol=0.0, rtol=1e-6,
                 hint="for n a power of two the slopes are 2 ** (-8 (h+1) / n), h = 0 .. n-1.")


def test_alibi_slopes_for_12_heads_follow_the_papers_rule():
    # 8 slopes of 8 heads, then every other slope of 16 heads: 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
    expected = torch.tensor([2.0 ** -(h + 1) for h in range(8)] + [2.0 ** -(h + 0.5) for h in range(4)])
    assert_close(alibi_slopes(12), expected, what="alibi_slopes(12)", atol=0.0, rtol=1e-6,
                 hint="not a power of two: the slopes of the largest power below n (8), then every other slope "
                      "of twice that power (16), from its first.")


@pytest.mark.parametrize("num_heads", [0, -1])
def test_alibi_slopes_rejects_no_heads(num_heads):
    with pytest.raises(ValueError):
        alibi_slopes(num_heads)
