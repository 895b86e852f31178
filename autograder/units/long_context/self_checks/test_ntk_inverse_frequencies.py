"""Self-checks for task ntk_inverse_frequencies: ntk_inverse_frequencies. Run: pytest -k ntk_inverse_frequencies"""

import math

import pytest
import torch

from checks import assert_close
from long_context import ntk_inverse_frequencies


def test_ntk_inverse_frequencies_give_one_float32_frequency_per_pair():
    got = ntk_inverse_frequencies(16, factor=4.0)
    assert isinstance(got, torch.Tensor) and got.shape == (8,) and got.dtype == torch.float32, \
        f"expected a float32 tensor of shape (dh/2,) = (8,), got {getattr(got, 'dtype', type(got))} " \
        f"{tuple(getattr(got, 'shape', ()))}"


def test_ntk_inverse_frequencies_match_the_worked_example():
    assert_close(ntk_inverse_frequencies(4, factor=4.0), torch.tensor([1.0, 0.0025]),
                 what="ntk_inverse_frequencies(4, factor=4.0)", rtol=1e-5, atol=0.0,
                 hint="base' = 10000 * 4 ** (4 / (4 - 2)) = 160000; theta_i = base' ** (-2i / dh).")


def test_ntk_inverse_frequencies_keep_pair_0_and_divide_the_slowest_pair_by_the_factor():
    plain = 10000.0 ** (-torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    got = ntk_inverse_frequencies(64, factor=8.0).double()
    assert_close(got[0], plain[0], what="pair 0 (it turns at 1 radian per position)", rtol=1e-6, atol=0.0,
                 hint="pair 0's exponent is 0: no base changes it.")
    assert_close(got[-1], plain[-1] / 8, what="the slowest pair, i = dh/2 - 1", rtol=1e-5, atol=0.0,
                 hint="the exponent dh / (dh - 2) is chosen so that the slowest pair is divided by the factor.")


def test_ntk_inverse_frequencies_at_factor_1_are_rope_s_own():
    plain = (500000.0 ** (-torch.arange(0, 32, 2, dtype=torch.float64) / 32)).float()
    assert_close(ntk_inverse_frequencies(32, base=500000.0, factor=1.0), plain,
                 what="ntk_inverse_frequencies(32, base=500000.0, factor=1.0)", rtol=1e-5, atol=0.0,
                 hint="factor 1 leaves the base as it is; and the base argument must be used.")


@pytest.mark.parametrize("head_dim, base, factor", [(7, 10000.0, 2.0), (2, 10000.0, 2.0), (0, 10000.0, 2.0),
                                                    (-4, 10000.0, 2.0), (16, 1.0, 2.0), (16, math.inf, 2.0),
                                                    (16, math.nan, 2.0), (16, 10000.0, 0.5), (16, 10000.0, math.inf),
                                                    (16, 10000.0, math.nan)])
def test_ntk_inverse_frequencies_reject_what_the_docstring_calls_invalid(head_dim, base, factor):
    with pytest.raises(ValueError):
        ntk_inverse_frequencies(head_dim, base=base, factor=factor)
