"""Hidden cases for the task ``rope_2d``: its two functions, ``rope_2d_angles`` and ``apply_rope_2d``.

``rope_2d_angles`` returns (cos, sin): the job's view ``pair`` stacks them on a new first axis, (2, N, dh/2), and
the grader reads that one tensor, as the second unit reads ``rotary_angles``. ``apply_rope_2d`` calls the second
unit's ``apply_rotary``, which students receive finished (the rubric's BORROWS): no stand-in is needed, since no
task of this unit can get it wrong; a formulation that turns the halves on its own must give the same output.

Tolerances, derived from float32's rounding (eps 1.2e-7, half a unit in the last place 6e-8):

* ``rope_2d_angles``: the reference computes each angle p * theta_i (p the patch's row for the first dh/4 pairs,
  its column for the last dh/4) in float64 and rounds cos and sin once. A float32 formulation errs in theta_i by
  its exponent's rounding times ln(base) times theta_i (at most 6e-8 * max_x x e^-x = 2.2e-8, whatever the base)
  plus pow's own rounding (6e-8 theta_i), and in the product by another 6e-8 of it: at most 1.5e-7 * p radians,
  and cos and sin move by no more than the angle. The tolerance is 1e-6 + 2e-7 * p at the grid's largest p,
  absolute (the 1e-6 covers the two roundings of cos and sin, the reference's and the student's, with room): one
  number, since a tolerance per entry would not broadcast against a mistake's output of another shape (the angles
  repeated to dh). Grids stay below 100 patches a side: 2e-5 at most, while every named mistake moves some entry
  by a tenth or more.
* ``apply_rope_2d``, float32 x: each output coordinate is a cos - b sin (or a sin + b cos) of one pair (a, b); a
  float32 formulation errs by the angle's error times |a| + |b| plus a few roundings of the products, so, for
  standard normal x, 1e-5 + 5e-7 * p absolute at the largest p (p the position a coordinate's half turns by: the
  row in channels 0 .. dh/2 - 1, the column after them, 0 for the prefix tokens) and 1e-5 relative, as for
  ``apply_rotary``; one number, for the same reason (the prefix dropped gives fewer tokens).
* float64 x: ``apply_rotary`` computes in float64 for float64 input; two float64 formulations differ by about
  1e-16 * p * (|a| + |b|), so 1e-10 absolute and relative. A float64 result turned by float32 angles (the float32
  output of ``rope_2d_angles``, say) is off by about 1e-7 and fails, told that it is right to float32 only.
* float16 and bfloat16 x: turned in float32 and rounded once (``apply_rotary``'s contract). Two correct
  formulations differ before that rounding by float32's error only, so after it by at most one unit in the last
  place of the coordinate, at most eps(dtype) * (|a| + |b|). The tolerance is twice that plus the float32 angle's
  error above, per coordinate: (2 * eps + 5e-7 * p) * (|a| + |b|), relative 0 (so the prefix dropped, of another
  shape, is not declared on these cases: the float32 ones name it). Angles computed in the half dtype stay within
  it at the small grids' positions (a few units in the last place), and leave it by 1.5 to 4 times at a side of
  40 to 60 patches, where the two hand-written half cases lie; cos and sin rounded to the half dtype (one rounding
  more, of the factors) stay within it everywhere. Every named mistake moves coordinates by a share of a turn.

The relative property (apply_rope_2d_relative): x holds, on its first axis, a query (x[0]) and a key (x[1]), the
same vector at every patch of a head, drawn apart for each head (the prefix tokens drawn on their own). Then the
scores of the turned vectors, out[0] @ out[1]^T between patches, must be a function of the offsets (r2 - r1,
c2 - c1) alone, the right one. The check compares the output with the reference's, as every case does (points
come from the right output); where it is wrong, its words say which property fails, read from the output's own
scores: not a function of the offsets (a patch turned by a row or column not its own: column-major numbering, the
prefix counted); a function of them but with the row and column offsets exchanged (the halves swapped), or with
their signs reversed (a rotation the wrong way), or of one axis only; a function of them but another one (the
split or the frequencies); or right scores from wrong vectors (a turn shared by every patch); and the prefix
tokens changed. A query and a key drawn apart make the split show: with q = k every score is a sum of cosines,
the same for a pair turned either way. An output wrong only at float32's precision (a float64 x turned by float32
angles) gets no such words: no property of the scores fails there, and the comparison says what does.

The contracts. ``CONTRACT`` is ``apply_rope_2d``'s: every float dtype of x, the grid square, taller than wide,
wider than tall, of one row or of one column (sides drawn odd and even), no prefix token (prefix_tokens left out
or 0), a class token, several (a class token and registers), x of shape (N, dh), (B, N, dh) or (B, H, N, dh),
base left out, passed by position or by keyword, and a head of 4 channels (one pair per axis) or more. Its cases
count in apply_rope_2d_values. ``ANGLES_CONTRACT`` is ``rope_2d_angles``': the same grids, heads and bases; its
cases count in rope_2d_angles_values. (One ``CONTRACT`` per module is what tests/core/test_contracts.py reads; the
second is drawn the same way, from the same shared designs.) The device is not a factor: one case of each function
asks for the meta device (no GPU needed) and checks that the result is made there.

Decisions:

* One misconception, one set of words: a mistake both functions can make (the halves swapped, the pairs
  alternating, a full head's frequencies, the patches numbered column by column, the base) has the same words in
  both, so that an ``apply_rope_2d`` built on the student's own ``rope_2d_angles`` is charged once for the helper's
  slip (DESIGN.md, invariant 10), in rope_2d_angles_values.
* The rows and columns swapped in the numbering (r = n % grid_w, c = n // grid_w) give exactly the halves swapped,
  and are named by those words; column-major numbering (r = n % grid_h) is a mistake of its own, told apart from
  the swap on oblong grids only (on a square grid the two are one output, and both are named).
* The view ``pair`` must be in the unit's job.py (``VIEWS = {"pair": pair}``, the second unit's function): the
  cases of rope_2d_angles and ``BEHAVIOUR`` ask for it.
* ``BEHAVIOUR`` is ``rope_2d_angles``': the core's Behaviour calls a task's first function only, so the properties
  that would suit ``apply_rope_2d`` better (gradients reaching x, any memory layout of x) are not declared here;
  that needs the core to let a task name the function its behaviour contract calls.
"""

import torch

from autograder.core.behaviour import Behaviour
from autograder.core.cases import (Case, Mistake, Verdict, call_label, call_probe, device_arg, device_check, passed,
                                   raises_check, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import FLOAT_DTYPES, Contract, Factor, contract_cases, dtype_of
from solutions import vision_positions as ref

NAME = "rope_2d"
ANGLES, APPLY = "rope_2d_angles", "apply_rope_2d"
DEFAULT_BASE = 100.0
ROTARY_BASE = 10000.0  # apply_rotary's own default, the 1D one
HALF = (torch.float16, torch.bfloat16)

HINTS = {
    ("function", "apply_rope_2d"): "rope_2d_angles is right and apply_rope_2d is not: turn the first half of each "
                                   "head with apply_rotary at the patches' rows, the second at their columns",
    ("function", "rope_2d_angles"): "apply_rope_2d is right and rope_2d_angles is not: its angles are r * theta_i "
                                    "in the first dh/4 pairs and c * theta_i in the last, returned as (cos, sin)",
    ("grid", ("more columns than rows", "more rows than columns")): "square grids work and oblong ones do not: a row "
                                                                    "and a column are mixed up somewhere; patches go "
                                                                    "row by row, r = n // grid_w and c = n % grid_w",
    ("grid", "more rows than columns"): "grids taller than wide go wrong: patches go row by row, r = n // grid_w "
                                        "and c = n % grid_w (not n % grid_h)",
    ("grid", "more columns than rows"): "grids wider than tall go wrong: patches go row by row, r = n // grid_w "
                                        "and c = n % grid_w (not n % grid_h)",
    ("grid", "one row"): "a grid of one row goes wrong: there every row is 0, and the column runs over the patches",
    ("grid", "one column"): "a grid of one column goes wrong: there every column is 0, and the row runs over the "
                            "patches",
    ("prefix", ("one prefix token", "several prefix tokens")): "calls with prefix tokens go wrong: they come first, "
                                                               "are returned as they are, and the patches after them "
                                                               "count their rows and columns from 0",
    ("prefix", "several prefix tokens"): "one class token works and several prefix tokens do not: take the first "
                                         "prefix_tokens tokens apart, however many",
    ("prefix", "one prefix token"): "a class token goes wrong: it comes first, is returned as it is, and the "
                                    "patches after it count from 0",
    ("dtype", "dtype float64"): "keep x's dtype, and its precision: apply_rotary turns float64 in float64",
    ("dtype", "dtype float16"): "float16 x: turn it in float32 and round once to float16, as apply_rotary does",
    ("dtype", "dtype bfloat16"): "bfloat16 x: turn it in float32 and round once to bfloat16, as apply_rotary does",
    ("dtype", ("dtype bfloat16", "dtype float16")): "half-precision x goes wrong: turn it in float32 and round once "
                                                    "to x's dtype, as apply_rotary does",
    ("leading", "x of shape (N, dh)"): "x without leading axes goes wrong: index from the end, x[..., "
                                       "prefix_tokens:, :] and x[..., :dh // 2], so that any leading axes, or "
                                       "none, pass through",
    ("leading", "one leading axis (B, N, dh)"): "x with one leading axis goes wrong: the rotation acts on the last "
                                                "two axes only, whatever comes before them",
    ("leading", "leading axes (B, H)"): "x with batch and head axes goes wrong: the rotation acts on the last two "
                                        "axes (N, dh) only; slice the tokens with x[..., prefix_tokens:, :]",
    ("base", "base passed"): "the base argument seems not to reach the angles (apply_rotary's own default is 10000: "
                             "pass the base on)",
    ("base", "base by keyword"): "a call that names base= goes wrong: keep the parameter names of the signature",
    ("base", "the default base"): "calls that leave base out go wrong: the default is 100 (RoPE-ViT's), not the "
                                  "1D rotation's 10000",
    ("head_dim", "head_dim 4"): "a head of 4 channels goes wrong: one pair per axis, dh/4 = 1 frequency, "
                                "theta_0 = 1",
    ("head_dim", "head_dim > 4"): "a head of 4 channels (one pair per axis) works and wider ones do not: look at "
                                  "which pairs each axis turns and at their frequencies, theta_i = base^(-4i/dh)",
}

# The misconceptions both functions can have: one set of words each (module docstring).
ALTERNATING = ("the pairs alternate between the axes (pair 2i turns with the row, pair 2i + 1 with the column): the "
               "head is split by halves, the first dh/4 pairs (channels 0 .. dh/2 - 1) turn with the row and the "
               "last dh/4 (channels dh/2 .. dh - 1) with the column, each half with theta_i = base^(-4i/dh).")
SWAPPED = ("the halves are swapped: the column turns the first half of the head and the row the second, RoPE-ViT's "
           "order (its compute_axial_cis puts x, the column, first); here the row comes first, in pairs "
           "0 .. dh/4 - 1 (channels 0 .. dh/2 - 1), and the column after it.")
FULL_HEAD = ("each half uses the frequencies of a whole head, theta_i = base^(-2i/dh): a half has dh/4 pairs, so "
             "theta_i = base^(-4i/dh), the 1D rotation of a head of dh/2 channels (apply_rotary on each half).")
WHOLE_TABLE = ("the 1D angles of the whole head (theta_j = base^(-2j/dh) for pair j = 0 .. dh/2 - 1) are split "
               "between the axes, so the column's half turns slower than the row's: each half starts again at "
               "theta_0 = 1, theta_i = base^(-4i/dh) for i = 0 .. dh/4 - 1.")
COLUMN_MAJOR = ("the patches are numbered column by column (row n % grid_h, column n // grid_h): they go row by row, "
                "patch n = r * grid_w + c at row n // grid_w and column n % grid_w.")
DEFAULT_10000 = ("base 10000 is used where the call leaves base out: the default here is 100 (RoPE-ViT's: a grid has "
                 "tens of positions, not thousands), not the 1D rotation's 10000; apply_rotary's own default is "
                 "10000, so pass the base on to it.")
BASE_IGNORED = ("the base passed is not used (the default 100 is used instead): theta_i = base^(-4i/dh) with the "
                "call's base.")
BASE_LOST = ("the base passed is not used, and 10000 is used instead: apply_rotary called without a base turns by "
             "its own default, 10000; pass the call's base on.")
WRONG_WAY = ("the rotation turns the wrong way (-sin on the other member of each pair): a' = a cos - b sin, "
             "b' = a sin + b cos, as apply_rotary turns.")

# The mistakes of one function only.
COS_SIN = "cos and sin are swapped: the function returns (cos, sin), in that order."
REPEATED = ("the angles are repeated to dh, one per channel (as Hugging Face's tables are): there is one angle per "
            "pair, so cos and sin are (grid_h * grid_w, dh / 2).")
ROTATE_HALF = ("each half is turned in the rotate-half layout (channel i with i + dh/4): apply_rotary's default, "
               "interleaved=True, turns neighbours (2i, 2i + 1) of each half together, as the contract asks.")
PREFIX_TURNED = ("the prefix tokens are turned as if they were patches (rows and columns counted over prefix + "
                 "patches): they have no place on the grid and come back as they are, and patch n, counted from 0 "
                 "after them, is at row n // grid_w, column n % grid_w.")
PATCHES_SHIFTED = ("the patches are numbered from prefix_tokens on (the prefix counted in their positions): patch n, "
                   "counted from 0 after the prefix tokens, is at row n // grid_w, column n % grid_w.")
PREFIX_DROPPED = ("the prefix tokens are dropped: out has x's shape, the prefix tokens first, returned as they are, "
                  "the turned patches after them.")


# --- the formula written out, in float64, with one slip or none ------------------------------------------------

def _positions(count, grid_h, grid_w, start=0, numbering="rows"):
    """(rows, columns) of ``count`` tokens numbered from ``start`` on the grid, float64: row by row, or with
    ``numbering`` "columns" column by column."""
    n = torch.arange(start, start + count)
    if numbering == "columns":
        return (n % grid_h).double(), (n // grid_h).double()
    return (n // grid_w).double(), (n % grid_w).double()


def _angle(rows, columns, head_dim, base, split="halves", frequencies="quarter"):
    """(T, dh/2) angles of pair j of each token: its axis and its speed as ``split`` and ``frequencies`` say."""
    quarter, j = head_dim // 4, torch.arange(head_dim // 2)
    if frequencies == "whole head":  # the 1D table of dh: pair j at base^(-2j/dh)
        theta = base ** (-2 * j.double() / head_dim)
    else:
        i = (j // 2 if split == "alternating" else j % quarter).double()
        theta = base ** ((-4 if frequencies == "quarter" else -2) * i / head_dim)
    on_rows = {"halves": j < quarter, "swapped": j >= quarter, "alternating": j % 2 == 0}[split]
    return torch.where(on_rows, rows[:, None], columns[:, None]) * theta  # (T, dh/2)


def _pair_of_angles(angle, repeat=None, swap=False):
    """(cos, sin) of ``angle`` rounded to float32 once, stacked as the grader reads them: (2, T, dh/2)."""
    if repeat == "halves":
        angle = torch.cat((angle, angle), dim=-1)
    elif repeat == "pairs":
        angle = angle.repeat_interleave(2, dim=-1)
    cos, sin = angle.cos().float(), angle.sin().float()
    return torch.stack((sin, cos) if swap else (cos, sin))


def _turn(x, angle, layout="interleaved", sign=1.0):
    """x (..., T, dh) turned by ``angle`` (T, dh/2), pair j of the angles being pair j of x's pairs: interleaved, or
    rotate half inside each half (pair i of half h: channels h * dh/2 + i and h * dh/2 + dh/4 + i); float64."""
    wide, head_dim = x.double(), x.shape[-1]
    cos, sin = angle.cos(), sign * angle.sin()
    if layout == "interleaved":
        a, b = wide[..., 0::2], wide[..., 1::2]  # (..., T, dh/2)
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    quarter = head_dim // 4
    parts = wide.unflatten(-1, (2, 2, quarter))  # (..., T, half, member, i)
    a, b = parts[..., 0, :], parts[..., 1, :]  # (..., T, 2, dh/4)
    cos, sin = cos.unflatten(-1, (2, quarter)), sin.unflatten(-1, (2, quarter))  # (T, 2, dh/4)
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-2).flatten(-3)


def _applied(x, grid_h, grid_w, base, prefix, *, split="halves", frequencies="quarter", numbering="rows",
             layout="interleaved", sign=1.0, prefix_mode="kept"):
    """apply_rope_2d written out with one slip or none, rounded once to x's dtype. ``prefix_mode``: "kept" (the
    contract), "turned" (every token on the grid, counted from the first), "shifted" (the patches counted from
    ``prefix``, the prefix kept), "dropped"."""
    tokens, head_dim = x.shape[-2], x.shape[-1]
    if prefix_mode == "turned":
        rows, columns = _positions(tokens, grid_h, grid_w, numbering=numbering)
        return _turn(x, _angle(rows, columns, head_dim, base, split, frequencies), layout, sign).to(x.dtype)
    start = prefix if prefix_mode == "shifted" else 0
    rows, columns = _positions(tokens - prefix, grid_h, grid_w, start, numbering)
    turned = _turn(x[..., prefix:, :], _angle(rows, columns, head_dim, base, split, frequencies), layout, sign)
    if prefix_mode == "dropped":
        return turned.to(x.dtype)
    return torch.cat((x[..., :prefix, :].double(), turned), dim=-2).to(x.dtype)


def _angles_of(grid_h, grid_w, head_dim, base, numbering="rows", **how):
    rows, columns = _positions(grid_h * grid_w, grid_h, grid_w, numbering=numbering)
    return _angle(rows, columns, head_dim, base, **how)


def _shared_mistakes(output, base, base_given):
    """The misconceptions of both functions, each as ``output(**how)`` at the call's inputs (``how``: the slip)."""
    found = [
        Mistake(ALTERNATING, lambda: output(split="alternating")),
        Mistake(SWAPPED, lambda: output(split="swapped")),
        Mistake(FULL_HEAD, lambda: output(frequencies="half")),
        Mistake(WHOLE_TABLE, lambda: output(frequencies="whole head")),
        Mistake(COLUMN_MAJOR, lambda: output(numbering="columns")),
    ]
    if not base_given:
        found.append(Mistake(DEFAULT_10000, lambda: output(base=ROTARY_BASE)))
    else:
        found += [Mistake(BASE_IGNORED, lambda: output(base=DEFAULT_BASE)),
                  Mistake(BASE_LOST, lambda: output(base=ROTARY_BASE))]
    return found


def _angles_mistakes(grid_h, grid_w, head_dim, base, base_given):
    def output(base=base, numbering="rows", **how):
        return _pair_of_angles(_angles_of(grid_h, grid_w, head_dim, base, numbering, **how))

    right = _angles_of(grid_h, grid_w, head_dim, base)
    return [
        Mistake(COS_SIN, lambda: _pair_of_angles(right, swap=True)),
        Mistake(REPEATED, lambda: _pair_of_angles(right, repeat="halves")),
        Mistake(REPEATED, lambda: _pair_of_angles(right, repeat="pairs")),
    ] + _shared_mistakes(output, base, base_given)


def _apply_mistakes(x, grid_h, grid_w, base, prefix, base_given):
    def output(base=base, **how):
        return _applied(x, grid_h, grid_w, base, prefix, **how)

    found = _shared_mistakes(output, base, base_given) + [
        Mistake(ROTATE_HALF, lambda: output(layout="half")),
        Mistake(WRONG_WAY, lambda: output(sign=-1.0)),
        Mistake(PREFIX_TURNED, lambda: output(prefix_mode="turned")),
        Mistake(PATCHES_SHIFTED, lambda: output(prefix_mode="shifted")),
    ]
    if x.dtype not in HALF:  # the half dtypes' tolerance is per coordinate, of x's shape: not the dropped output's
        found.append(Mistake(PREFIX_DROPPED, lambda: output(prefix_mode="dropped")))
    return found


# --- features -------------------------------------------------------------------------------------------------

def _grid_level(grid_h, grid_w):
    if grid_h == grid_w:
        return "one patch" if grid_h == 1 else "a square grid"
    if grid_h == 1:
        return "one row"
    if grid_w == 1:
        return "one column"
    return "more rows than columns" if grid_h > grid_w else "more columns than rows"


def _base_level(base, by_keyword):
    return "the default base" if base is None else "base by keyword" if by_keyword else "base passed"


def _head_level(head_dim):
    return "head_dim 4" if head_dim == 4 else "head_dim > 4"


def _prefix_level(prefix):
    return {0: "no prefix tokens", 1: "one prefix token"}.get(prefix, "several prefix tokens")


def _leading_level(dims):
    return {2: "x of shape (N, dh)", 3: "one leading axis (B, N, dh)"}.get(dims, "leading axes (B, H)")


# --- rope_2d_angles -------------------------------------------------------------------------------------------

def _angles_case(test, grid_h, grid_w, head_dim, base=None, base_by_keyword=False, device=None, scored=True):
    args = [grid_h, grid_w, head_dim] + ([base] if base is not None and not base_by_keyword else [])
    kwargs = {"base": base} if base is not None and base_by_keyword else {}
    if device is not None:
        kwargs["device"] = device_arg(device)
    label = call_label(ANGLES, args, kwargs)
    used = DEFAULT_BASE if base is None else base
    expected = torch.stack(ref.rope_2d_angles(grid_h, grid_w, head_dim, used))  # (2, N, dh/2): as the grader reads it
    rows, columns = _positions(grid_h * grid_w, grid_h, grid_w)
    turned_by = torch.where(torch.arange(head_dim // 2) < head_dim // 4, rows[:, None], columns[:, None])  # (N, dh/2)
    # One number, the largest position's: a per-entry tolerance would not broadcast against a mistake's output of
    # another shape (the angles repeated to dh).
    atol = 1e-6 + 2e-7 * float(turned_by.max())
    check = tensor_check(label + " as (cos, sin), stacked", expected, atol=atol, rtol=0.0,
                         mistakes=_angles_mistakes(grid_h, grid_w, head_dim, used, base is not None),
                         axes=("cos/sin", "patch", "pair"),
                         coordinates={"the row r": rows[:, None].expand_as(turned_by),
                                      "the column c": columns[:, None].expand_as(turned_by)})
    features = {"function": ANGLES, "grid": _grid_level(grid_h, grid_w), "head_dim": _head_level(head_dim),
                "base": _base_level(base, base_by_keyword)}
    return Case(test, label, call_probe(ANGLES, args, kwargs, view="pair"), check, features=features,
                sizes={"grid_h": grid_h, "grid_w": grid_w, "grid_h * grid_w": grid_h * grid_w, "head_dim": head_dim,
                       "head_dim // 2": head_dim // 2}, scored=scored)


def _angles_meta_case(test, grid_h, grid_w, head_dim):
    """The angles asked for on the meta device, which needs no GPU: cos and sin must be made there, float32, of
    (grid_h * grid_w, dh/2) each (a meta tensor has no values to compare)."""
    args, kwargs = [grid_h, grid_w, head_dim], {"device": device_arg("meta")}
    label = call_label(ANGLES, args, kwargs)
    expected = torch.stack(computed_on_the_cpu(ref.rope_2d_angles, grid_h, grid_w, head_dim,
                                               device=torch.device("meta")))
    return Case(test, label, call_probe(ANGLES, args, kwargs, view="pair"),
                device_check(label + " as (cos, sin), stacked", "meta", expected.shape, expected.dtype),
                sizes={"grid_h": grid_h, "grid_w": grid_w, "head_dim": head_dim})


# --- apply_rope_2d --------------------------------------------------------------------------------------------

def _pair_sizes(x):
    """|a| + |b| of the interleaved pair each coordinate of x belongs to (..., T, dh), float64."""
    wide = x.double().abs()
    return (wide[..., 0::2] + wide[..., 1::2]).repeat_interleave(2, dim=-1)


def _turned_by(tokens, head_dim, grid_h, grid_w, prefix):
    """(T, dh): the position each coordinate turns by, the row in the first half, the column in the second, 0 for
    the prefix tokens."""
    rows, columns = _positions(tokens - prefix, grid_h, grid_w)
    patches = torch.cat((rows[:, None].expand(-1, head_dim // 2), columns[:, None].expand(-1, head_dim // 2)), dim=1)
    return torch.cat((torch.zeros(prefix, head_dim, dtype=torch.float64), patches))


def _tolerance(x, grid_h, grid_w, prefix):
    """(atol, rtol) of a call at x (module docstring): one number for float32 and float64, the largest position's
    (a per-entry tolerance would not broadcast against the output of the prefix dropped, of another shape); per
    coordinate for the half dtypes, whose roundings scale with each pair's size."""
    far = 5e-7 * _turned_by(x.shape[-2], x.shape[-1], grid_h, grid_w, prefix)  # (T, dh): the angle's float32 error
    if x.dtype in HALF:
        return (2 * torch.finfo(x.dtype).eps + far) * _pair_sizes(x), 0.0
    if x.dtype == torch.float64:
        return 1e-10, 1e-10
    return 1e-5 + float(far.max()) if far.numel() else 1e-5, 1e-5


def _axes(dims, relative=False):
    if relative:
        return ("q/k", "head", "token", "channel")
    if dims <= 4:
        return ("batch", "head", "token", "channel")[-dims:]
    return ("batch",) + ("leading",) * (dims - 4) + ("head", "token", "channel")


def _apply_case(test, x, grid_h, grid_w, base=None, prefix=None, base_by_keyword=False, scored=True,
                relative=False):
    """A call of apply_rope_2d at x; ``prefix`` None leaves prefix_tokens out; ``relative``: x holds a query and a key
    on its first axis, each the same at every patch, and the check says which property of the scores fails."""
    args = [x, grid_h, grid_w] + ([base] if base is not None and not base_by_keyword else [])
    kwargs = {"base": base} if base is not None and base_by_keyword else {}
    if prefix is not None:
        kwargs["prefix_tokens"] = prefix
    label = call_label(APPLY, args, kwargs)
    if relative:
        label += " with x[0] one query at every patch and x[1] one key"
    used, tokens = DEFAULT_BASE if base is None else base, prefix or 0
    expected = ref.apply_rope_2d(x, grid_h, grid_w, used, prefix_tokens=tokens)
    atol, rtol = _tolerance(x, grid_h, grid_w, tokens)
    check = tensor_check(label, expected, atol=atol, rtol=rtol,
                         mistakes=_apply_mistakes(x, grid_h, grid_w, used, tokens, base is not None),
                         axes=_axes(x.dim(), relative), inputs=("x",))
    if relative:
        check = _relative_check(check, x, grid_h, grid_w, used, tokens)
    features = {"function": APPLY, "grid": _grid_level(grid_h, grid_w), "head_dim": _head_level(x.shape[-1]),
                "base": _base_level(base, base_by_keyword), "dtype": f"dtype {str(x.dtype).replace('torch.', '')}",
                "prefix": _prefix_level(tokens), "leading": _leading_level(x.dim())}
    return Case(test, label, call_probe(APPLY, args, kwargs), check, features=features,
                sizes={"grid_h": grid_h, "grid_w": grid_w, "grid_h * grid_w": grid_h * grid_w,
                       "prefix_tokens": tokens, "tokens": x.shape[-2], "dh": x.shape[-1], "dh // 2": x.shape[-1] // 2},
                scored=scored)


def _apply_meta_case(test, shape, grid_h, grid_w, prefix):
    """x on the meta device, which needs no GPU: the output must be made there, of x's shape and dtype (a meta
    tensor has no values to compare); positions built on the CPU meet the meta x and fail."""
    x = torch.empty(*shape, device="meta")
    kwargs = {"prefix_tokens": prefix}
    label = call_label(APPLY, [x, grid_h, grid_w], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.apply_rope_2d, x, grid_h, grid_w, prefix_tokens=prefix)
    return Case(test, label, call_probe(APPLY, [x, grid_h, grid_w], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("x",)),
                sizes={"grid_h": grid_h, "grid_w": grid_w, "prefix_tokens": prefix, "dh": shape[-1]})


# --- the relative property --------------------------------------------------------------------------------------

PROPERTY = ("The property this test checks: the score q'.k' of a query at patch (r1, c1) and a key at (r2, c2) "
            "depends only on the offsets r2 - r1 and c2 - c1. Here x[0] holds one query at every patch and x[1] one "
            "key (each head its own), so the scores out[0] @ out[1]^T between patches must be one function of the "
            "offsets, the right one.")


def _scores(out, prefix):
    """(H..., N, N) scores of the turned query patches (out[0]) against the turned key patches (out[1]), float64."""
    wide = out.detach().to("cpu", torch.float64)
    return wide[0, ..., prefix:, :] @ wide[1, ..., prefix:, :].transpose(-2, -1)


def _offset_table(x, prefix, base, reach):
    """The right scores of x's query and key at every offset (dr, dc) in -reach .. reach, (H..., 2 reach + 1,
    2 reach + 1) indexed [dr + reach, dc + reach]: the reference on a square grid of that side with the two vectors
    at every patch, the query read at its centre."""
    side = 2 * reach + 1
    vectors = x[..., prefix:prefix + 1, :].double()  # (2, H..., 1, dh): x's query and key
    big = ref.apply_rope_2d(vectors.expand(*vectors.shape[:-2], side * side, vectors.shape[-1]), side, side, base)
    centre = reach * side + reach
    scores = big[0, ..., centre:centre + 1, :] @ big[1].transpose(-2, -1)  # (H..., 1, side * side)
    return scores[..., 0, :].unflatten(-1, (side, side))


def _relative_words(got, x, expected, grid_h, grid_w, prefix, base):
    """Which property of the scores fails, in words; "" where the output's shape is not x's, or where it is wrong
    only at the dtype's precision (the comparison says so, and no property of the scores fails)."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape) or got.device.type == "meta" \
            or not bool(torch.isfinite(got.double()).all()):
        return ""
    got = got.detach().to("cpu")
    wide, right_out = x.double(), expected.double()
    near = max(1e-4, 16 * torch.finfo(x.dtype).eps) * (1 + right_out.abs())
    if bool(((got.double() - right_out).abs() <= near).all()):
        return ""  # wrong only at the precision the dtype's tolerance asks for: no property of the scores fails
    words = []
    if not torch.equal(got[..., :prefix, :].double(), wide[..., :prefix, :]):
        words.append("The prefix tokens came back changed: they have no place on the grid, and are returned as "
                     "they are.")
    mine, right = _scores(got, prefix), _scores(expected, prefix)  # (H, N, N)
    sizes = wide[0, ..., prefix:prefix + 1, :].norm(dim=-1) * wide[1, ..., prefix:prefix + 1, :].norm(dim=-1)
    tol = (max(1e-3, 8 * torch.finfo(x.dtype).eps) * sizes)[..., None]  # (H, 1, 1): a share of |q| |k|
    rows, columns = _positions(grid_h * grid_w, grid_h, grid_w)
    dr, dc = rows[None, :] - rows[:, None], columns[None, :] - columns[:, None]  # (N, N): key's minus query's
    group = ((dr + grid_h - 1) * (2 * grid_w - 1) + dc + grid_w - 1).long().expand_as(mine).flatten(-2)
    flat = mine.flatten(-2)  # (H, N * N)
    count = (2 * grid_h - 1) * (2 * grid_w - 1)
    empty = torch.zeros(flat.shape[:-1] + (count,), dtype=torch.float64)
    high = (empty - torch.inf).scatter_reduce(-1, group, flat, "amax")  # (H, groups): each offset's largest score
    low = (empty + torch.inf).scatter_reduce(-1, group, flat, "amin")
    spread = (high - low).nan_to_num(0.0, posinf=0.0, neginf=0.0) / tol[..., 0]  # (H, groups) in tolerances
    if bool((spread > 1).any()):
        head, worst = divmod(int(spread.argmax()), count)
        heads = [int(i) for i in torch.unravel_index(torch.tensor(head), spread.shape[:-1])] if spread.dim() > 1 else []
        inside = group.reshape(-1, group.shape[-1])[head] == worst
        values = flat.reshape(-1, flat.shape[-1])[head]
        one = int(torch.where(inside, values, torch.inf).argmin())
        two = int(torch.where(inside, values, -torch.inf).argmax())

        def place(index):
            query, key = divmod(index, grid_h * grid_w)
            return (f"the query at ({int(rows[query])}, {int(columns[query])}) and the key at "
                    f"({int(rows[key])}, {int(columns[key])})")

        off_r, off_c = int(dr.flatten()[one]), int(dc.flatten()[one])
        words.append(f"It fails: {place(one)} score {float(values[one]):.4g}, {place(two)} "
                     f"{float(values[two]):.4g}, both at the offset (r2 - r1, c2 - c1) = ({off_r}, {off_c})"
                     f"{_head_words(heads, mine)}. So some patch turns by a row or a column not its own: patch n, "
                     "counted from 0 after the prefix tokens, is at row n // grid_w and column n % grid_w.")
    elif bool(((mine - right).abs() > tol).any()):
        reach = max(grid_h, grid_w) - 1
        words.append(_wrong_function(mine, right, _offset_table(x, prefix, base, reach), reach, dr, dc, tol))
    elif not words:
        words.append("The scores are right, and depend on the offsets alone; the turned vectors are not: every "
                     "patch turns by the same extra angle (a position off by the same amount at every patch, say), "
                     "which no score shows and the output does. Rows and columns count from 0.")
    return "\n" + PROPERTY + " " + " ".join(words)


def _head_words(heads, scores):
    """" (head 1)" where the scores have several heads; "" where one."""
    several = scores.dim() > 2 and scores.numel() > scores.shape[-1] * scores.shape[-2]
    return f" (head {', '.join(map(str, heads))})" if several else ""


def _wrong_function(mine, right, table, reach, dr, dc, tol):
    """Words for scores that are a function of the offsets, but not the right one: the right scores at the offsets
    exchanged or reversed (``table``: the right scores at every offset within ``reach``), or of one axis only."""
    def same(a, b):
        return bool(((a - b).abs() <= tol).all())

    for moved, words in (
            ((dc, dr), "with the row and column offsets exchanged: the row turns the half of the head the column "
                       "should (the row's pairs come first, channels 0 .. dh/2 - 1)"),
            ((-dr, -dc), "with the offsets' signs reversed: the rotation turns the wrong way (a' = a cos - b sin, "
                         "b' = a sin + b cos)")):
        at = table[..., (moved[0] + reach).long(), (moved[1] + reach).long()]  # (H..., N, N)
        if same(mine, at):
            return f"They depend on the offsets alone, but are the right scores {words}."
    by_rows, by_columns = _constant_along(mine, dr, tol), _constant_along(mine, dc, tol)
    if by_rows and by_columns:
        return ("They do not change with the offsets at all: the patches are not turned (or every patch by the "
                "same angle).")
    if by_rows and not by_columns:
        return ("They depend on the row offset alone: the column's half of the head (channels dh/2 .. dh - 1) must "
                "turn by the patch's column.")
    if by_columns and not by_rows:
        return ("They depend on the column offset alone: the row's half of the head (channels 0 .. dh/2 - 1) must "
                "turn by the patch's row.")
    index = int(((mine - right).abs() / tol).argmax())
    *heads, query, key = (int(i) for i in torch.unravel_index(torch.tensor(index), mine.shape))
    return (f"They depend on the offsets alone, as they should, but not as the right rotation's do: "
            f"at the offset (r2 - r1, c2 - c1) = ({int(dr[query, key])}, {int(dc[query, key])}) the score is "
            f"{float(mine[(*heads, query, key)]):.4g}, expected {float(right[(*heads, query, key)]):.4g}"
            f"{_head_words(heads, mine)}. Which pairs turn with which axis, or how fast, differs: pair i of the first "
            "half (channels 2i, 2i + 1) turns by r * theta_i, pair i of the second half by c * theta_i, "
            "theta_i = base^(-4i/dh).")


def _constant_along(scores, keep, tol):
    """Whether the scores are the same wherever ``keep`` (dr or dc) is, whatever the other offset."""
    for value in keep.unique():
        inside = keep == value
        chosen = scores[..., inside]
        if bool(((chosen - chosen[..., :1]).abs() > tol[..., 0]).any()):
            return False
    return True


def _relative_check(values, x, grid_h, grid_w, base, prefix):
    """``values`` (the comparison with the reference), whose failures say which property of the scores fails."""
    expected = values.expected

    def check(outcome):
        verdict = values(outcome)
        if verdict.passed or verdict.raised:
            return verdict
        got = outcome["value"].get("tensor") if outcome and "value" in outcome else None
        try:
            words = _relative_words(got, x, expected, grid_h, grid_w, prefix, base)
        except Exception:  # noqa: BLE001  (words only: the verdict stands without them)
            words = ""
        if not words:
            return verdict
        return Verdict(False, verdict.message + words, mistake=verdict.mistake, raised=verdict.raised,
                       unnamed=verdict.unnamed + words, how=verdict.how, first_wrong=verdict.first_wrong,
                       explained=tuple((mistake, message + words) for mistake, message in verdict.explained))

    # What it holds, for a reader (check-unit, core/form_slips.py): the comparison's own.
    for name in ("expected", "mistakes", "atol", "rtol", "axes", "coordinates", "advice", "also_accept"):
        setattr(check, name, getattr(values, name))
    check.values = values
    return check


def _relative_case(test, generator, grid_h, grid_w, head_dim, heads, prefix=None, base=None, dtype=torch.float32,
                   scored=True):
    """x of (2, H, prefix + N, dh): x[0] one query at every patch, x[1] one key, drawn apart for each head."""
    tokens = prefix or 0
    vectors = torch.randn(2, heads, 1, head_dim, generator=generator, dtype=torch.float64)  # (q/k, H, 1, dh)
    front = torch.randn(2, heads, tokens, head_dim, generator=generator, dtype=torch.float64)
    x = torch.cat((front, vectors.expand(2, heads, grid_h * grid_w, head_dim)), dim=-2).to(dtype)
    return _apply_case(test, x, grid_h, grid_w, base=base, prefix=prefix, scored=scored, relative=True)


# --- invalid arguments ------------------------------------------------------------------------------------------

def _invalid(generator):
    """The ValueErrors the docstrings name: a head size that is not a positive multiple of 4, a grid side below 1,
    negative prefix tokens (apply_rope_2d), tokens that are not prefix_tokens + grid_h * grid_w (apply_rope_2d)."""
    cases = []
    for args, why in (((3, 5, 6), "head_dim = 6 is not a multiple of 4: each axis takes half of the pairs"),
                      ((3, 5, 0), "head_dim must be positive"),
                      ((3, 5, -8), "head_dim must be positive"),
                      ((0, 5, 8), "grid_h = 0: a grid needs at least one row"),
                      ((4, 0, 8), "grid_w = 0: a grid needs at least one column")):
        label = call_label(ANGLES, list(args))
        cases.append(Case("rope_2d_invalid_args", label, call_probe(ANGLES, list(args), view="pair"),
                          raises_check(label, "ValueError", f" ({why})")))

    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    for args, kwargs, why in (
            ([randn(2, 15, 6), 3, 5], {}, "x's last axis, 6, is not a multiple of 4"),
            ([randn(2, 15, 10), 3, 5], {}, "x's last axis, 10, is not a multiple of 4: each half has an odd width"),
            ([randn(2, 3, 15, 8), 3, 5], {"prefix_tokens": 1}, "x holds 15 tokens, not prefix_tokens + 3 * 5 = 16"),
            ([randn(2, 16, 8), 3, 5], {}, "x holds 16 tokens, not 3 * 5 = 15: a class token must be declared with "
                                          "prefix_tokens=1"),
            ([randn(20, 8), 4, 4], {}, "x holds 20 tokens, not 4 * 4 = 16"),
            ([randn(2, 1, 8), 0, 5], {"prefix_tokens": 1}, "grid_h = 0: a grid needs at least one row, even where "
                                                          "x holds just the prefix tokens"),
            ([randn(2, 14, 8), 3, 5], {"prefix_tokens": -1}, "prefix_tokens = -1: a count of tokens is 0 or more, "
                                                            "even where -1 + 3 * 5 is x's 14 tokens")):
        label = call_label(APPLY, args, kwargs)
        cases.append(Case("rope_2d_invalid_args", label, call_probe(APPLY, args, kwargs),
                          raises_check(label, "ValueError", f" ({why})")))
    return cases


# --- check_at, the contracts, build ---------------------------------------------------------------------------

def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py). The call is apply_rope_2d's where it
    passes a tensor x, rope_2d_angles' otherwise (its arguments are numbers)."""
    if (args and isinstance(args[0], torch.Tensor)) or "x" in kwargs:
        given = passed(ref.apply_rope_2d, args, kwargs)
        return _apply_case(f"{APPLY}_values", given["x"], given["grid_h"], given["grid_w"], base=given.get("base"),
                           prefix=given.get("prefix_tokens")).check
    given = passed(ref.rope_2d_angles, args, kwargs)
    return _angles_case(f"{ANGLES}_values", given["grid_h"], given["grid_w"], given["head_dim"],
                        base=given.get("base")).check


GRIDS = Factor("grid", ("a square grid", "more rows than columns", "more columns than rows", "one row", "one column"))
HEADS = Factor("head_dim", ("head_dim 4", "head_dim > 4"))
BASES = Factor("base", ("the default base", "base passed", "base by keyword"))


def _grid_of(level, rng):
    """(grid_h, grid_w) at a level of GRIDS, sides drawn odd and even, each its own size."""
    short, long = sorted(rng.sample(range(2, 13), 2))
    return {"a square grid": (short, short), "more rows than columns": (long, short),
            "more columns than rows": (short, long), "one row": (1, long), "one column": (long, 1)}[level]


def _base_of(level, rng):
    return None if level == "the default base" else float(rng.choice([10.0, 30.0, 500.0, 1000.0]))


def _from_angles_contract(levels, rng, generator):
    """A call of rope_2d_angles at one row of ANGLES_CONTRACT's design."""
    grid_h, grid_w = _grid_of(levels["grid"], rng)
    head_dim = 4 if levels["head_dim"] == "head_dim 4" else 4 * rng.randint(2, 12)
    return _angles_case(f"{ANGLES}_values", grid_h, grid_w, head_dim, base=_base_of(levels["base"], rng),
                        base_by_keyword=levels["base"] == "base by keyword")


def _from_contract(levels, rng, generator):
    """A call of apply_rope_2d at one row of CONTRACT's design."""
    grid_h, grid_w = _grid_of(levels["grid"], rng)
    head_dim = 4 if levels["head_dim"] == "head_dim 4" else 4 * rng.randint(2, 8)
    prefix = {"no prefix tokens": rng.choice([None, 0]), "one prefix token": 1,
              "several prefix tokens": rng.randint(2, 5)}[levels["prefix"]]
    tokens = (prefix or 0) + grid_h * grid_w
    leading = {"x of shape (N, dh)": (), "one leading axis (B, N, dh)": (rng.randint(2, 3),),
               "leading axes (B, H)": (rng.randint(1, 3), rng.randint(2, 4))}[levels["leading"]]
    x = torch.randn(*leading, tokens, head_dim, generator=generator, dtype=torch.float64).to(dtype_of(levels["dtype"]))
    return _apply_case(f"{APPLY}_values", x, grid_h, grid_w, base=_base_of(levels["base"], rng), prefix=prefix,
                       base_by_keyword=levels["base"] == "base by keyword")


# The contracts: what the docstrings let vary, each level sent by some case, every pair of levels together in one
# (autograder/core/contracts.py). apply_rope_2d's is the module's CONTRACT; rope_2d_angles' is drawn beside it.
CONTRACT = Contract(APPLY, (
    FLOAT_DTYPES,
    GRIDS,
    Factor("prefix", ("no prefix tokens", "one prefix token", "several prefix tokens")),
    Factor("leading", ("x of shape (N, dh)", "one leading axis (B, N, dh)", "leading axes (B, H)")),
    BASES,
    HEADS,
), _from_contract)

ANGLES_CONTRACT = Contract(ANGLES, (GRIDS, HEADS, BASES), _from_angles_contract)


def build(rng, generator):
    def x_of(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    def sides(low, high):
        grid_h, grid_w = rng.sample(range(low, high), 2)  # two sizes of their own
        return grid_h, grid_w

    h1, w1 = sides(3, 10)
    h2, w2 = sides(14, 30)
    h3, w3 = sides(2, 9)
    h4, w4 = sides(5, 16)
    h5, w5 = sides(2, 8)
    far = rng.randint(40, 60)
    worked = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])  # the docstring's patch (0, 1) is the second
    cases = [
        # rope_2d_angles: the worked example, drawn grids, a large one, another base, one patch, device="cpu".
        _angles_case(f"{ANGLES}_values", 2, 2, 4),
        _angles_case(f"{ANGLES}_values", 3, 5, 8),
        _angles_case(f"{ANGLES}_values", h1, w1, 4 * rng.randint(2, 16)),
        _angles_case(f"{ANGLES}_values", h2, w2, 64),
        _angles_case(f"{ANGLES}_values", w1, h1, 4 * rng.randint(2, 8), base=float(rng.choice([500.0, 1000.0]))),
        _angles_case(f"{ANGLES}_values", 1, 1, 8),
        _angles_case(f"{ANGLES}_values", 4, 7, 12, device="cpu"),
        _angles_meta_case(f"{ANGLES}_values", 3, 5, 8),
        # apply_rope_2d: the worked example, then x of every layout, prefix tokens, dtypes and bases.
        _apply_case(f"{APPLY}_values", worked, 1, 2),
        _apply_case(f"{APPLY}_values", x_of(2, 4, 15, 8), 3, 5),
        _apply_case(f"{APPLY}_values", x_of(2, 3, 1 + h3 * w3, 4 * rng.randint(2, 8)), h3, w3, prefix=1),
        _apply_case(f"{APPLY}_values", x_of(1, 2, 5 + h4 * w4, 16), h4, w4, prefix=5),
        _apply_case(f"{APPLY}_values", x_of(3, h5 * w5, 12), h5, w5, base=float(rng.choice([10.0, 1000.0]))),
        _apply_case(f"{APPLY}_values", x_of(2, 2, 1 + 7 * 4, 8, dtype=torch.float64), 7, 4, prefix=1),
        # Half precision far from (0, 0), a side of 40 to 60 patches (ViT-H at 896 pixels has 64): angles rounded
        # to the half dtype are off there by several units in the last place of each coordinate.
        _apply_case(f"{APPLY}_values", x_of(2, 1 + far * 5, 32, dtype=torch.float16), far, 5, prefix=1),
        _apply_case(f"{APPLY}_values", x_of(2, 3 * far, 16, dtype=torch.bfloat16), 3, far),
        _apply_meta_case(f"{APPLY}_values", (2, 3, 1 + 3 * 4, 8), 3, 4, 1),
        # The relative property: a query and a key the same at every patch, drawn apart for each head.
        _relative_case(f"{APPLY}_relative", generator, 3, 5, 8, 2),
        _relative_case(f"{APPLY}_relative", generator, max(h3, w3), min(h3, w3), 16, 3, prefix=1),
        _relative_case(f"{APPLY}_relative", generator, min(h5, w5), max(h5, w5) + 1, 12, 2, prefix=2,
                       base=1000.0, dtype=torch.float64),
        _relative_case(f"{APPLY}_relative", generator, 5, 7, 8, 1, prefix=1, base=float(rng.choice([10.0, 30.0]))),
        *_invalid(generator),
        # Probes, worth nothing: small grids of each function, both orientations.
        _angles_case(f"{ANGLES}_values", 2, 3, 4, scored=False),
        _angles_case(f"{ANGLES}_values", 3, 2, 8, scored=False),
        _apply_case(f"{APPLY}_values", x_of(6, 8), 2, 3, scored=False),
        _apply_case(f"{APPLY}_values", x_of(1, 2, 1 + 6, 8), 3, 2, prefix=1, scored=False),
        _relative_case(f"{APPLY}_relative", generator, 2, 3, 8, 1, scored=False),
    ]
    return cases + contract_cases(ANGLES_CONTRACT, rng, generator) + contract_cases(CONTRACT, rng, generator)


# The behaviour contract (autograder/core/behaviour.py): rope_2d_angles', the task's first function (module
# docstring). A cache keyed on the grid alone, or a table handed out twice, fails it.
BEHAVIOUR = Behaviour(f"{ANGLES}_values", lambda rng, g: ((rng.randint(2, 5), rng.randint(6, 9), 12), {}),
                      view="pair", vary={"grid_h": (7,), "grid_w": (3,), "head_dim": (16,), "base": (500.0,)})
