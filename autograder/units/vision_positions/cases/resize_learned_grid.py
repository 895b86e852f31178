"""Hidden cases for ``resize_learned_grid``.

What is checked: the patch rows of the table, seen as an image (1, dim, old_h, old_w) with patch
``n = r * old_w + c`` at row r and column c, resampled to ``new_grid`` by ``F.interpolate`` with the mode and
antialias asked for and ``align_corners=False``, in float32, and written back row by row; the ``prefix_tokens``
rows before them copied as they are; the same grid giving the table back unchanged. Every drawn grid that is
oblong has sides of its own (old_h != old_w, new_h != new_w), and dim differs from every side, so that a grid read
as (w, h), column by column, or with its channels and positions confused shows.

Tolerance, from the largest side s = max(old_h, old_w, new_h, new_w) and, for each channel, the largest |value| of
its patch rows, m_ch (each channel is resampled on its own): an atol per channel, (1, dim), so that it holds for an
output of any number of rows (a mistake's may have another), and an rtol for the half dtypes.

* float32 (and float64, which the reference also resamples in float32: the docstring's convention): an output is a
  sum of taps w_i * x_i, at most 4 per axis when enlarging and about 4 * old / new per axis when an antialiased
  side shrinks, with sum |w_i| below 1.4 per axis (the cubic's negative lobes). A float32 formulation errs in
  two places. The source coordinate (i + 0.5) * old / new - 0.5, and with it each weight, is off by float32's
  rounding of a number up to s, 6e-8 * s, which moves the output by at most the kernel's slope (about 2.5 summed
  over the taps) times that, per axis: about 3e-7 * s * m_ch. The sum of the taps is off by float32's rounding
  of each partial sum, at most (taps) * 6e-8 * 1.4 * m_ch per axis. Measured against an independent float64
  formulation (a matrix of weights per axis, out = A_h X A_w^T) over some 300 drawn grids, the reference stays
  within 0.8e-7 * (s + 8) * m_ch. The atol is 1e-6 * (4 + s) * m_ch, rtol 0: about six times that, room for a
  second float32 formulation that errs the other way (checked on every case: the matrices in float64 and in
  float32, two 1D interpolates, F.interpolate on a float64 image all pass). Every declared mistake but the two
  of precision (the half kernel's, below, and a float64 table rounded through float32) moves some entry by a
  tenth of m_ch or more where it is caught, so the margin costs nothing. The
  prefix rows, which every formulation copies, are held to the same atol at a changed grid; a float64 table's
  prefix rounded through float32 is caught at the same grid (below).
* float16 and bfloat16: the reference resamples in float32 and rounds once to the table's dtype. Another correct
  formulation (float64, or float32 by another route) differs from it before that rounding by the float32 error
  above only, so after it by at most one unit in the last place of the output, at most eps(dtype) * |expected|
  for a normal number (and by the float32 error where it rounds near zero). The tolerance is the float32 atol
  and rtol eps(dtype). The CPU's own half kernel (F.interpolate on the half table, bicubic without antialias;
  with antialias it has none and raises) rounds to 11 or 8 bits on the way, which puts the outputs that are small
  beside their taps several units off: a declared mistake, caught on two hand-written cases whose sizes make the
  cubic's weights non-dyadic (7 x 9 -> 11 x 13 in float16, 13 x 11 -> 9 x 7 in bfloat16; measured over 150
  draws each: at least 56 of 1,728 and 22 of 756 outputs off, every draw caught). The half bilinear kernel rounds
  once and agrees with the float32 path: no mistake to declare there.
* Exact (atol and rtol 0) at the same grid: "the same grid gives the table back, unchanged". F.interpolate at the
  same size is the identity bit for bit in every mode, so a function without a shortcut for the same grid passes
  too, except where it rounds a float64 table through float32 (a declared mistake).

A bug of torch (2.13, CPU) that the cases step around: F.interpolate with antialias=True to an output of width 1
gets the rows wrong where the height changes too (a 3 x 2 -> 4 x 1 bilinear resize returns one value four times,
in float32 and float64 alike), and the reference calls it, so a correct separable or matrix formulation would
fail there. No case (hand-written or drawn) resizes to a new width of 1 with antialias on while a height of 2 or
more changes to another of 2 or more (``_avoids_torch_bug``; measured over every grid of sides 1 to 6: exactly
those go wrong); a side of 1 is sent there with antialias off, the height kept, or a height of 1 on either side.

The contract (``CONTRACT``), each level sent by some case of resize_learned_grid_contract: every float dtype; mode
left out (bicubic), "bicubic" or "bilinear"; antialias left out (True), True or False; no prefix token, one (left
out, or passed), several (DeiT's class and distillation tokens, a class token and registers); the grid enlarged,
shrunk, one side up and one down, or kept; square or oblong grids on either side (a kept grid is square to square
or oblong to oblong; one side up and one down is never square to square); a side of 1 or none; the grids by
position or every argument by keyword. One case sends a meta table (no GPU needed): the result must be made there,
of its shape and the table's dtype (no values are compared).

Decisions: the values test (10 points) holds the hand-written and drawn float32 cases with prefix_tokens=0 passed,
so that a slip of the prefix is charged in the prefix test (5 points), whose cases send no prefix, the default
one, two and five; the contract test (5 points) holds the rest: half and float64 tables, the same grid, sides of 1,
the drawn design. A mistake of the resampling shows in all three tests and is charged once, in the values test
(grade.py). The Behaviour contract fits: the table is trained (gradients must reach it through the resampling),
any memory layout of it must give the same answer, and a result cached on part of the arguments (the grids, the
mode, antialias, the table's values) fails the calls one after another. Its base call changes the grid, where the
gradient is worth checking; a function that hands out the table itself at the same grid is not caught by it (the
reference clones; the docstring says only that the table is left as it was).
"""

import torch
import torch.nn.functional as F

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, passed, raises_check,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import FLOAT_DTYPES, Contract, Factor, contract_cases, dtype_of
from solutions import vision_positions as ref

NAME = "resize_learned_grid"
HALF = (torch.float16, torch.bfloat16)
VALUES, PREFIX, CONTRACT_TEST, INVALID = ("resize_learned_grid_values", "resize_learned_grid_prefix",
                                          "resize_learned_grid_contract", "resize_learned_grid_invalid_args")

# What a condition of failure usually means (diagnosis.condition): pointers, never verdicts.
HINTS = {
    ("shape", ("oblong to oblong", "oblong to square", "square to oblong")): "square grids work and oblong ones "
        "do not: a grid is (rows, columns) = (h, w) on both sides, patch n = r * old_w + c, so "
        "patches.reshape(old_h, old_w, dim) and size=(new_h, new_w)",
    ("shape", ("oblong to oblong", "oblong to square")): "an oblong old grid goes wrong: patch n = r * old_w + c "
                                                         "lies at row r, column c, so "
                                                         "patches.reshape(old_h, old_w, dim).permute(2, 0, 1)",
    ("shape", ("oblong to oblong", "square to oblong")): "an oblong new grid goes wrong: interpolate's size is "
                                                         "(new_h, new_w), and the result goes back row by row, "
                                                         "permute(1, 2, 0).reshape(new_h * new_w, dim)",
    ("change", "shrunk"): "a smaller grid goes wrong: pass antialias through to F.interpolate (it averages over the "
                          "area each new patch covers when a side shrinks)",
    ("change", "one side up, one down"): "a grid that grows on one side and shrinks on the other goes wrong: each "
                                         "side is resized on its own, size=(new_h, new_w)",
    ("change", "the same grid"): "the same grid goes wrong: it must give the table back unchanged (table.clone(), "
                                 "or an interpolation that changes nothing, in the table's own precision)",
    ("mode", "mode 'bilinear'"): "mode='bilinear' goes wrong: pass mode through to F.interpolate",
    ("mode", "mode left out"): "a call without mode= goes wrong: mode defaults to 'bicubic' (F.interpolate's own "
                               "default is 'nearest')",
    ("antialias", "antialias=False"): "antialias=False goes wrong: pass antialias through to F.interpolate",
    ("antialias", "antialias left out"): "a call without antialias= goes wrong: it defaults to True here "
                                         "(F.interpolate's own default is False)",
    ("prefix", "no prefix"): "prefix_tokens=0 goes wrong: then every row is a patch (beware table[-0:], which is "
                             "the whole table)",
    ("prefix", "several prefix tokens"): "several prefix tokens go wrong: all prefix_tokens rows come first and are "
                                         "kept as they are, table[:prefix_tokens]",
    ("prefix", "prefix left out (1)"): "a call without prefix_tokens= goes wrong: it defaults to 1, a class token",
    ("dtype", "dtype float16"): "a float16 table goes wrong: turn the patch rows to float32, interpolate, and round "
                                "back to float16 once",
    ("dtype", "dtype bfloat16"): "a bfloat16 table goes wrong: turn the patch rows to float32, interpolate, and "
                                 "round back to bfloat16 once",
    ("dtype", "dtype float64"): "a float64 table goes wrong: return float64, and copy the rows that are not "
                                "resampled (the prefix, the whole table at the same grid) with their own values",
    ("side 1", "a side of 1"): "a grid of one row or one column goes wrong: look for a squeeze(), or an axis "
                               "dropped when its length is 1",
    ("passing", "every argument by keyword"): "a call that names its arguments (table=, old_grid=, new_grid=) goes "
                                              "wrong: keep the parameter names of the signature",
}


def _resize(table, old_grid, new_grid, prefix, mode, antialias, *, grid_from="after the prefix", prefix_at="first",
            read="rows", size_swapped=False, write="rows", align_corners=False, in_float32=True):
    """The resampling written out, with one slip or none (the defaults: none, but no shortcut for the same grid).

    ``grid_from``: where the patches are read ("after the prefix", "first rows": table[:hw] with the prefix kept,
    "prefix at the end": table[:hw], the prefix from table[hw:]); ``prefix_at``: "first", "last" or "dropped";
    ``read``: how the patches become the image ("rows", "(w, h)": reshaped (old_w, old_h), "columns": patch n at
    (n % old_h, n // old_h), "no permute": reshaped (dim, old_h, old_w)); ``write``: how the image becomes rows
    ("rows", "columns", "no permute"); ``in_float32`` False: in the table's own dtype.
    """
    (old_h, old_w), (new_h, new_w) = old_grid, new_grid
    dim, cells = table.shape[1], old_h * old_w
    prefix_rows, patches = {"after the prefix": (table[:prefix], table[prefix:]),
                            "first rows": (table[:prefix], table[:cells]),
                            "prefix at the end": (table[cells:], table[:cells])}[grid_from]
    x = patches.float() if in_float32 else patches
    image = {"rows": lambda: x.reshape(old_h, old_w, dim).permute(2, 0, 1),
             "(w, h)": lambda: x.reshape(old_w, old_h, dim).permute(2, 0, 1),
             "columns": lambda: x.reshape(old_w, old_h, dim).permute(2, 1, 0),
             "no permute": lambda: x.reshape(dim, old_h, old_w)}[read]()  # (dim, H, W)
    size = (new_w, new_h) if size_swapped else (new_h, new_w)
    if mode == "nearest":  # F.interpolate's default mode, which takes neither antialias nor align_corners
        resized = F.interpolate(image[None], size=size)[0]
    else:
        resized = F.interpolate(image[None], size=size, mode=mode, antialias=antialias,
                                align_corners=align_corners)[0]  # (dim, new H, new W)
    rows = {"rows": lambda: resized.permute(1, 2, 0).reshape(-1, dim),
            "columns": lambda: resized.permute(2, 1, 0).reshape(-1, dim),
            "no permute": lambda: resized.reshape(-1, dim)}[write]().to(table.dtype)  # (new_h * new_w, dim)
    return {"first": lambda: torch.cat((prefix_rows, rows)), "last": lambda: torch.cat((rows, prefix_rows)),
            "dropped": lambda: rows}[prefix_at]()


def _mistakes(table, old_grid, new_grid, prefix, mode, antialias):
    """The usual slips, each as the output it gives on these inputs (``mode`` and ``antialias`` as used)."""
    def made(**slip):
        return lambda: _resize(table, old_grid, new_grid, prefix, mode, antialias, **slip)

    other = "bilinear" if mode == "bicubic" else "bicubic"
    found = []
    if prefix:
        found += [
            Mistake("the prefix rows are dropped: out starts with table[:prefix_tokens] as they are (the class "
                    "token has no place on the grid, and the model still reads it), then the new grid's rows.",
                    made(prefix_at="dropped")),
            Mistake("the prefix rows are put after the patches: they come first, as in the table, "
                    "out = cat((table[:prefix_tokens], resized rows)).", made(prefix_at="last")),
            Mistake("the grid is read from the table's first old_h * old_w rows, so the class token is resampled as "
                    "patch (0, 0) and the last patch is lost: the patches are table[prefix_tokens:], after the "
                    "prefix.", made(grid_from="first rows")),
            Mistake("the prefix is taken from the table's end and the grid from its start: the prefix rows come "
                    "first, table[:prefix_tokens], and the patches after them.",
                    made(grid_from="prefix at the end")),
        ]
    found += [
        Mistake("the old grid is reshaped (old_w, old_h) instead of (old_h, old_w): patch n = r * old_w + c lies "
                "at row r and column c, so patches.reshape(old_h, old_w, dim).", made(read="(w, h)")),
        Mistake("the old grid is read column by column (patch n taken as row n % old_h, column n // old_h): "
                "patches are numbered row by row, n = r * old_w + c, so reshape(old_h, old_w, dim) and then "
                "permute(2, 0, 1).", made(read="columns")),
        Mistake("the new grid is written column by column: its patches go row by row too, "
                "resized[0].permute(1, 2, 0).reshape(new_h * new_w, dim).", made(write="columns")),
        Mistake("both grids are taken as (w, h): old_grid and new_grid are (rows, columns), (h, w), as an "
                "image's (H, W) and interpolate's size are.", made(read="(w, h)", size_swapped=True)),
        Mistake("the new grid's sides are swapped, size=(new_w, new_h): interpolate's size is (H, W), "
                "(new_h, new_w).", made(size_swapped=True)),
        Mistake("the table is reshaped to (1, dim, old_h, old_w) without moving its channels: its rows are patches "
                "and its columns channels, so reshape(old_h, old_w, dim) and then permute(2, 0, 1) puts the "
                "channels first.", made(read="no permute")),
        Mistake("the resized image (1, dim, new_h, new_w) is reshaped to (new_h * new_w, dim) without moving its "
                "channels back: permute(1, 2, 0) first, then reshape.", made(write="no permute")),
        Mistake("channels and positions are confused both ways: the table reshaped straight to (1, dim, old_h, "
                "old_w) and the result straight back to (new_h * new_w, dim); the rows are patches, so "
                "reshape(old_h, old_w, dim).permute(2, 0, 1) in, and permute(1, 2, 0) out.",
                made(read="no permute", write="no permute")),
        Mistake("align_corners=True: the convention is align_corners=False, where a patch is an area with its "
                "centre half a step in, so the corner patches' centres are not pinned to each other (1 x 2 -> "
                "1 x 4 gives 0, 0.25, 0.75, 1, not 0, 1/3, 2/3, 1).", made(align_corners=True)),
        Mistake(f"the mode argument is ignored (always {other}): pass mode= through to F.interpolate.",
                lambda: _resize(table, old_grid, new_grid, prefix, other, antialias)),
        Mistake("F.interpolate is called without mode=, so it uses its own default, 'nearest': pass mode (and "
                "antialias) through.", lambda: _resize(table, old_grid, new_grid, prefix, "nearest", False)),
        Mistake("antialias is not applied where antialias=True asks for it (F.interpolate's own default is False, "
                "this function's True): pass antialias= through. It averages over the area a new patch covers "
                "when a side shrinks, and bicubic's antialiased kernel is PIL's (a = -0.5), which differs even when "
                "the grid grows." if antialias else
                "antialias is applied where antialias=False asks for the plain kernel: pass antialias= through to "
                "F.interpolate.", lambda: _resize(table, old_grid, new_grid, prefix, mode, not antialias)),
    ]
    if table.dtype in HALF and mode == "bicubic" and not antialias and tuple(old_grid) != tuple(new_grid):
        found.append(Mistake("the interpolation runs in the table's half dtype, which rounds on the way: turn the "
                             "patch rows to float32, interpolate, and round back to the table's dtype once (timm's "
                             "resample_abs_pos_embed does).", made(in_float32=False)))
    if table.dtype == torch.float64 and tuple(old_grid) == tuple(new_grid):
        # First: at the same grid the slips of reading a grid (both grids taken as (w, h), say) resample it unchanged
        # too, so they give this output as well; the shortcut is what the output shows is missing.
        found.insert(0, Mistake(
            "the same grid is resampled instead of copied: interpolation runs in float32, so a float64 table read at "
            "its own grid comes back rounded to float32's precision; where new_grid equals old_grid, return "
            "table.clone().", made()))
    if table.dtype == torch.float64:
        found.append(Mistake(
            "rows that are only copied are rounded through float32: the interpolation runs in float32, but the "
            "prefix rows, and the whole table when the grid does not change, keep the table's float64 values bit "
            "for bit (table[:prefix_tokens] as it is; table.clone() at the same grid).",
            lambda: ref.resize_learned_grid(table.float(), old_grid, new_grid, prefix_tokens=prefix, mode=mode,
                                            antialias=antialias).to(table.dtype)))
    return found


def _tolerance(table, old_grid, new_grid, prefix):
    """(atol, rtol) of the module docstring: atol one number per channel, (1, dim), so that it holds for an output
    of any number of rows (a mistake's may have another); 0 and 0 at the same grid."""
    dim = table.shape[1]
    if tuple(old_grid) == tuple(new_grid) or table.shape[0] <= prefix:
        return torch.zeros(1, dim, dtype=torch.float64), 0.0
    largest = max(*old_grid, *new_grid)
    channel = table[prefix:].to(torch.float64).abs().amax(dim=0, keepdim=True)  # (1, dim): m_ch
    return 1e-6 * (4 + largest) * channel, (torch.finfo(table.dtype).eps if table.dtype in HALF else 0.0)


def _levels(table, old_grid, new_grid, prefix, mode, antialias, by_keyword):
    """The case's levels of the contract's factors, read off the call."""
    (old_h, old_w), (new_h, new_w) = old_grid, new_grid
    if (old_h, old_w) == (new_h, new_w):
        change = "the same grid"
    elif new_h >= old_h and new_w >= old_w:
        change = "enlarged"
    elif new_h <= old_h and new_w <= old_w:
        change = "shrunk"
    else:
        change = "one side up, one down"
    return {
        "dtype": f"dtype {str(table.dtype).replace('torch.', '')}",
        "mode": "mode left out" if mode is None else f"mode {mode!r}",
        "antialias": "antialias left out" if antialias is None else f"antialias={antialias}",
        "prefix": {None: "prefix left out (1)", 0: "no prefix", 1: "one prefix token"}.get(prefix,
                                                                                       "several prefix tokens"),
        "change": change,
        "shape": f"{'square' if old_h == old_w else 'oblong'} to {'square' if new_h == new_w else 'oblong'}",
        "side 1": "a side of 1" if 1 in (old_h, old_w, new_h, new_w) else "no side of 1",
        "passing": "every argument by keyword" if by_keyword else "grids by position",
    }


def _case(test, table, old_grid, new_grid, prefix=None, mode=None, antialias=None, by_keyword=False, scored=True):
    """One call; ``prefix``, ``mode`` and ``antialias`` None are left out of it (the defaults: 1, bicubic, True)."""
    old_grid, new_grid = tuple(old_grid), tuple(new_grid)
    kwargs = {name: value for name, value in (("prefix_tokens", prefix), ("mode", mode), ("antialias", antialias))
              if value is not None}
    args = [table, old_grid, new_grid]
    if by_keyword:
        args, kwargs = [], {"table": table, "old_grid": old_grid, "new_grid": new_grid, **kwargs}
    label = call_label(NAME, args, kwargs)
    used_prefix, used_mode = 1 if prefix is None else prefix, mode or "bicubic"
    used_antialias = True if antialias is None else antialias
    expected = ref.resize_learned_grid(table, old_grid, new_grid, prefix_tokens=used_prefix, mode=used_mode,
                                       antialias=used_antialias)
    (new_h, new_w) = new_grid
    coordinates = None
    if not used_prefix:  # where on the new grid the wrong rows lie (no prefix row to place there)
        cells = torch.arange(new_h * new_w)[:, None].expand(expected.shape)
        coordinates = {"the new grid's row r": cells // new_w, "the new grid's column c": cells % new_w}
    atol, rtol = _tolerance(table, old_grid, new_grid, used_prefix)
    check = tensor_check(label, expected, atol=atol, rtol=rtol,
                         mistakes=_mistakes(table, old_grid, new_grid, used_prefix, used_mode, used_antialias),
                         axes=("token", "channel"), coordinates=coordinates,
                         inputs=("table", "old_grid", "new_grid"))
    (old_h, old_w), rows = old_grid, table.shape[0]
    return Case(test, label, call_probe(NAME, args, kwargs), check,
                features=_levels(table, old_grid, new_grid, prefix, mode, antialias, by_keyword),
                sizes={"old_h": old_h, "old_w": old_w, "new_h": new_h, "new_w": new_w, "dim": table.shape[1],
                       "prefix_tokens": used_prefix, "rows": rows, "old_h * old_w": old_h * old_w,
                       "new_h * new_w": new_h * new_w, "prefix_tokens + new_h * new_w": used_prefix + new_h * new_w},
                scored=scored)


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.resize_learned_grid, args, kwargs)
    return _case(NAME, given["table"], given["old_grid"], given["new_grid"], prefix=given.get("prefix_tokens"),
                 mode=given.get("mode"), antialias=given.get("antialias")).check


def _table(generator, prefix, old_grid, dim, dtype=torch.float32):
    """A learned table of standard normal rows, drawn in float64 and rounded to ``dtype``."""
    rows = prefix + old_grid[0] * old_grid[1]
    return torch.randn(rows, dim, generator=generator, dtype=torch.float64).to(dtype)


def _avoids_torch_bug(old_grid, new_grid, antialias):
    """False where torch's antialiased CPU kernel gets the reference wrong: a new width of 1 while a height of 2 or
    more changes to another of 2 or more (module docstring)."""
    (old_h, _), (new_h, new_w) = old_grid, new_grid
    return not (antialias is not False and new_w == 1 and new_h != old_h and min(old_h, new_h) >= 2)


def _grids(levels, rng):
    """(old_grid, new_grid) at a row's levels of change, shape and side 1, sides from 1 to 9, never where torch's
    bug would bite."""
    antialias = {"antialias left out": None, "antialias=True": True, "antialias=False": False}[levels["antialias"]]
    one = levels["side 1"] == "a side of 1"
    old_square, new_square = (part == "square" for part in levels["shape"].split(" to "))
    for _ in range(100_000):  # a few dozen tries at most for any row the exclusions allow
        sides = [rng.randint(1 if one else 2, 9) for _ in range(4)]
        if one:
            sides[rng.randrange(4)] = 1
        old_h, old_w, new_h, new_w = sides
        old_w = old_h if old_square else old_w
        new_w = new_h if new_square else new_w
        if levels["change"] == "the same grid":
            new_h, new_w = old_h, old_w
        old_grid, new_grid = (old_h, old_w), (new_h, new_w)
        found = _levels(torch.empty(0, 1), old_grid, new_grid, 0, None, None, False)
        if all(found[name] == levels[name] for name in ("change", "shape", "side 1")) and \
                _avoids_torch_bug(old_grid, new_grid, antialias):
            return old_grid, new_grid
    raise ValueError(f"no grids found for {levels}")


def _from_contract(levels, rng, generator):
    """A call of resize_learned_grid_contract at one row of the contract's design."""
    old_grid, new_grid = _grids(levels, rng)
    prefix = {"prefix left out (1)": None, "no prefix": 0, "one prefix token": 1,
              "several prefix tokens": rng.choice([2, 3, 5])}[levels["prefix"]]
    mode = {"mode left out": None, "mode 'bicubic'": "bicubic", "mode 'bilinear'": "bilinear"}[levels["mode"]]
    antialias = {"antialias left out": None, "antialias=True": True, "antialias=False": False}[levels["antialias"]]
    dim = rng.randint(10, 16)  # above every side: a size of its own
    table = _table(generator, 1 if prefix is None else prefix, old_grid, dim, dtype_of(levels["dtype"]))
    return _case(CONTRACT_TEST, table, old_grid, new_grid, prefix=prefix, mode=mode, antialias=antialias,
                 by_keyword=levels["passing"] == "every argument by keyword")


# The contract: what the docstring lets vary, each level sent by some case of resize_learned_grid_contract, every
# pair of levels together in one (autograder/core/contracts.py).
CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    Factor("mode", ("mode left out", "mode 'bicubic'", "mode 'bilinear'")),
    Factor("antialias", ("antialias left out", "antialias=True", "antialias=False")),
    Factor("prefix", ("prefix left out (1)", "no prefix", "one prefix token", "several prefix tokens")),
    Factor("change", ("enlarged", "shrunk", "one side up, one down", "the same grid")),
    Factor("shape", ("square to square", "square to oblong", "oblong to square", "oblong to oblong")),
    Factor("side 1", ("a side of 1", "no side of 1")),
    Factor("passing", ("grids by position", "every argument by keyword")),
), _from_contract, excluded=(
    (("change", "the same grid"), ("shape", "square to oblong"), "the same grid is square on both sides or on neither"),
    (("change", "the same grid"), ("shape", "oblong to square"), "the same grid is square on both sides or on neither"),
    (("change", "one side up, one down"), ("shape", "square to square"),
     "a square grid resized to a square one grows or shrinks on both sides"),
))


def _meta_case(test, old_grid, new_grid, prefix, dim, dtype):
    """A table on the meta device, which needs no GPU: the result must be made there, of (prefix + new_h * new_w,
    dim) and the table's dtype (a meta tensor has no values to compare)."""
    table = torch.empty(prefix + old_grid[0] * old_grid[1], dim, dtype=dtype, device="meta")
    args, kwargs = [table, tuple(old_grid), tuple(new_grid)], {"prefix_tokens": prefix}
    label = call_label(NAME, args, kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.resize_learned_grid, *args, **kwargs)
    return Case(test, label, call_probe(NAME, args, kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("table", "old_grid", "new_grid")),
                sizes={"old_h": old_grid[0], "old_w": old_grid[1], "new_h": new_grid[0], "new_w": new_grid[1],
                       "dim": dim, "prefix_tokens": prefix})


def _invalid(generator, shape, old_grid, new_grid, kwargs, why):
    args = [torch.randn(*shape, generator=generator), tuple(old_grid), tuple(new_grid)]
    label = call_label(NAME, args, kwargs)
    return Case(INVALID, label, call_probe(NAME, args, kwargs), raises_check(label, "ValueError", f" ({why})"))


def _oblong(rng, low, high):
    """(h, w), two different sides in low..high."""
    h, w = rng.sample(range(low, high + 1), 2)
    return h, w


def build(rng, generator):
    def grids(old_low, old_high, new_low, new_high):
        """An oblong old grid and an oblong new one, their four sides all different."""
        while True:
            old, new = _oblong(rng, old_low, old_high), _oblong(rng, new_low, new_high)
            if len(set(old + new)) == 4:
                return old, new

    def dim():
        return rng.randint(10, 16)  # above every side drawn here but the ViT's: a size of its own

    grown, grown_too, shrunk, shrunk_too, shrunk_also = (grids(3, 6, 7, 12), grids(2, 5, 6, 9), grids(7, 12, 2, 6),
                                                         grids(6, 9, 2, 5), grids(8, 12, 3, 7))
    while True:  # one side up, one down: the height grows, the width shrinks, four sides of their own
        old_h, old_w = rng.randint(2, 6), rng.randint(5, 10)
        new_h, new_w = rng.randint(old_h + 1, old_h + 5), rng.randint(2, old_w - 1)
        if len({old_h, old_w, new_h, new_w}) == 4:
            mixed = ((old_h, old_w), (new_h, new_w))
            break

    def values(grid, **kwargs):
        old, new = grid
        return _case(VALUES, _table(generator, 0, old, dim()), old, new, prefix=0, **kwargs)

    def prefixed(grid, prefix, width=None, **kwargs):
        old, new = grid
        table = _table(generator, 1 if prefix is None else prefix, old, width or dim())
        return _case(PREFIX, table, old, new, prefix=prefix, **kwargs)

    cases = [
        # The docstring's worked example: [[0], [1]] at 1 x 4, bilinear, gives [[0], [0.25], [0.75], [1]].
        _case(VALUES, torch.tensor([[0.0], [1.0]]), (1, 2), (1, 4), prefix=0, mode="bilinear"),
        values(grown),  # bicubic with antialias, both left out
        values(grown_too, mode="bicubic", antialias=False),
        values(shrunk, mode="bicubic", antialias=True),
        values(shrunk_too, mode="bilinear", antialias=False),
        values(shrunk_also, mode="bilinear"),
        values(mixed, antialias=False),
        values(grids(2, 6, 3, 9), mode="bilinear", antialias=False),
        values(grids(3, 9, 2, 9), mode=rng.choice(["bicubic", "bilinear"]), antialias=rng.random() < 0.5),
        # The prefix: ViT-B/16's class token from 224 to 384 pixels, DeiT's two tokens, a class token and four
        # registers, none, and one passed.
        prefixed(((14, 14), (24, 24)), None, width=8),
        prefixed(grids(6, 10, 2, 5), 2, mode="bilinear"),
        prefixed(mixed, 5, mode="bicubic", antialias=False),
        prefixed(grids(2, 5, 6, 9), 0, antialias=False),
        prefixed(grids(3, 8, 3, 8), 1, mode=rng.choice(["bicubic", "bilinear"])),
        # The contract's corners by hand: half tables whose CPU half kernel rounds on the way (sizes with
        # non-dyadic weights), float64 tables with copied rows, the same grid, a single column kept.
        _case(CONTRACT_TEST, _table(generator, 1, (7, 9), 12, torch.float16), (7, 9), (11, 13), prefix=1,
              mode="bicubic", antialias=False),
        _case(CONTRACT_TEST, _table(generator, 0, (13, 11), 12, torch.bfloat16), (13, 11), (9, 7), prefix=0,
              antialias=False),
        _case(CONTRACT_TEST, _table(generator, 2, (5, 3), 7, torch.float64), (5, 3), (5, 3), prefix=2),
        _case(CONTRACT_TEST, _table(generator, 1, (4, 6), 5, torch.float64), (4, 6), (7, 4), mode="bilinear"),
        _case(CONTRACT_TEST, _table(generator, 1, (6, 4), 9), (6, 4), (6, 4)),
        _case(CONTRACT_TEST, _table(generator, 1, (5, 1), 6), (5, 1), (8, 1), antialias=False),
        _case(CONTRACT_TEST, _table(generator, 3, (1, 5), 6, torch.float16), (1, 5), (1, 8), prefix=3,
              mode="bilinear", by_keyword=True),
        # Probes, worth nothing: small oblong grids.
        _case(VALUES, _table(generator, 0, (2, 3), 4), (2, 3), (4, 5), prefix=0, scored=False),
        _case(VALUES, _table(generator, 0, (4, 5), 3), (4, 5), (2, 3), prefix=0, mode="bilinear", scored=False),
        _case(PREFIX, _table(generator, 1, (3, 2), 4), (3, 2), (5, 4), scored=False),
        _case(CONTRACT_TEST, _table(generator, 1, (3, 2), 4, torch.float64), (3, 2), (3, 2), scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    cases += [
        _invalid(generator, (1, 13, 6), (3, 4), (5, 6), {}, "the table is (1, 13, 6): it must be two-dimensional, "
                                                            "(prefix_tokens + old_h * old_w, dim)"),
        _invalid(generator, (13,), (3, 4), (5, 6), {}, "the table is (13,): it must be two-dimensional"),
        _invalid(generator, (12, 6), (3, 4), (5, 6), {}, "12 rows, but prefix_tokens + old_h * old_w = 1 + 3 * 4 = 13"),
        _invalid(generator, (15, 6), (3, 4), (5, 6), {"prefix_tokens": 2}, "15 rows, but 2 + 3 * 4 = 14"),
        _invalid(generator, (1, 6), (0, 4), (5, 6), {}, "old_grid has a side of 0"),
        _invalid(generator, (13, 6), (3, 4), (5, 0), {}, "new_grid has a side of 0"),
        _invalid(generator, (13, 6), (3, 4), (-2, 6), {}, "new_grid has a negative side"),
        _invalid(generator, (11, 6), (3, 4), (5, 6), {"prefix_tokens": -1}, "prefix_tokens = -1 is negative"),
        _invalid(generator, (13, 6), (3, 4), (5, 6), {"mode": "nearest"},
                 "mode 'nearest' is neither 'bicubic' nor 'bilinear'"),
        _invalid(generator, (13, 6), (3, 4), (5, 6), {"mode": "area"},
                 "mode 'area' is neither 'bicubic' nor 'bilinear'"),
        # Modes F.interpolate itself takes for a (1, dim, h, w) image, or refuses with another exception: a mode left
        # for it to check is not checked.
        _invalid(generator, (13, 6), (3, 4), (5, 6), {"mode": "lanczos"},
                 "mode 'lanczos' is neither 'bicubic' nor 'bilinear', though F.interpolate would resample with it"),
        _invalid(generator, (13, 6), (3, 4), (5, 6), {"mode": "linear", "antialias": False},
                 "mode 'linear' is neither 'bicubic' nor 'bilinear'"),
        _invalid(generator, (13, 6), (3, 4), (3, 4), {"mode": "lanczos"},
                 "mode 'lanczos' is neither 'bicubic' nor 'bilinear', checked at the same grid too"),
    ]
    return cases + [_meta_case(CONTRACT_TEST, (3, 4), (5, 7), 1, 8, rng.choice([torch.float32, torch.float16]))]


# The behaviour contract (autograder/core/behaviour.py): the table is trained (gradients reach it through the
# resampling), any memory layout of it gives the same answer, and the result depends on every argument.
BEHAVIOUR = Behaviour(CONTRACT_TEST, lambda rng, g: ((draw(g, 1 + 3 * 4, 8), (3, 4), (rng.randint(5, 7), 9)), {}),
                      trained=("table",), layouts=("table",),
                      vary={"new_grid": ((4, 2),), "mode": ("bilinear",), "antialias": (False,)})
