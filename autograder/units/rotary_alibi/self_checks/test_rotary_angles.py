"""Self-checks for task rotary_angles: rotary_angles. Run: pytest -k rotary_angles"""

import math

import pytest
import torch

from checks import assert_close
from rotary_alibi import rotary_angles


def test_rotary_angles_returns_cos_and_sin_of_shape_positions_by_half_head_dim():
    got = rotary_angles(torch.arange(5), 8)
    assert isinstance(got, tuple) and len(got) == 2, f"expected a pair (cos, sin), got {type(got).__name__}"
    cos, sin = got
    assert cos.shape == sin.shape == (5, 4), (f"each of cos and sin has shape positions.shape + (head_dim // 2,) = "
                                              f"(5, 4), got {tuple(cos.shape)} and {tuple(sin.shape)}")
    assert cos.dtype == torch.float32, f"float32 by default, got {cos.dtype}"


def test_rotary_angles_position_2_matches_the_worked_example():
    # head_dim = 4: theta_0 = 1, theta_1 = 10000 ** (-2/4) = 0.01; position 2 turns by 2 and 0.02
    cos, sin = rotary_angles(torch.tensor([2]), 4)
    assert_close(cos[0], torch.tensor([math.cos(2), math.cos(0.02)]), what="cos at position 2", atol=1e-5,
                 hint="theta_i = base ** (-2i / head_dim): i counts pairs, the exponent is 2i/head_dim.")
    assert_close(sin[0], torch.tensor([math.sin(2), math.sin(0.02)]), what="sin at position 2", atol=1e-5,
                 hint="the pair comes back as (cos, sin), in that order.")


def test_rotary_angles_position_0_turns_nothing():
    cos, sin = rotary_angles(torch.tensor([0]), 6)
    assert_close(cos, torch.ones(1, 3), what="cos at position 0", atol=1e-7)
    assert_close(sin, torch.zeros(1, 3), what="sin at position 0", atol=1e-7)


def test_rotary_angles_keep_the_shape_of_the_positions():
    cos, _ = rotary_angles(torch.zeros(2, 3, dtype=torch.long), 10)
    assert cos.shape == (2, 3, 5), f"positions of shape (2, 3) give (2, 3, head_dim // 2) = (2, 3, 5), got {tuple(cos.shape)}"


@pytest.mark.parametrize("head_dim", [7, 0, -2])
def test_rotary_angles_rejects_a_head_dim_that_is_not_positive_and_even(head_dim):
    with pytest.raises(ValueError):
        rotary_angles(torch.arange(3), head_dim)


def test_rotary_angles_take_fractional_positions_as_they_are():
    # head_dim = 4: theta = [1, 0.01]; positions 0.5 and 2.25, as scaled_positions gives them
    cos, sin = rotary_angles(torch.tensor([0.5, 2.25]), 4)
    expected = torch.tensor([[math.sin(0.5), math.sin(0.005)], [math.sin(2.25), math.sin(0.0225)]])
    cut = torch.tensor([[0.0, 0.0], [math.sin(2), math.sin(0.02)]])
    assert_close(sin, expected, what="sin at positions 0.5 and 2.25", atol=1e-6,
                 causes=[(cut, "fractional positions are cut to whole numbers (a cast to long): keep them as they are.")],
                 hint="a position need not be a whole number: angle = t * theta_i with t as given.")


def test_rotary_angles_honour_dtype_and_base():
    positions = torch.tensor([[3, 40], [0, 7]])
    cos, sin = rotary_angles(positions, 6, base=250.0, dtype=torch.float64)
    assert cos.dtype == sin.dtype == torch.float64, f"dtype=torch.float64 was asked for, got {cos.dtype}, {sin.dtype}"
    theta = torch.tensor([250.0 ** (-2 * i / 6) for i in range(3)], dtype=torch.float64)
    angle = positions.double()[..., None] * theta
    assert_close(cos, angle.cos(), what="cos of rotary_angles([[3, 40], [0, 7]], 6, base=250.0, dtype=float64)",
                 atol=1e-5, hint="theta_i = base ** (-2i / head_dim), with the base given.")
    assert_close(sin, angle.sin(), what="sin of the same call", atol=1e-5)


def test_rotary_angles_of_a_single_position_and_of_none():
    cos, _ = rotary_angles(torch.tensor(3), 4)
    assert cos.shape == (2,), f"a 0-d position gives shape (head_dim // 2,) = (2,), got {tuple(cos.shape)}"
    cos, _ = rotary_angles(torch.arange(0), 6)
    assert cos.shape == (0, 3), f"no positions give shape (0, 3), got {tuple(cos.shape)}"
