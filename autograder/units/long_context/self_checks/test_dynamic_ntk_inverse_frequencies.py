"""Self-checks for task dynamic_ntk_inverse_frequencies: dynamic_ntk_inverse_frequencies.
Run: pytest -k dynamic_ntk_inverse_frequencies"""

import math

import pytest
import torch

from checks import assert_close
from long_context import dynamic_ntk_inverse_frequencies


def test_dynamic_ntk_inverse_frequencies_give_one_float32_frequency_per_pair():
    got = dynamic_ntk_inverse_frequencies(16, length=4096, trained_length=2048, factor=2.0)
    assert isinstance(got, torch.Tensor) and got.shape == (8,) and got.dtype == torch.float32, \
        f"expected a float32 tensor of shape (dh/2,) = (8,), got {getattr(got, 'dtype', type(got))} " \
        f"{tuple(getattr(got, 'shape', ()))}"


def test_dynamic_ntk_inverse_frequencies_match_the_worked_example_past_the_trained_length():
    assert_close(dynamic_ntk_inverse_frequencies(4, length=4096, trained_length=2048, factor=2.0),
                 torch.tensor([1.0, 1 / 300]), what="dynamic_ntk_inverse_frequencies(4, length=4096, "
                 "trained_length=2048, factor=2.0)", rtol=1e-5, atol=0.0,
                 hint="s = 2 * 4096 / 2048 - (2 - 1) = 3; base' = 10000 * 3 ** (4 / 2) = 90000.")


def test_dynamic_ntk_inverse_frequencies_scale_between_whole_multiples_of_the_trained_length():
    assert_close(dynamic_ntk_inverse_frequencies(16, length=3000, trained_length=2048, factor=2.0),
                 torch.tensor([1.0, 0.2878831, 0.08287667, 0.02385879, 0.006868542, 0.001977337, 0.0005692419,
                               0.0001638751]),
                 what="dynamic_ntk_inverse_frequencies(16, length=3000, trained_length=2048, factor=2.0)", rtol=1e-5,
                 atol=0.0, hint="s = 2 * 3000 / 2048 - (2 - 1) = 1.9296875, a fraction: length / trained_length is a "
                                "true division, not a whole number of trained lengths.")


@pytest.mark.parametrize("length", [1, 1000, 1800, 2048])
def test_dynamic_ntk_inverse_frequencies_are_unscaled_up_to_the_trained_length(length):
    plain = (10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)).float()
    assert_close(dynamic_ntk_inverse_frequencies(8, length=length, trained_length=2048, factor=4.0), plain,
                 what=f"dynamic_ntk_inverse_frequencies(8, length={length}, trained_length=2048, factor=4.0)",
                 rtol=1e-5, atol=0.0, hint="s = max(1, ...): up to the trained length nothing is scaled.")


@pytest.mark.parametrize("kwargs", [{"factor": 0.5}, {"factor": math.nan}, {"length": 0}, {"trained_length": 0},
                                    # invalid at any length, the short ones (no scaling there) included
                                    {"head_dim": 15, "length": 100}, {"head_dim": 2, "length": 100},
                                    {"base": 1.0, "length": 100}])
def test_dynamic_ntk_inverse_frequencies_reject_what_the_docstring_calls_invalid(kwargs):
    call = {"head_dim": 16, "length": 4096, "trained_length": 2048, "factor": 2.0} | kwargs
    with pytest.raises(ValueError):
        dynamic_ntk_inverse_frequencies(call.pop("head_dim"), **call)
