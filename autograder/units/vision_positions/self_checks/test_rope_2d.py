"""Self-checks for task rope_2d: rope_2d_angles and apply_rope_2d. Run: pytest -k rope_2d"""

import math

import pytest
import torch

from checks import assert_close, assert_raises
from vision_positions import apply_rope_2d, rope_2d_angles

ANGLES = ("patch", "pair")
CONVENTION = ("Patch n = r * grid_w + c; pair i of the first dh/4 turns by r * theta_i, pair dh/4 + i by "
              "c * theta_i, theta_i = base ** (-4i / dh) (base 100 by default).")
TURNED = ("The first half of the head (channels 0 .. dh/2 - 1) is turned by the patch's row, the second by its "
          "column, each half in interleaved pairs (2i, 2i + 1) by p * theta_i, theta_i = base ** (-4i / dh); a' = "
          "a cos - b sin, b' = a sin + b cos; the prefix tokens come back as they are, and the patches after them "
          "count from 0, row by row.")


def _angle(grid_h, grid_w, head_dim, base=100.0):
    """(h*w, dh/2) float64: the angle of each pair of each patch, written out."""
    quarter = head_dim // 4
    theta = [base ** (-4 * i / head_dim) for i in range(quarter)]
    return torch.tensor([[r * t for t in theta] + [c * t for t in theta] for r in range(grid_h) for c in range(grid_w)],
                        dtype=torch.float64).reshape(grid_h * grid_w, head_dim // 2)


def _turned(x, grid_h, grid_w, base=100.0, prefix_tokens=0):
    """apply_rope_2d written out in float64: each token's pair j (channels 2j, 2j + 1) turned by its angle j."""
    wide = x.double().clone()
    angle = _angle(grid_h, grid_w, x.shape[-1], base)  # (h*w, dh/2): pair j of the head, row half then column half
    for n in range(grid_h * grid_w):
        token = prefix_tokens + n
        cos, sin = angle[n].cos(), angle[n].sin()  # (dh/2,)
        a, b = x[..., token, 0::2].double(), x[..., token, 1::2].double()  # (..., dh/2)
        wide[..., token, 0::2] = a * cos - b * sin
        wide[..., token, 1::2] = a * sin + b * cos
    return wide


def _stacked(pair):
    """(cos, sin) stacked as one tensor (2, N, dh/2), or what came back as it is."""
    if isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(t, torch.Tensor) for t in pair) \
            and pair[0].shape == pair[1].shape:
        return torch.stack(tuple(pair))
    return pair


# --- rope_2d_angles -------------------------------------------------------------------------------------------

def test_rope_2d_angles_give_cos_and_sin_of_one_float32_angle_per_pair():
    got = rope_2d_angles(3, 5, 8)
    assert isinstance(got, tuple) and len(got) == 2, f"expected a pair (cos, sin), got {type(got).__name__}"
    for name, part in zip(("cos", "sin"), got):
        assert isinstance(part, torch.Tensor) and tuple(part.shape) == (15, 4) and part.dtype == torch.float32, \
            (f"expected {name} as a float32 tensor of shape (grid_h * grid_w, dh / 2) = (15, 4), got "
             f"{getattr(part, 'dtype', type(part).__name__)} {tuple(getattr(part, 'shape', ()))}")


def test_rope_2d_angles_match_the_worked_example():
    angle = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    expected = torch.stack((angle.cos(), angle.sin())).float()
    assert_close(_stacked(rope_2d_angles(2, 2, 4)), expected, what="rope_2d_angles(2, 2, 4) as (cos, sin), stacked",
                 atol=1e-6, axes=("cos/sin",) + ANGLES,
                 hint="theta_0 = 1: patch (r, c) has the angles [r, c], patches row by row (0,0), (0,1), (1,0), (1,1); "
                      "the function returns (cos, sin), in that order.")


@pytest.mark.parametrize("grid_h, grid_w, head_dim, base", [(2, 3, 8, None), (3, 2, 16, None), (4, 3, 12, 500.0)])
def test_rope_2d_angles_turn_the_first_half_by_the_row_and_the_second_by_the_column(grid_h, grid_w, head_dim, base):
    args = (grid_h, grid_w, head_dim) + (() if base is None else (base,))
    angle = _angle(grid_h, grid_w, head_dim, 100.0 if base is None else base)
    assert_close(_stacked(rope_2d_angles(*args)), torch.stack((angle.cos(), angle.sin())).float(),
                 what=f"rope_2d_angles{args} as (cos, sin), stacked", atol=1e-6 + 2e-7 * max(grid_h, grid_w),
                 rtol=0.0, axes=("cos/sin",) + ANGLES, hint=CONVENTION)


def test_rope_2d_angles_are_made_on_the_device_asked_for():
    # The meta device holds no values and needs no GPU, and refuses to be mixed with the CPU, as CUDA does.
    got = rope_2d_angles(3, 5, 8, device=torch.device("meta"))
    parts = got if isinstance(got, tuple) else (got,)
    assert len(parts) == 2 and all(isinstance(p, torch.Tensor) and p.device.type == "meta" and
                                   tuple(p.shape) == (15, 4) and p.dtype == torch.float32 for p in parts), \
        "expected (cos, sin), each (15, 4) float32 on the meta device: make every tensor with device=device"


@pytest.mark.parametrize("args, why", [((2, 4, 10), "head_dim = 10 is not a multiple of 4: each axis takes half "
                                                    "the pairs"),
                                       ((2, 4, -4), "head_dim must be positive"),
                                       ((0, 4, 12), "grid_h = 0: a grid needs at least one row"),
                                       ((2, 0, 12), "grid_w = 0: a grid needs at least one column")],
                         ids=["head 10", "head -4", "no row", "no column"])
def test_rope_2d_angles_reject_what_the_docstring_calls_invalid(args, why):
    assert_raises(ValueError, rope_2d_angles, *args, hint=why)


# --- apply_rope_2d --------------------------------------------------------------------------------------------

def test_rope_2d_applied_keeps_the_shape_and_dtype_and_leaves_x_alone():
    x = torch.randn(1, 2, 1 + 2 * 3, 8)
    before = x.clone()
    got = apply_rope_2d(x, 2, 3, prefix_tokens=1)
    assert isinstance(got, torch.Tensor) and got.shape == x.shape and got.dtype == x.dtype, \
        (f"expected a float32 tensor of x's shape {tuple(x.shape)}, got {getattr(got, 'dtype', type(got).__name__)} "
         f"{tuple(getattr(got, 'shape', ()))}")
    assert torch.equal(x, before), "x was changed in place: compute into a new tensor"


def test_rope_2d_applied_matches_the_worked_example():
    # A 1 x 2 grid: the docstring's patch (0, 1) is the second one; patch (0, 0) does not turn at all.
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
    expected = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, math.cos(1.0), math.sin(1.0)]])
    assert_close(apply_rope_2d(x, 1, 2), expected, what="apply_rope_2d([[1, 0, 1, 0], [1, 0, 1, 0]], 1, 2)",
                 atol=1e-6, axes=("token", "channel"),
                 hint="the row's pair (channels 0, 1) turns by r * theta_0 = 0, the column's (channels 2, 3) by "
                      "c * theta_0 = 1, counter-clockwise.")


@pytest.mark.parametrize("grid_h, grid_w, prefix_tokens, base", [(2, 3, 0, None), (3, 2, 1, None), (2, 4, 3, 10.0)])
def test_rope_2d_applied_turns_each_half_of_the_head_by_its_axis(grid_h, grid_w, prefix_tokens, base):
    x = torch.randn(1, 2, prefix_tokens + grid_h * grid_w, 12)
    kwargs = {} if base is None else {"base": base}
    got = apply_rope_2d(x, grid_h, grid_w, prefix_tokens=prefix_tokens, **kwargs)
    assert_close(got, _turned(x, grid_h, grid_w, base or 100.0, prefix_tokens).float(),
                 what=f"apply_rope_2d(x {tuple(x.shape)}, {grid_h}, {grid_w}, prefix_tokens={prefix_tokens}"
                      + (f", base={base})" if base else ")"), atol=1e-5, rtol=1e-5,
                 axes=("batch", "head", "token", "channel"), hint=TURNED)


def test_rope_2d_applied_lets_the_row_offset_alone_move_the_first_half():
    # q and k are one vector at every patch, non-zero in the row's half only: a score of two patches may change
    # with their row offset and must not change with their column offset.
    q, k = (torch.cat((torch.randn(8, dtype=torch.float64), torch.zeros(8, dtype=torch.float64))) for _ in "qk")
    x = torch.stack((q.expand(3 * 4, 16), k.expand(3 * 4, 16)))  # (q/k, N, dh): a 3 x 4 grid, no prefix
    out = apply_rope_2d(x, 3, 4)
    assert isinstance(out, torch.Tensor) and out.shape == x.shape, \
        f"expected x's shape {tuple(x.shape)}, got {tuple(getattr(out, 'shape', ()))}"
    scores = (out[0] @ out[1].T).reshape(3, 4, 3, 4)  # [r1, c1, r2, c2]
    assert_close(scores, scores[:, :1, :, :1].expand(3, 4, 3, 4), what="the scores of a query and a key that live in "
                 "the first half of the head, patch (r1, c1) against (r2, c2), against those at column 0", atol=1e-9,
                 check_dtype=False, axes=("r1", "c1", "r2", "c2"),
                 hint="channels 0 .. dh/2 - 1 turn with the row only: the column must not reach them (the halves are "
                      "not swapped, and the pairs do not alternate between the axes).")


def test_rope_2d_applied_makes_scores_depend_on_the_offsets_between_patches_only():
    # The property of RoPE: q' . k' of a query at (r1, c1) and a key at (r2, c2) depends on (r2 - r1, c2 - c1).
    q, k = torch.randn(2, 8, dtype=torch.float64)
    grid_h, grid_w, tokens = 3, 4, 1 + 12
    x = torch.stack((q.expand(tokens, 8), k.expand(tokens, 8))).clone()  # (q/k, 1 + N, dh)
    x[:, 0] = torch.randn(2, 8, dtype=torch.float64)  # the class token, on its own
    out = apply_rope_2d(x, grid_h, grid_w, prefix_tokens=1)
    assert isinstance(out, torch.Tensor) and out.shape == x.shape, \
        f"expected x's shape {tuple(x.shape)}, got {tuple(getattr(out, 'shape', ()))}"
    scores = out[0, 1:] @ out[1, 1:].T  # (N, N): query patch n1 against key patch n2
    rows, columns = torch.arange(12) // grid_w, torch.arange(12) % grid_w
    for n1 in range(12):
        for n2 in range(12):
            # the same offset from the first patch, (0, 0), or to the last one: both lie on the grid
            dr, dc = int(rows[n2] - rows[n1]), int(columns[n2] - columns[n1])
            m1 = (max(0, -dr)) * grid_w + max(0, -dc)
            m2 = m1 + dr * grid_w + dc
            assert abs(float(scores[n1, n2] - scores[m1, m2])) < 1e-9, \
                (f"the query at ({int(rows[n1])}, {int(columns[n1])}) and the key at ({int(rows[n2])}, "
                 f"{int(columns[n2])}) score {float(scores[n1, n2]):.6g}, but the query at ({m1 // grid_w}, "
                 f"{m1 % grid_w}) and the key at ({m2 // grid_w}, {m2 % grid_w}), at the same offset ({dr}, {dc}), "
                 f"score {float(scores[m1, m2]):.6g}: some patch turns by a row or a column not its own. Patch n, "
                 "counted from 0 after the prefix tokens, is at row n // grid_w and column n % grid_w.")
    assert torch.equal(out[:, 0], x[:, 0]), "the class token was changed: prefix tokens come back as they are"


def test_rope_2d_applied_turns_float64_in_float64():
    x = torch.randn(1 + 4 * 5, 8, dtype=torch.float64)
    got = apply_rope_2d(x, 4, 5, 1000.0, prefix_tokens=1)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64, \
        f"float64 x should give float64, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got, _turned(x, 4, 5, 1000.0, 1), what="apply_rope_2d(float64 x (21, 8), 4, 5, 1000.0, "
                 "prefix_tokens=1)", atol=1e-10, rtol=1e-10, axes=("token", "channel"),
                 hint="a float64 x is turned at float64's precision (apply_rotary does so): float32 angles cost "
                      "1e-7 here. " + TURNED)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rope_2d_applied_keeps_half_precision(dtype):
    x = torch.randn(6 * 5, 8).to(dtype)
    got = apply_rope_2d(x, 6, 5)
    assert isinstance(got, torch.Tensor) and got.dtype == dtype, \
        f"{dtype} x should give {dtype}, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got, _turned(x, 6, 5).to(dtype), what=f"apply_rope_2d({dtype} x (30, 8), 6, 5)",
                 atol=4 * torch.finfo(dtype).eps, rtol=2 * torch.finfo(dtype).eps, axes=("token", "channel"),
                 hint="turn in float32 and round once to x's dtype, as apply_rotary does. " + TURNED)


def test_rope_2d_applied_acts_on_the_last_two_axes_whatever_the_leading_ones():
    x = torch.randn(2, 1, 2, 2 * 3, 8, dtype=torch.float64)
    got = apply_rope_2d(x, 2, 3)
    assert isinstance(got, torch.Tensor) and got.shape == x.shape, \
        f"expected x's shape {tuple(x.shape)}, got {tuple(getattr(got, 'shape', ()))}"
    assert_close(got, _turned(x, 2, 3), what="apply_rope_2d of a 5-D x (2, 1, 2, 6, 8), 2, 3", atol=1e-10,
                 axes=("batch", "leading", "head", "token", "channel"),
                 hint="any number of leading axes: slice from the end, x[..., prefix_tokens:, :] and x[..., :dh // 2].")


def test_rope_2d_applied_is_made_on_the_device_of_x():
    # The meta device holds no values and needs no GPU, and refuses to be mixed with the CPU, as CUDA does.
    x = torch.empty(2, 3, 1 + 3 * 4, 8, device="meta")
    got = apply_rope_2d(x, 3, 4, prefix_tokens=1)
    assert isinstance(got, torch.Tensor) and got.device.type == "meta" and got.shape == x.shape, \
        (f"expected x's shape {tuple(x.shape)} on the meta device, got {tuple(getattr(got, 'shape', ()))} on "
         f"{getattr(got, 'device', None)}: make the rows and columns on x's device")


@pytest.mark.parametrize("shape, grid, kwargs, why", [
    ((3, 8, 2), (2, 4), {}, "x's last axis, 2, is not a multiple of 4: one pair cannot serve two axes"),
    ((3, 8, 14), (2, 4), {}, "x's last axis, 14, is not a multiple of 4: each half would have an odd width"),
    ((1, 2, 8, 12), (2, 4), {"prefix_tokens": 2}, "x holds 8 tokens, not prefix_tokens + 2 * 4 = 10"),
    ((3, 9, 12), (2, 4), {}, "x holds 9 tokens, not 2 * 4 = 8: a class token is declared with prefix_tokens=1"),
], ids=["head 2", "head 14", "prefix not there", "prefix not declared"])
def test_rope_2d_applied_rejects_what_the_docstring_calls_invalid(shape, grid, kwargs, why):
    assert_raises(ValueError, apply_rope_2d, torch.randn(*shape), *grid, hint=why, **kwargs)
