"""Self-checks for task sinusoidal: sinusoidal_table. Run: pytest -k sinusoidal"""

import math

import pytest
import torch

from checks import assert_close
from positional_encodings import sinusoidal_table


def test_sinusoidal_returns_a_float32_table_of_shape_positions_by_d_model():
    table = sinusoidal_table(10, 8)
    assert isinstance(table, torch.Tensor), f"expected a torch.Tensor, got {type(table).__name__}"
    assert table.dtype == torch.float32, f"dtype should be float32 by default, got {table.dtype}"
    assert table.shape == (10, 8), f"shape should be (num_positions, d_model) = (10, 8), got {tuple(table.shape)}"


def test_sinusoidal_position_2_matches_the_worked_example():
    # d_model = 4: w_0 = 1, w_1 = 10000 ** (-2/4) = 0.01
    expected = torch.tensor([math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)])
    causes = [  # what a typical mistake gives here, and what to say of it
        (expected[[1, 0, 3, 2]], "sin and cos are swapped: column 2k is sin, column 2k+1 is cos."),
        (expected[[0, 2, 1, 3]], "the table is in halves [sin, sin | cos, cos]; interleave the pairs: sin, cos, "
                                 "sin, cos."),
        (torch.tensor([math.sin(2), math.cos(2), math.sin(0.2), math.cos(0.2)]),
         "w_1 came out as 0.1 = 10000 ** (-1/4): use the exponent 2k/d_model, not k/d_model."),
    ]
    assert_close(sinusoidal_table(3, 4)[2], expected, what="sinusoidal_table(3, 4)[2]", atol=1e-4, causes=causes,
                 hint="the worked example: w_k = 10000 ** (-2k / d_model), pairs interleaved (sin, cos).")


def test_sinusoidal_position_0_is_sin_0_cos_0():
    assert_close(sinusoidal_table(1, 6)[0], torch.tensor([0.0, 1.0] * 3), what="sinusoidal_table(1, 6)[0]",
                 atol=1e-6, hint="row 0 is position 0: sin(0) = 0 in even columns, cos(0) = 1 in odd ones.")


def test_sinusoidal_each_sin_cos_pair_has_norm_1():
    pairs = sinusoidal_table(50, 16).reshape(50, 8, 2)
    assert_close(pairs.norm(dim=-1), torch.ones(50, 8), what="the norm of each (sin, cos) pair", atol=1e-5,
                 hint="each pair must be sin and cos of the SAME angle t * w_k.")


def test_sinusoidal_shifting_position_rotates_each_pair():
    # PE(t + delta) is PE(t) with pair k rotated by the angle delta * w_k: a linear function of PE(t).
    d_model, delta = 8, 3
    table = sinusoidal_table(20, d_model).double()
    w = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    cos, sin = torch.cos(delta * w), torch.sin(delta * w)
    s, c = table[:-delta, 0::2], table[:-delta, 1::2]
    rotated = torch.stack((s * cos + c * sin, c * cos - s * sin), dim=-1).reshape(-1, d_model)
    assert_close(table[delta:], rotated, what=f"rows t + {delta} of the table", atol=1e-5, check_dtype=False,
                 hint="w_k = base ** (-2k / d_model) with t counted from 0, pairs interleaved (sin, cos).")


def test_sinusoidal_honours_dtype_and_base():
    table = sinusoidal_table(5, 4, base=100.0, dtype=torch.float64)
    assert table.dtype == torch.float64, f"dtype=torch.float64 was asked for, got {table.dtype}"
    expected = torch.tensor([math.sin(4), math.cos(4), math.sin(0.4), math.cos(0.4)], dtype=torch.float64)
    ignored = torch.tensor([math.sin(4), math.cos(4), math.sin(0.04), math.cos(0.04)], dtype=torch.float64)
    assert_close(table[4], expected, what="sinusoidal_table(5, 4, base=100.0)[4]", atol=1e-6,
                 causes=[(ignored, "the base argument is not used: this is the table of base 10000.")],
                 hint="w_k = base ** (-2k / d_model), with the base given.")


def test_sinusoidal_empty_table_has_zero_rows():
    table = sinusoidal_table(0, 8)
    assert tuple(table.shape) == (0, 8), f"sinusoidal_table(0, 8) should have shape (0, 8), got {tuple(table.shape)}"


@pytest.mark.parametrize("d_model", [7, 0, -2])
def test_sinusoidal_rejects_a_d_model_that_is_not_a_positive_even_number(d_model):
    with pytest.raises(ValueError):
        sinusoidal_table(4, d_model)


def test_sinusoidal_rejects_a_negative_number_of_positions():
    with pytest.raises(ValueError):
        sinusoidal_table(-1, 4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sinusoidal_gives_half_precision_when_asked(dtype):
    table = sinusoidal_table(12, 6, dtype=dtype)
    assert table.dtype == dtype, f"dtype={dtype} was asked for, got {table.dtype}"
    position = torch.arange(12, dtype=torch.float64)[:, None] * 10000.0 ** (-torch.arange(0, 6, 2) / 6)
    expected = torch.stack((position.sin(), position.cos()), -1).reshape(12, 6)
    assert_close(table.double(), expected, what=f"sinusoidal_table(12, 6, dtype={dtype})", atol=1e-2,
                 hint="build the angles in float32 or float64, round to the dtype asked for once, at the end.")
