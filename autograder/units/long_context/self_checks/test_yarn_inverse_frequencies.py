"""Self-checks for task yarn_inverse_frequencies: yarn_inverse_frequencies. Run: pytest -k yarn_inverse_frequencies"""

import pytest
import torch

from checks import assert_close
from long_context import yarn_inverse_frequencies


def test_yarn_inverse_frequencies_give_one_float32_frequency_per_pair():
    got = yarn_inverse_frequencies(16, factor=4.0, trained_length=2048)
    assert isinstance(got, torch.Tensor) and got.shape == (8,) and got.dtype == torch.float32, \
        f"expected a float32 tensor of shape (dh/2,) = (8,), got {getattr(got, 'dtype', type(got))} " \
        f"{tuple(getattr(got, 'shape', ()))}"


# Worked values: (dh, the call's keywords, the frequencies, rtol, how they come about). Each id says what it shows.
WORKED = [
    pytest.param(8, {"factor": 4.0, "trained_length": 2048}, [1.0, 0.1, 0.00625, 0.00025], 1e-5,
                 "low = floor(pair(32)) = floor(1.008) = 1 and high = ceil(pair(1)) = ceil(2.513) = 3, so the ramp "
                 "over pairs 0..3 is [0, 0, 0.5, 1]: keep theta, blend, then theta / factor.",
                 id="the_worked_example"),
    pytest.param(16, {"factor": 4.0, "trained_length": 64},
                 [1.0, 0.2371708, 0.05, 0.007905694, 0.0025, 0.0007905694, 0.00025, 7.905694e-05], 1e-5,
                 "pair(32) = 16 ln(64 / (2 pi 32)) / (2 ln 10000) = -0.994 and pair(1) = 2.016: low = "
                 "max(floor(-0.994), 0) = 0 and high = ceil(2.016) = 3, so the ramp over pairs 0..3 is "
                 "[0, 1/3, 2/3, 1]: pair 0 keeps its frequency, pair 1 is 0.31623 * (2/3 + 1/12).",
                 id="clamp_the_ramp_at_pair_0_for_a_short_trained_length"),
    pytest.param(8, {"factor": 4.0, "trained_length": 8192}, [1.0, 0.1, 0.0075, 0.0005], 1e-5,
                 "pair(32) = 8 ln(8192 / (2 pi 32)) / (2 ln 10000) = 1.610 and pair(1) = 3.115: low = 1 and "
                 "high = min(ceil(3.115), dh - 1) = 4 (clamped at dh - 1 = 7, not at the last pair dh/2 - 1 = 3), "
                 "so the ramp over pairs 0..3 is [0, 0, 1/3, 2/3]: pair 3 is 0.001 * (1/3 + 2/3 / 4).",
                 id="clamp_high_at_dh_minus_1_for_a_long_trained_length"),
    pytest.param(8, {"factor": 4.0, "trained_length": 6}, [1.0, 0.025, 0.0025, 0.00025], 1e-5,
                 "pair(32) = -1.525 and pair(1) = -0.020: low = max(floor(-1.525), 0) = 0 and high = "
                 "ceil(-0.020) = 0. Bounds that meet get high = low + 0.001, so the ramp is a step, [0, 1, 1, 1]: "
                 "pair 0 keeps theta_0 = 1, where (0 - 0) / (0 - 0) would give NaN.",
                 id="make_a_step_where_the_bounds_meet"),
    pytest.param(8, {"factor": 4.0, "trained_length": 2048, "truncate": False}, [1.0, 0.1, 0.0050570, 0.00025],
                 1e-4, "low = 1.008 and high = 2.513, no floor or ceil: pair 2 is at (2 - 1.008) / 1.505 = 0.659 of "
                 "the ramp.", id="without_truncation_keep_fractional_bounds"),
    # The docstring asks beta_slow <= beta_fast: equal betas are valid, and the ramp becomes a step at one pair.
    *[pytest.param(16, {"factor": 4.0, "trained_length": 2048, "beta_fast": 8.0, "beta_slow": 8.0,
                        "truncate": truncate},
                   [1.0, 0.31622776, 0.1, 0.031622776, 0.0025, 0.00079056942, 0.00025, 7.9056942e-05], 1e-5,
                   "both bounds come from beta = 8: pair(8) = 16 ln(2048 / (2 pi 8)) / (2 ln 10000) = 3.220. "
                   "Truncated, low = 3 and high = 4; not truncated, low = high = 3.220 and the guard keeps them "
                   "apart. Either way pairs 0..3 keep theta_i = 10000^(-i/8) and pairs 4..7 are theta_i / 4.",
                   id=f"take_equal_betas_{'truncated' if truncate else 'not_truncated'}")
      for truncate in (True, False)],
]


@pytest.mark.parametrize("head_dim, kwargs, expected, rtol, hint", WORKED)
def test_yarn_inverse_frequencies_match_worked_values(head_dim, kwargs, expected, rtol, hint):
    call = f"yarn_inverse_frequencies({head_dim}, {', '.join(f'{key}={value}' for key, value in kwargs.items())})"
    try:
        got = yarn_inverse_frequencies(head_dim, **kwargs)
    except ValueError as error:
        pytest.fail(f"{call} raised ValueError ({error}): the docstring allows these arguments")
    assert_close(got, torch.tensor(expected), what=call, rtol=rtol, atol=0.0, hint=hint)


def test_yarn_inverse_frequencies_keep_the_fast_pairs_and_interpolate_the_slow_ones():
    plain = 10000.0 ** (-torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    got = yarn_inverse_frequencies(64, factor=8.0, trained_length=4096).double()
    assert_close(got[:3], plain[:3], what="pairs 0..2 (they turn hundreds of times within L)", rtol=1e-5, atol=0.0,
                 hint="pairs below low keep their frequency: is the ramp running the right way?")
    assert_close(got[-3:], plain[-3:] / 8, what="the last three pairs (less than one turn within L)", rtol=1e-5,
                 atol=0.0, hint="pairs above high are divided by the factor.")


@pytest.mark.parametrize("kwargs", [{"factor": 0.5}, {"beta_fast": 1.0, "beta_slow": 32.0}, {"beta_slow": 0.0},
                                    {"trained_length": 0}])
def test_yarn_inverse_frequencies_reject_what_the_docstring_calls_invalid(kwargs):
    call = {"factor": 4.0, "trained_length": 2048} | kwargs
    with pytest.raises(ValueError):
        yarn_inverse_frequencies(16, **call)
