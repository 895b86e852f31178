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


def test_alibi_slopes_for_11_heads_are_float32_and_follow_the_rule():
    # c = 8: the 8 slopes of 8 heads, then 2^-0.5, 2^-1.5, 2^-2.5 of the 16-head slopes
    expected = torch.tensor([2.0 ** -(h + 1) for h in range(8)] + [2.0 ** -(h + 0.5) for h in range(3)])
    got = alibi_slopes(11)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32, \
        f"the slopes are float32, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got, expected, what="alibi_slopes(11)", atol=0.0, rtol=1e-6,
                 hint="the 8 slopes of 8 heads, then the first 3 of every other slope of 16 heads ([0::2]).")


def test_alibi_slopes_for_128_heads_run_from_2_to_the_minus_1_over_16_to_2_to_the_minus_8():
    got = alibi_slopes(128)
    assert_close(got[[0, 63, 127]], torch.tensor([2.0 ** (-1 / 16), 2.0 ** -4, 2.0 ** -8]),
                 what="alibi_slopes(128)[[0, 63, 127]]", atol=0.0, rtol=1e-6,
                 hint="2 ** (-8 (h+1) / n) for n a power of two.")


def test_alibi_slopes_are_built_on_the_device_given():
    got = alibi_slopes(10, device="meta")
    assert got.device.type == "meta", f"device='meta' was asked for, got {got.device}"
