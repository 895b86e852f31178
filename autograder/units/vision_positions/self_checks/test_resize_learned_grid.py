"""Self-checks for task resize_learned_grid: resize_learned_grid. Run: pytest -k resize_learned_grid"""

import math

import pytest
import torch

from checks import assert_close, assert_raises
from vision_positions import resize_learned_grid

AXES = ("token", "channel")
CONVENTION = ("The patch rows, patch n = r * old_w + c at row r and column c, are an image (1, dim, old_h, old_w), "
              "resized to size=(new_h, new_w) with the mode and antialias given and align_corners=False, in "
              "float32, and written back row by row after the prefix rows, which are kept as they are.")


# --- the resampling written out: one matrix of weights per axis (torch's interpolate in float64, independently) ---

def _cubic(x, a):
    """The cubic convolution kernel with parameter a: a = -0.75 (torch's plain bicubic), -0.5 (PIL's, antialiased)."""
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def _weights(old, new, mode, antialias):
    """(new, old) float64: row i holds the weights of the old pixels in new pixel i along one axis. A pixel is an
    area, its centre at (i + 0.5) * old / new in old pixels (align_corners=False)."""
    scale = old / new
    matrix = torch.zeros(new, old, dtype=torch.float64)
    for i in range(new):
        centre = scale * (i + 0.5)  # in old pixels, counted from the left edge
        if antialias:  # PIL's filter: stretched over the area a new pixel covers where the axis shrinks, normalised
            stretch = max(scale, 1.0)
            reach = (1.0 if mode == "bilinear" else 2.0) * stretch
            taps = range(max(int(centre - reach + 0.5), 0), min(int(centre + reach + 0.5), old))
            for j in taps:
                x = (j + 0.5 - centre) / stretch
                matrix[i, j] = max(0.0, 1 - abs(x)) if mode == "bilinear" else _cubic(x, -0.5)
            matrix[i] /= matrix[i].sum()
        elif mode == "bilinear":  # the two nearest centres, the coordinate clamped at the first one
            x = max(centre - 0.5, 0.0)
            low = int(x)
            matrix[i, low] += 1 - (x - low)
            matrix[i, min(low + 1, old - 1)] += x - low
        else:  # four taps, a = -0.75, the edge pixels repeated past the border
            x = centre - 0.5
            low = math.floor(x)
            t = x - low
            for j, w in zip(range(low - 1, low + 3), (_cubic(t + 1, -0.75), _cubic(t, -0.75), _cubic(1 - t, -0.75),
                                                      _cubic(2 - t, -0.75))):
                matrix[i, min(max(j, 0), old - 1)] += w
    return matrix


def _expected(table, old_grid, new_grid, prefix_tokens=1, mode="bicubic", antialias=True):
    """out[prefix + R * new_w + C] = sum over (r, c) of W_h[R, r] W_w[C, c] table[prefix + r * old_w + c], in float64,
    the prefix rows as they are."""
    (old_h, old_w), (new_h, new_w) = old_grid, new_grid
    mixing = torch.kron(_weights(old_h, new_h, mode, antialias), _weights(old_w, new_w, mode, antialias))
    patches = mixing @ table[prefix_tokens:].double()  # (new_h * new_w, dim)
    return torch.cat((table[:prefix_tokens].double(), patches)).to(table.dtype)


def _atol(table, old_grid, new_grid, prefix_tokens):
    """float32's error, per channel: a few 1e-7 of the channel's largest value for each pixel of the largest side."""
    largest = table[prefix_tokens:].double().abs().amax(dim=0, keepdim=True)  # (1, dim)
    return 1e-6 * (4 + max(*old_grid, *new_grid)) * largest


def _check(table, old_grid, new_grid, hint=CONVENTION, rtol=0.0, **kwargs):
    """resize_learned_grid(table, old_grid, new_grid, **kwargs) against the weights written out; what it returned."""
    given = {"prefix_tokens": 1, "mode": "bicubic", "antialias": True} | kwargs
    shown = "".join(f", {key}={value!r}" for key, value in kwargs.items())
    what = f"resize_learned_grid(table {tuple(table.shape)} {table.dtype}, {old_grid}, {new_grid}{shown})"
    got = resize_learned_grid(table, old_grid, new_grid, **kwargs)
    assert_close(got, _expected(table, old_grid, new_grid, **given), what=what,
                 atol=_atol(table, old_grid, new_grid, given["prefix_tokens"]), rtol=rtol, axes=AXES, hint=hint)
    return got


def test_resize_learned_grid_gives_prefix_plus_new_patches_rows_and_leaves_the_table_alone():
    table = torch.randn(1 + 3 * 4, 2)
    before = table.clone()
    got = resize_learned_grid(table, (3, 4), (5, 6))
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (1 + 5 * 6, 2) and got.dtype == torch.float32, \
        (f"expected a float32 tensor of shape (prefix_tokens + new_h * new_w, dim) = (31, 2), got "
         f"{getattr(got, 'dtype', type(got).__name__)} {tuple(getattr(got, 'shape', ()))}")
    assert torch.equal(table, before), "the table was changed in place: build the result in a new tensor"


def test_resize_learned_grid_stays_on_the_table_s_device():
    # The meta device holds no values and needs no GPU, and refuses to be mixed with the CPU, as CUDA does.
    table = torch.empty(1 + 3 * 3, 8, device="meta")
    got = resize_learned_grid(table, (3, 3), (5, 4))
    assert isinstance(got, torch.Tensor) and got.device.type == "meta" and tuple(got.shape) == (1 + 5 * 4, 8) \
        and got.dtype == torch.float32, \
        (f"expected a (21, 8) float32 table on the meta device, got {getattr(got, 'dtype', type(got).__name__)} "
         f"{tuple(getattr(got, 'shape', ()))} on {getattr(got, 'device', None)}: make every new tensor on "
         "table.device")


def test_resize_learned_grid_matches_the_worked_example():
    got = resize_learned_grid(torch.tensor([[0.0], [1.0]]), (1, 2), (1, 4), prefix_tokens=0, mode="bilinear")
    assert_close(got, torch.tensor([[0.0], [0.25], [0.75], [1.0]]), what="resize_learned_grid([[0.], [1.]], (1, 2), "
                 "(1, 4), prefix_tokens=0, mode='bilinear')", atol=1e-6, axes=AXES,
                 hint="align_corners=False: the new pixel centres lie at 0.25, 0.75, 1.25 and 1.75 old pixels, "
                      "clamped to the old centres 0.5 and 1.5 at the borders.")


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("old_grid, new_grid", [((2, 3), (4, 5)), ((5, 4), (3, 2)), ((3, 5), (4, 2))],
                         ids=["larger", "smaller", "one side up one down"])
def test_resize_learned_grid_resizes_the_patches_as_an_image(old_grid, new_grid, mode, antialias):
    # No prefix, oblong grids whose four sides and dim all differ: a row taken for a column shows.
    table = torch.randn(old_grid[0] * old_grid[1], 7)
    _check(table, old_grid, new_grid, prefix_tokens=0, mode=mode, antialias=antialias)


def test_resize_learned_grid_defaults_to_antialiased_bicubic_and_one_class_token():
    table = torch.randn(1 + 4 * 3, 3)
    _check(table, (4, 3), (6, 5), hint="mode defaults to 'bicubic', antialias to True (F.interpolate's own defaults "
                                       "are 'nearest' and False), prefix_tokens to 1. " + CONVENTION)


@pytest.mark.parametrize("prefix_tokens", [0, 2, 5])
def test_resize_learned_grid_keeps_the_prefix_rows_as_they_are(prefix_tokens):
    table = torch.randn(prefix_tokens + 3 * 2, 4)
    table[:prefix_tokens] += 10.0  # prefix rows far from the patches': one resampled with them shows
    got = resize_learned_grid(table, (3, 2), (5, 4), prefix_tokens=prefix_tokens, mode="bilinear")
    assert_close(got, _expected(table, (3, 2), (5, 4), prefix_tokens, "bilinear"),
                 what=f"resize_learned_grid(table, (3, 2), (5, 4), prefix_tokens={prefix_tokens}, mode='bilinear')",
                 atol=_atol(table, (3, 2), (5, 4), prefix_tokens), axes=AXES,
                 hint="out = [table[:prefix_tokens], the resized rows]: the prefix rows first and unchanged (they have "
                      "no place on the grid), the patches read from table[prefix_tokens:] (beware table[-0:], the "
                      "whole table).")


def test_resize_learned_grid_keeps_a_table_that_is_the_same_everywhere():
    # Interpolation weights sum to 1: patches that all hold one vector resize to that vector, in every mode.
    table = torch.cat((torch.full((1, 3), -4.0), torch.tensor([[1.0, -2.0, 0.5]]).expand(4 * 5, 3)))
    for mode in ("bicubic", "bilinear"):
        for antialias in (True, False):
            got = resize_learned_grid(table, (4, 5), (7, 3), mode=mode, antialias=antialias)
            expected = torch.cat((table[:1], torch.tensor([[1.0, -2.0, 0.5]]).expand(7 * 3, 3)))
            assert_close(got, expected, what=f"a class token of -4s and patches all [1, -2, 0.5], (4, 5) -> (7, 3), "
                         f"mode={mode!r}, antialias={antialias}", atol=1e-5, axes=AXES,
                         hint="every new patch is a weighted mean of old patches, so it is [1, -2, 0.5] again; the "
                              "class token's row is kept apart, never resampled with the patches.")


def test_resize_learned_grid_gives_the_same_grid_back_unchanged():
    table = torch.randn(2 + 3 * 4, 5, dtype=torch.float64)
    got = resize_learned_grid(table, (3, 4), (3, 4), prefix_tokens=2)
    assert_close(got, table, what="resize_learned_grid of a float64 table at the same grid (3, 4)", atol=0.0,
                 rtol=0.0, axes=AXES, hint="the same grid gives the table back, unchanged, bit for bit (table.clone(); "
                                           "an interpolation through float32 rounds a float64 table).")


def test_resize_learned_grid_copies_float64_prefix_rows_bit_for_bit():
    table = torch.randn(1 + 2 * 3, 4, dtype=torch.float64)
    got = _check(table, (2, 3), (3, 5), mode="bilinear", antialias=False,
                 hint="a float64 table gives float64; the prefix rows keep its values (table[:prefix_tokens] as it "
                      "is), only the interpolation runs in float32. " + CONVENTION)
    assert torch.equal(got[:1], table[:1]), \
        "the class token's row changed in its last bits: it is copied as it is, never rounded through float32"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_resize_learned_grid_resizes_half_precision_through_float32(dtype):
    # Plain bicubic from 4 x 6 to 7 x 9: weights with many bits, which a resize in the half dtype rounds away.
    table = torch.randn(1 + 4 * 6, 2).to(dtype)
    _check(table, (4, 6), (7, 9), antialias=False, rtol=torch.finfo(dtype).eps,
           hint=f"a {dtype} table gives {dtype}: turn the patch rows to float32, interpolate, and round back to the "
                "table's dtype once (timm's resample_abs_pos_embed does). " + CONVENTION)


@pytest.mark.parametrize("shape, old_grid, new_grid, kwargs, why", [
    ((2, 7, 3), (2, 3), (4, 4), {}, "the table is (2, 7, 3): it must be two-dimensional"),
    ((6, 3), (2, 3), (4, 4), {}, "6 rows, but prefix_tokens + old_h * old_w = 1 + 2 * 3 = 7"),
    ((7, 3), (2, 3), (4, 4), {"prefix_tokens": 3}, "7 rows, but 3 + 2 * 3 = 9"),
    ((1, 3), (2, 0), (4, 4), {}, "old_grid has a side of 0"),
    ((7, 3), (2, 3), (0, 4), {}, "new_grid has a side of 0"),
    ((5, 3), (2, 3), (4, 4), {"prefix_tokens": -1}, "prefix_tokens = -1 is negative"),
    ((7, 3), (2, 3), (4, 4), {"mode": "lanczos"}, "mode 'lanczos' is neither 'bicubic' nor 'bilinear' (F.interpolate "
                                                 "would resize with it: the check is yours to write)"),
], ids=["3-D table", "rows", "rows with 2 prefix tokens", "old side 0", "new side 0", "negative prefix", "mode"])
def test_resize_learned_grid_rejects_what_the_docstring_calls_invalid(shape, old_grid, new_grid, kwargs, why):
    assert_raises(ValueError, resize_learned_grid, torch.randn(*shape), old_grid, new_grid, hint=why, **kwargs)
