"""Self-checks for task sincos_2d_table: sincos_2d_table. Run: pytest -k sincos_2d_table"""

import math

import pytest
import torch

from checks import assert_close, assert_raises
from vision_positions import sincos_2d_table

AXES = ("token", "channel")
CONVENTION = ("Patch n = r * grid_w + c gets [half(r), half(c)]: the row's half first, then the column's; each half "
              "is [sin(p w_0) .. sin(p w_{dim/4-1}), cos(p w_0) .. cos(p w_{dim/4-1})], all its sines first, with "
              "w_k = base ** (-4k / dim); prefix_tokens rows of zeros come before the patches.")


def _half(position, dim, base):
    """The 1D table of one position over dim / 2 channels, written out: its sines, then its cosines."""
    frequencies = [base ** (-4 * k / dim) for k in range(dim // 4)]  # w_k, k = 0 .. dim/4 - 1
    return [math.sin(position * w) for w in frequencies] + [math.cos(position * w) for w in frequencies]


def _expected(grid_h, grid_w, dim, base=10000.0, prefix_tokens=0, dtype=torch.float32):
    """The table as the docstring writes it, patch by patch in float64, rounded once to ``dtype``."""
    rows = [[0.0] * dim for _ in range(prefix_tokens)]
    rows += [_half(r, dim, base) + _half(c, dim, base) for r in range(grid_h) for c in range(grid_w)]
    return torch.tensor(rows, dtype=torch.float64).to(dtype)  # (prefix + h*w, dim)


def _atol(grid_h, grid_w):
    """float32's error on the angle p * w_k grows with the position p; 1e-5 covers the roundings of sin and cos."""
    return 1e-5 + 3e-7 * (max(grid_h, grid_w) - 1)


def test_sincos_2d_table_has_one_float32_row_per_patch():
    got = sincos_2d_table(3, 5, 8)
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (15, 8) and got.dtype == torch.float32, \
        (f"expected a float32 tensor of shape (grid_h * grid_w, dim) = (15, 8), got "
         f"{getattr(got, 'dtype', type(got).__name__)} {tuple(getattr(got, 'shape', ()))}")


def test_sincos_2d_table_matches_the_worked_example():
    expected = torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, math.sin(1.0), math.cos(1.0)]])
    assert_close(sincos_2d_table(1, 2, 4), expected, what="sincos_2d_table(1, 2, 4)", atol=1e-6, axes=AXES,
                 hint="one frequency per axis (w_0 = 1): patch 1 is at row 0, column 1, so its row's half is "
                      "[sin 0, cos 0] and its column's [sin 1, cos 1].")


def test_sincos_2d_table_puts_the_row_first_and_the_column_second_on_an_oblong_grid():
    # 3 rows of 5 columns, dim 16: four frequencies an axis, so the order inside a half and the exponent show.
    assert_close(sincos_2d_table(3, 5, 16), _expected(3, 5, 16), what="sincos_2d_table(3, 5, 16)", atol=_atol(3, 5),
                 rtol=0.0, axes=AXES, hint=CONVENTION)


def test_sincos_2d_table_gives_the_row_half_to_the_row_and_the_column_half_to_the_column():
    # A property of the layout: along a row of the grid the row's half stays the same, down a column the column's.
    got = sincos_2d_table(4, 6, 8)
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (24, 8), \
        f"expected shape (24, 8), got {tuple(getattr(got, 'shape', ()))}"
    grid = got.reshape(4, 6, 8)  # (r, c, channel): patch n = r * 6 + c
    row_half, column_half = grid[..., :4], grid[..., 4:]
    assert torch.allclose(row_half, row_half[:, :1], atol=1e-6), \
        ("the first half (channels 0 .. dim/2 - 1) changes along a row of the grid (from one column to the next): "
         "it must encode the patch's row r = n // grid_w only")
    assert torch.allclose(column_half, column_half[:1], atol=1e-6), \
        ("the second half (channels dim/2 .. dim - 1) changes down a column of the grid (from one row to the "
         "next): it must encode the patch's column c = n % grid_w only")


def test_sincos_2d_table_pairs_channel_k_with_channel_k_plus_a_quarter():
    # In each half, channel k is sin(p w_k) and channel k + dim/4 is cos(p w_k): the two lie on the unit circle.
    got = sincos_2d_table(3, 4, 16).double()
    quarter = 4
    for name, half in (("row", got[:, :8]), ("column", got[:, 8:])):
        radius = half[:, :quarter] ** 2 + half[:, quarter:] ** 2  # (patches, dim/4)
        assert_close(radius, torch.ones_like(radius), what=f"sin^2 + cos^2 of the {name}'s half, channel k with "
                     f"channel k + dim/4, in sincos_2d_table(3, 4, 16)", atol=1e-5, check_dtype=False,
                     hint="the split layout: a half's first dim/4 channels are its sines and its last dim/4 the "
                          "cosines of the same angles (not sin, cos pairs interleaved).")


def test_sincos_2d_table_uses_the_base_given_and_computes_in_float64():
    assert_close(sincos_2d_table(2, 3, 12, 100.0, dtype=torch.float64), _expected(2, 3, 12, 100.0, dtype=torch.float64),
                 what="sincos_2d_table(2, 3, 12, 100.0, dtype=torch.float64)", atol=1e-12, rtol=0.0, axes=AXES,
                 hint="w_k = base ** (-4k / dim) with the base passed; a float64 table is computed in float64 (a "
                      "float32 step costs 1e-7). " + CONVENTION)


def test_sincos_2d_table_puts_prefix_rows_of_zeros_first():
    # A class token and a register: two rows of zeros, then the 2 x 3 grid.
    assert_close(sincos_2d_table(2, 3, 8, prefix_tokens=2), _expected(2, 3, 8, prefix_tokens=2),
                 what="sincos_2d_table(2, 3, 8, prefix_tokens=2)", atol=_atol(2, 3), rtol=0.0, axes=AXES,
                 hint="prefix_tokens rows of zeros come first (a class token has no place on the grid), then the "
                      "patches, prefix_tokens + grid_h * grid_w rows in all.")


@pytest.mark.parametrize("grid_h, grid_w", [(1, 5), (4, 1), (1, 1)])
def test_sincos_2d_table_handles_a_grid_of_one_row_or_one_column(grid_h, grid_w):
    assert_close(sincos_2d_table(grid_h, grid_w, 8, prefix_tokens=1), _expected(grid_h, grid_w, 8, prefix_tokens=1),
                 what=f"sincos_2d_table({grid_h}, {grid_w}, 8, prefix_tokens=1)", atol=_atol(grid_h, grid_w),
                 rtol=0.0, axes=AXES, hint="a side of 1 is a grid like any other: look for a squeeze(), or an axis "
                                           "dropped when its length is 1. " + CONVENTION)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sincos_2d_table_rounds_to_half_precision_once(dtype):
    # 13 x 2 patches, dim 24: angles p * w_k computed in a half dtype are rounded to its steps (between 2 and 4,
    # 1/512 in float16 and 1/64 in bfloat16), which moves sin and cos by more than their own last bit.
    got = sincos_2d_table(13, 2, 24, dtype=dtype)
    assert isinstance(got, torch.Tensor) and got.dtype == dtype, \
        f"dtype={dtype} should give a {dtype} table, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got, _expected(13, 2, 24, dtype=dtype), what=f"sincos_2d_table(13, 2, 24, dtype={dtype})",
                 atol=torch.finfo(dtype).eps / 2 + _atol(13, 2) - 1e-5, rtol=0.0, axes=AXES,
                 hint="compute the angles in float64 (or float32) and round to the dtype asked for once, at the end.")


def test_sincos_2d_table_is_made_on_the_device_asked_for():
    # The meta device holds no values and needs no GPU, and refuses to be mixed with the CPU, as CUDA does.
    got = sincos_2d_table(3, 4, 8, device=torch.device("meta"), dtype=torch.float64)
    assert isinstance(got, torch.Tensor) and got.device.type == "meta" and tuple(got.shape) == (12, 8) \
        and got.dtype == torch.float64, \
        (f"expected a (12, 8) float64 table on the meta device, got {getattr(got, 'dtype', type(got).__name__)} "
         f"{tuple(getattr(got, 'shape', ()))} on {getattr(got, 'device', None)}: make every tensor with "
         "device=device")


@pytest.mark.parametrize("args, kwargs, why", [
    ((2, 3, 14), {}, "dim = 14 is even but not a multiple of 4: two axes, each of sine-cosine pairs"),
    ((2, 3, 2), {}, "dim = 2 is not a multiple of 4: each axis needs a sine and a cosine"),
    ((2, 3, -4), {}, "dim must be positive"),
    ((0, 3, 12), {}, "grid_h = 0: a grid needs at least one row"),
    ((2, 0, 12), {}, "grid_w = 0: a grid needs at least one column"),
    ((2, 3, 12), {"prefix_tokens": -2}, "prefix_tokens = -2 is negative"),
], ids=["dim 14", "dim 2", "dim -4", "no row", "no column", "negative prefix"])
def test_sincos_2d_table_rejects_what_the_docstring_calls_invalid(args, kwargs, why):
    assert_raises(ValueError, sincos_2d_table, *args, hint=why, **kwargs)
