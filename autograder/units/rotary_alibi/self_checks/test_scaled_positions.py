"""Self-checks for task scaled_positions: scaled_positions. Run: pytest -k scaled_positions"""

import math

import pytest
import torch

from checks import assert_close
from rotary_alibi import scaled_positions


def test_scaled_positions_matches_the_worked_example():
    got = scaled_positions(torch.tensor([0, 1, 2, 8191]), factor=4)
    assert isinstance(got, torch.Tensor) and got.is_floating_point(), \
        f"expected a float tensor (fractional positions are the point), got {getattr(got, 'dtype', type(got))}"
    assert_close(got, torch.tensor([0.0, 0.25, 0.5, 2047.75]), what="scaled_positions([0, 1, 2, 8191], factor=4)",
                 atol=1e-6, hint="divide by the factor: a longer context squeezed into the trained range.")


@pytest.mark.parametrize("factor", [0.0, -2.0, math.inf, math.nan])
def test_scaled_positions_rejects_a_factor_that_is_not_positive_and_finite(factor):
    with pytest.raises(ValueError):
        scaled_positions(torch.arange(3), factor=factor)


def test_scaled_positions_gives_float32_for_half_and_integer_positions_and_takes_any_positive_factor():
    for positions in (torch.arange(4, dtype=torch.float16), torch.arange(4, dtype=torch.int32)):
        got = scaled_positions(positions, factor=2.0)
        assert got.dtype == torch.float32, f"{positions.dtype} positions should give float32, got {got.dtype}"
    assert_close(scaled_positions(torch.arange(3), factor=0.5), torch.tensor([0.0, 2.0, 4.0]),
                 what="scaled_positions([0, 1, 2], factor=0.5)", atol=0.0, hint="any factor above 0 is allowed.")


def test_scaled_positions_keep_float64_precision():
    positions = torch.tensor([987654.321, 5000000.007], dtype=torch.float64)
    got = scaled_positions(positions, factor=3.0)
    assert got.dtype == torch.float64, f"float64 positions stay float64, got {got.dtype}"
    assert_close(got, torch.tensor([987654.321 / 3.0, 5000000.007 / 3.0], dtype=torch.float64),
                 what="scaled_positions([987654.321, 5000000.007] (float64), factor=3.0)", atol=0.0, rtol=1e-12,
                 hint="divide in float64 and keep float64: a float32 step on the way loses the fractions.")


def test_scaled_positions_leave_the_callers_positions_alone():
    positions = torch.arange(0, 50, 5, dtype=torch.float32)
    before = positions.clone()
    scaled_positions(positions, factor=5.0)
    assert torch.equal(positions, before), "the positions passed in were divided in place: return a new tensor"
