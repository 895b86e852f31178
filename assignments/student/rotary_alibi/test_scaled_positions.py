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
