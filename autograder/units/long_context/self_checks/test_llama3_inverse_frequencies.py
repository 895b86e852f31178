"""Self-checks for task llama3_inverse_frequencies: llama3_inverse_frequencies.
Run: pytest -k llama3_inverse_frequencies"""

import math

import pytest
import torch

from checks import assert_close
from long_context import llama3_inverse_frequencies


def test_llama3_inverse_frequencies_give_one_float32_frequency_per_pair():
    got = llama3_inverse_frequencies(128)
    assert isinstance(got, torch.Tensor) and got.shape == (64,) and got.dtype == torch.float32, \
        f"expected a float32 tensor of shape (dh/2,) = (64,), got {getattr(got, 'dtype', type(got))} " \
        f"{tuple(getattr(got, 'shape', ()))}"


def test_llama3_inverse_frequencies_match_the_worked_example():
    assert_close(llama3_inverse_frequencies(8), torch.tensor([1.0, 0.037606, 0.00052485, 6.6479e-06]),
                 what="llama3_inverse_frequencies(8)", rtol=1e-4, atol=0.0,
                 hint="wavelengths 6.28 and 167.1 are below 8192 / 4 (kept), 118144 above 8192 / 1 (divided by 8), "
                      "and 4442.9 between: smooth = (8192 / 4442.9 - 1) / 3 = 0.281.")


def test_llama3_inverse_frequencies_use_every_setting_passed():
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    wavelength = 2 * math.pi / theta
    smooth = (1024 / wavelength - 2.0) / (8.0 - 2.0)
    expected = torch.where(wavelength > 1024 / 2.0, theta / 4,
                           torch.where(wavelength < 1024 / 8.0, theta, (1 - smooth) * theta / 4 + smooth * theta))
    assert_close(llama3_inverse_frequencies(16, base=10000.0, factor=4.0, low_freq_factor=2.0, high_freq_factor=8.0,
                                            trained_length=1024), expected.float(),
                 what="llama3_inverse_frequencies(16, base=10000.0, factor=4.0, low_freq_factor=2.0, "
                      "high_freq_factor=8.0, trained_length=1024)", rtol=1e-5, atol=0.0,
                 hint="each argument enters: the thresholds are L / high_freq_factor and L / low_freq_factor.")


@pytest.mark.parametrize("kwargs", [{"factor": 0.5}, {"low_freq_factor": 4.0, "high_freq_factor": 1.0},
                                    {"low_freq_factor": 2.0, "high_freq_factor": 2.0}, {"low_freq_factor": 0.0},
                                    {"trained_length": 0}, {"head_dim": 0}, {"head_dim": -4}, {"head_dim": 63}])
def test_llama3_inverse_frequencies_reject_what_the_docstring_calls_invalid(kwargs):
    call = {"head_dim": 64} | kwargs
    with pytest.raises(ValueError):
        llama3_inverse_frequencies(call.pop("head_dim"), **call)
