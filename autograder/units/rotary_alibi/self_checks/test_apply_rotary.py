"""Self-checks for task apply_rotary: apply_rotary. Run: pytest -k apply_rotary"""

import math

import pytest
import torch

from checks import assert_close
from rotary_alibi import apply_rotary


def test_apply_rotary_keeps_shape_and_dtype_and_leaves_x_alone():
    x = torch.randn(2, 3, 5, 8)
    before = x.clone()
    out = apply_rotary(x, torch.arange(5))
    assert isinstance(out, torch.Tensor) and out.shape == x.shape and out.dtype == x.dtype, \
        f"expected a float32 tensor of shape {tuple(x.shape)}, got {getattr(out, 'dtype', type(out))} {tuple(getattr(out, 'shape', ()))}"
    assert torch.equal(x, before), "x was changed in place: compute into a new tensor"


def test_apply_rotary_turns_one_pair_by_its_angle():
    # head_dim 2: one pair, theta_0 = 1; position 1 turns (1, 0) to (cos 1, sin 1), counter-clockwise
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    expected = torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)]])
    causes = [(torch.tensor([[1.0, 0.0], [math.cos(1), -math.sin(1)]]),
               "the rotation turns clockwise: a' = a cos - b sin, b' = a sin + b cos.")]
    assert_close(apply_rotary(x, torch.arange(2)), expected, what="apply_rotary on (1, 0) at positions 0 and 1",
                 atol=1e-6, causes=causes)


def test_apply_rotary_keeps_the_length_of_every_pair():
    x = torch.randn(7, 16, dtype=torch.float64)
    for interleaved in (True, False):
        out = apply_rotary(x, torch.arange(7), interleaved=interleaved)
        pairs = (lambda t: t.reshape(7, 8, 2)) if interleaved else (lambda t: torch.stack(t.chunk(2, -1), -1))
        assert_close(pairs(out).norm(dim=-1), pairs(x).norm(dim=-1), what=f"pair lengths (interleaved={interleaved})",
                     atol=1e-9, hint="a rotation moves each pair on its circle: (2i, 2i+1) interleaved, "
                                     "(i, i + dh/2) for rotate half.")


def test_apply_rotary_layouts_differ_by_a_reordering_of_the_coordinates():
    x = torch.randn(4, 8, dtype=torch.float64)
    order = torch.tensor([0, 4, 1, 5, 2, 6, 3, 7])  # halves (i, i + 4) laid out as neighbours
    half = apply_rotary(x, torch.arange(4), interleaved=False)
    assert_close(apply_rotary(x[:, order], torch.arange(4))[:, order.argsort()], half,
                 what="interleaved on reordered x, against rotate half", atol=1e-9)


def test_apply_rotary_uses_the_positions_it_is_given():
    x = torch.randn(3, 8, dtype=torch.float64)
    shifted = apply_rotary(x, torch.arange(10, 13))
    first = apply_rotary(x, torch.arange(3))
    assert not torch.allclose(shifted, first), "positions 10..12 must turn the rows further than 0..2"


def test_apply_rotary_takes_positions_of_their_own_for_each_sequence():
    x = torch.randn(2, 3, 4, 8, dtype=torch.float64)
    positions = torch.tensor([[[0, 1, 2, 3]], [[50, 51, 52, 53]]])  # (B, 1, L): the second sequence from 50 on
    got = apply_rotary(x, positions)
    assert_close(got[1], apply_rotary(x[1], torch.arange(50, 54)), what="sequence 1 of the batch, at 50..53",
                 atol=1e-9, hint="positions of shape (B, 1, L) broadcast against x of shape (B, H, L, dh).")


def test_apply_rotary_rejects_an_odd_head_dim_and_positions_of_the_wrong_length():
    with pytest.raises(ValueError):
        apply_rotary(torch.randn(4, 7), torch.arange(4))  # dh = 7: coordinates turn in pairs
    with pytest.raises(ValueError):
        apply_rotary(torch.randn(4, 8), torch.arange(3))  # 4 rows, 3 positions


def _turned(x, t, base, interleaved):
    """The docstring's rotation written out in float64 for one row x (dh,) at position t: the expected output."""
    dh = x.shape[-1]
    theta = base ** (-torch.arange(0, dh, 2, dtype=torch.float64) / dh)  # (dh/2,)
    cos, sin = torch.cos(t * theta), torch.sin(t * theta)
    a, b = (x[0::2], x[1::2]) if interleaved else (x[: dh // 2], x[dh // 2:])
    first, second = a * cos - b * sin, a * sin + b * cos
    return torch.stack((first, second), -1).flatten() if interleaved else torch.cat((first, second))


@pytest.mark.parametrize("interleaved", [True, False])
def test_apply_rotary_turns_pair_i_by_theta_i_in_both_layouts_with_the_base_given(interleaved):
    x = torch.arange(1.0, 9.0, dtype=torch.float64)[None, :]  # one row, dh = 8
    expected = _turned(x[0], 3.0, 100.0, interleaved)[None, :]
    swapped = _turned(x[0], 3.0, 100.0, not interleaved)[None, :]
    assert_close(apply_rotary(x, torch.tensor([3]), 100.0, interleaved=interleaved), expected,
                 what=f"apply_rotary([1..8] at position 3, base=100.0, interleaved={interleaved})", atol=1e-9,
                 causes=[(swapped, "the other layout is used: interleaved=True pairs (2i, 2i + 1), "
                                   "interleaved=False pairs (i, i + dh/2).")],
                 hint="pair i turns by t * theta_i, theta_i = base ** (-2i / dh), in both layouts (rotate half "
                      "too: cos and sin of pair i go to coordinates i and i + dh/2).")


def test_apply_rotary_keeps_float64_precision_far_from_position_0():
    x = torch.tensor([[0.6, -1.3, 2.2, 0.4]], dtype=torch.float64)
    got = apply_rotary(x, torch.tensor([2717]), interleaved=False)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64, \
        f"float64 x should give float64, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got, _turned(x[0], 2717.0, 10000.0, False)[None, :], what="apply_rotary of float64 x at position 2717",
                 atol=1e-10, rtol=1e-9, hint="float64 x is turned in float64: a float32 step (x.float(), float32 "
                                              "angles) costs 1e-4 here.")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_apply_rotary_returns_half_precision_for_half_precision_input(dtype):
    x = torch.randn(2, 3, 6, 8).to(dtype)
    positions = torch.arange(700, 706)
    got = apply_rotary(x, positions, interleaved=False)
    assert isinstance(got, torch.Tensor) and got.dtype == dtype, \
        f"{dtype} x should give {dtype}, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got.double(), apply_rotary(x.double(), positions, interleaved=False), what=f"{dtype} x at "
                 "positions 700..705, against the same x in float64", atol=0.05, rtol=0.02,
                 hint="compute in float32 (angles included), then cast back to x's dtype once.")


def test_apply_rotary_acts_on_the_last_two_axes_whatever_the_leading_ones():
    x = torch.randn(3, 1, 2, 5, 6, dtype=torch.float64)
    positions = torch.arange(9, 14)
    got = apply_rotary(x, positions)
    assert_close(got[2, 0, 1], apply_rotary(x[2, 0, 1], positions), what="row block [2, 0, 1] of a 5-D x",
                 atol=1e-12, hint="any number of leading axes: positions (L,) broadcast against (..., L, dh).")
