"""Hidden cases for ``sincos_2d_table``.

What is checked: patch ``n = r * grid_w + c`` gets [half(r), half(c)], each half its D = dim / 2 channels with all
the sines first, then all the cosines, at w_k = base ** (-4k / dim); the ``prefix_tokens`` rows before the patches
are zeros; the table is of ``dtype`` on ``device``. The values test's grids are oblong, each side a size of its own
(grid_h != grid_w), so that a table whose halves are swapped, or whose patches are numbered column by column, shows.

Tolerance, from the largest position p on the grid, max(grid_h, grid_w) - 1 (one number for the whole table: a
mistake's table may have another number of rows, and is compared at the same tolerance). The reference computes in
float64 and rounds once.

* float32: a formulation in float32 (the usual one) carries float32's rounding of w_k and of the product p * w_k,
  about 2 * 6e-8 relative, so its angle is off by about 1.2e-7 * p radians, and sin or cos by as much plus half a
  unit in the last place (6e-8). Another route to w_k (exp(-4k/dim * ln base), 1 / base ** (4k/dim)) moves w_k by
  at most 9.2 * 6e-8 relative at w_k ~ 1e-4, where p * w_k is small: below 3e-8 absolute. The tolerance is
  1e-5 + 2.5e-7 * p, twice the product's error with the first unit's floor (sinusoidal_table's), and rtol 0;
  every declared mistake moves some entry by far more on the cases below (checked: each fails a scored case).
* float64: the same with float64's rounding, about 4.4e-16 * p plus 1.1e-16, below 1e-13 for the grids drawn
  (sides below 64): 1e-12. A table computed in float32 and cast to float64 fails it, as the docstring asks for
  float64 (and the check says "right to float32's precision only").
* float16 and bfloat16: the entries are in [-1, 1], where the spacing of the dtype's numbers is at most eps / 2
  (the spacing below 1). The reference's entry is the exact value rounded once; a float32 formulation rounded once
  at the end rounds a number within float32's error of the exact value, so the two land on the same number or on
  neighbours: at most eps / 2 apart. The tolerance is eps(dtype) / 2 + 2.5e-7 * p and rtol 0: 4.9e-4 for float16,
  3.9e-3 for bfloat16. A table whose angles are computed in the half dtype itself is off by about eps * p / 2 at
  the largest angles (1.5 eps at p = 19, 6 eps at p = 23 in bfloat16, measured), and fails once the grid is large
  enough: two hand-written cases send a half table with sides past 16 for that, as the docstring's "computed in
  float64 and rounded once" asks; the hints say so. On the contract's small grids (sides up to 9) it may pass.

The contract (``CONTRACT``), each level sent by some case of sincos_2d_table_contract: every float dtype (float32
left out or passed); grid_h below, equal to and above grid_w, with or without a side of 1 (a grid of one row, one
column, or one patch; drawn sides 2..9, odd and even); no prefix token (prefix_tokens left out or 0), one (a
class token), several (a class token and registers); dim 4 (one frequency per axis, where the layout of a half
and the exponent cannot show) or more (dim / 4 odd or even); the default base or another; the arguments by
position or by keyword. One case asks for the meta device (no GPU needed): the table must be made there, of its
shape and dtype (no values are compared); another passes device=torch.device("cpu").

Decisions: the values test (12 points) holds the hand-written and drawn float32 and float64 tables, none with a
prefix; prefix rows, half dtypes and sides of 1 are the contract test's, as the rubric words them. A mistake shows
in both tests' cases only where it is of the values (charged once, in the values test: grade.py). The Behaviour
contract fits: the table is fixed for its settings, so caching it is tempting; a cache handed out twice
(``functools.lru_cache`` returning the same tensor) or keyed on part of the settings fails it; the call takes no
tensor, so no check names ``inputs=`` and the Behaviour has no ``trained`` or ``layouts``. A table computed in the
half dtype is no declared Mistake: its output depends on the order of the student's own roundings, so no one
formulation names it; the hints and the advice say it instead.
"""

import torch

from autograder.core.behaviour import Behaviour
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_arg, device_check, dtype_arg, passed,
                                   raises_check, size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import FLOAT_DTYPES, Contract, Factor, contract_cases, dtype_of
from solutions import vision_positions as ref

NAME = "sincos_2d_table"
HALF = (torch.float16, torch.bfloat16)

# What a condition of failure usually means (diagnosis.condition): pointers, never verdicts.
HINTS = {
    ("grid", ("grid_h < grid_w", "grid_h > grid_w")): "square grids work and oblong ones do not: patch n = "
                                                       "r * grid_w + c is at row n // grid_w and column n % grid_w; "
                                                       "look at which side goes with which axis of your meshgrid",
    ("size 1", "a size of 1"): "a grid of one row or one column goes wrong: look for a squeeze(), or an axis "
                               "dropped or mixed up when its length is 1",
    ("prefix", ("one prefix token", "several prefix tokens")): "the table without prefix tokens is right: the "
                                                                "prefix_tokens rows come first, and are zeros",
    ("prefix", "several prefix tokens"): "one prefix token works and several do not: prefix_tokens rows of zeros "
                                         "come first, however many (a class token and registers)",
    ("dim", "dim > 4"): "with one frequency per axis (dim 4) it works: look at the frequencies, w_k = base ** "
                        "(-4k / dim), and at the order inside a half (all its sines, then all its cosines)",
    ("dtype", "dtype float64"): "look at where the table takes its dtype: compute in float64 and return the dtype "
                                "asked for",
    ("dtype", "dtype float16"): "float16 goes wrong: compute the angles in float64 (or float32) and round to the "
                                "dtype asked for once, at the end",
    ("dtype", "dtype bfloat16"): "bfloat16 goes wrong: compute the angles in float64 (or float32) and round to the "
                                 "dtype asked for once, at the end",
    ("base", "base passed"): "the base argument seems not to reach the frequencies",
    ("passing", "arguments by keyword"): "a call that names its arguments (grid_h=, grid_w=, dim=, base=) goes "
                                         "wrong: keep the parameter names of the signature",
}


def _advice(dim, prefix_tokens, dtype):
    """What a relation of the wrong output to the right one usually means (tensor_check's advice), at these
    sizes: half a row of the table is the row's, half the column's."""
    half = dim // 2
    found = [
        (rf"right for channel 0\.\.{half - 1}, wrong from channel {half} on",
         "The first half (the row's) is right and the second (the column's) is not: patch n is at column "
         "c = n % grid_w, and the column's half is the same 1D table as the row's, at c."),
        (rf"wrong for channel 0\.\.{half - 1}, right from channel {half} on",
         "The second half (the column's) is right and the first (the row's) is not: patch n is at row "
         "r = n // grid_w, and the row's half is the same 1D table as the column's, at r."),
    ]
    if prefix_tokens:
        found.append((rf"wrong for token 0(?:\.\.{prefix_tokens - 1})?, right from token {prefix_tokens} on",
                      "Only the prefix rows are wrong: they are zeros, prefix_tokens of them, before the patches."))
    if dtype in HALF:
        found.append((r"wrong (?:at \d+ of the \d+ )?from token \d+ on",
                      "An error that appears only past the first rows, as the angles grow, is one of precision: "
                      "compute the angles in float64 (or float32) and round to the dtype asked for once, at the end."))
    return tuple(found)


def _written(grid_h, grid_w, dim, base, prefix_tokens, dtype, *, column_first=False, column_major=False,
             layout="split", exponent=4.0, first=0, prefix="zeros"):
    """The table written out in float64 and rounded once, with one slip or none.

    column_first: the column's half first (MAE); column_major: patch n = c * grid_h + r; layout: "split" (sines,
    then cosines, in each half), "interleaved" (sin, cos pairs), "cosines first", or "timm" (the four quarters
    [sin r, sin c, cos r, cos c]); exponent: w_k = base ** (-exponent * k / dim); first: the first position;
    prefix: "zeros" (first), "left out", "at the end", "origin" (patch (0, 0)'s row), "one row" (one zero row)."""
    quarter = dim // 4
    frequency = base ** (-exponent * torch.arange(quarter, dtype=torch.float64) / dim)  # (dim/4,)
    n = torch.arange(grid_h * grid_w)
    rows, columns = (n % grid_h, n // grid_h) if column_major else (n // grid_w, n % grid_w)  # (h*w,) each
    row_angle = (rows.to(torch.float64) + first)[:, None] * frequency  # (h*w, dim/4)
    column_angle = (columns.to(torch.float64) + first)[:, None] * frequency  # (h*w, dim/4)

    def half(angle):  # (h*w, dim/4) -> (h*w, dim/2)
        if layout == "interleaved":
            return torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1)
        if layout == "cosines first":
            return torch.cat((angle.cos(), angle.sin()), dim=1)
        return torch.cat((angle.sin(), angle.cos()), dim=1)

    if layout == "timm":
        patches = torch.cat((row_angle.sin(), column_angle.sin(), row_angle.cos(), column_angle.cos()), dim=1)
    else:
        parts = (half(column_angle), half(row_angle)) if column_first else (half(row_angle), half(column_angle))
        patches = torch.cat(parts, dim=1)  # (h*w, dim)
    zeros = torch.zeros(prefix_tokens, dim, dtype=torch.float64)
    if prefix == "left out":
        table = patches
    elif prefix == "at the end":
        table = torch.cat((patches, zeros))
    elif prefix == "origin":  # patch (0, 0)'s encoding: [sin 0 ..., cos 0 ...] twice
        table = torch.cat((_written(1, 1, dim, base, 0, torch.float64).expand(prefix_tokens, dim), patches))
    elif prefix == "one row":
        table = torch.cat((zeros[:1], patches))
    else:
        table = torch.cat((zeros, patches))
    return table.to(dtype)


def _line_table(grid_h, grid_w, dim, base, prefix_tokens, dtype):
    """The first unit's 1D table of the patch index n (interleaved, w_k = base ** (-2k / dim)), after the zeros."""
    n = torch.arange(grid_h * grid_w, dtype=torch.float64)[:, None]  # (h*w, 1)
    angle = n * base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (h*w, dim/2)
    line = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1)  # (h*w, dim)
    return torch.cat((torch.zeros(prefix_tokens, dim, dtype=torch.float64), line)).to(dtype)


def _mistakes(grid_h, grid_w, dim, base, prefix_tokens, dtype):
    at = (grid_h, grid_w, dim, base, prefix_tokens, dtype)

    def slip(**how):
        return lambda: _written(*at, **how)

    found = [
        Mistake("the halves are swapped: the column's table comes first, as in MAE's get_2d_sincos_pos_embed "
                "(np.meshgrid(grid_w, grid_h) gives the column first). The contract puts the row's half in "
                "channels 0 .. dim/2 - 1 and the column's after it.", slip(column_first=True)),
        Mistake("the patches are numbered column by column (n = c * grid_h + r), as a meshgrid of (rows, columns) "
                "with indexing='xy' flattens them: the contract numbers them row by row, n = r * grid_w + c, the "
                "order of x.flatten(2) on an image and of a patch embedding's output.", slip(column_major=True)),
        Mistake("the table is that of a grid_w x grid_h grid: MoCo v3's meshgrid(arange(grid_w), arange(grid_h), "
                "indexing='ij') numbers the patches column by column and puts the column's half first, which is "
                "right on its square grids only. Number the patches row by row (n = r * grid_w + c) and put the "
                "row's half first.",
                lambda: _written(grid_w, grid_h, dim, base, prefix_tokens, dtype)),
        Mistake("the sines and cosines are interleaved in each half (sin, cos, sin, cos, ..., the first unit's "
                "layout): each half here holds all its dim/4 sines first, then all its cosines.",
                slip(layout="interleaved")),
        Mistake("the cosines come before the sines in each half: a half is [sin(p w_0) ... sin(p w_{D/2-1}), "
                "cos(p w_0) ... cos(p w_{D/2-1})], sines first.", slip(layout="cosines first")),
        Mistake("the quarters are in timm's order [sin(row), sin(column), cos(row), cos(column)] "
                "(build_sincos2d_pos_embed): the contract keeps each axis's half together, [sin(row), cos(row), "
                "sin(column), cos(column)].", slip(layout="timm")),
        Mistake("the frequencies use the exponent 2k/dim, the 1D table's over all dim channels: each half is a 1D "
                "table of D = dim/2 channels, so w_k = base ** (-k / (D/2)) = base ** (-4k / dim).",
                slip(exponent=2.0)),
        Mistake("the frequencies use the exponent k/dim, over all dim channels: k counts the dim/4 frequencies of "
                "one axis, so the exponent is k / (dim/4), w_k = base ** (-4k / dim).", slip(exponent=1.0)),
        Mistake("the frequencies grow instead of shrink: w_k = base ** (-4k / dim), with the minus sign.",
                slip(exponent=-4.0)),
        Mistake("the positions are counted from 1: the patch at row 0, column 0 is at position (0, 0), whose "
                "half is [sin 0 ..., cos 0 ...] = [0 ..., 1 ...].", slip(first=1)),
        Mistake("the patches are read as a line, numbered 0 .. grid_h * grid_w - 1, with the first unit's 1D "
                "table of n: a patch's place on the grid is its row and its column, half the channels each.",
                lambda: _line_table(*at)),
    ]
    if base != 10000.0:
        found.append(Mistake("the base passed is ignored: the default 10000 is used.",
                             lambda: _written(grid_h, grid_w, dim, 10000.0, prefix_tokens, dtype)))
    if prefix_tokens:
        found += [
            Mistake("the prefix rows are left out: the table has prefix_tokens rows of zeros before the patches "
                    "(one for a class token), prefix_tokens + grid_h * grid_w rows in all.",
                    slip(prefix="left out")),
            Mistake("the prefix rows come after the patches: the prefix tokens (a class token, registers) come "
                    "first, so their zero rows are rows 0 .. prefix_tokens - 1.", slip(prefix="at the end")),
            Mistake("the prefix rows hold patch (0, 0)'s encoding: a class token has no place on the grid, and its "
                    "rows are zeros.", slip(prefix="origin")),
        ]
    if prefix_tokens > 1:
        found.append(Mistake("one zero row is put first whatever prefix_tokens is (MAE's cls_token, a yes or no): "
                             "prefix_tokens rows of zeros come first, a class token and registers each one.",
                             slip(prefix="one row")))
    return found


def _tolerance(grid_h, grid_w, dtype):
    """(atol, rtol) (module docstring), at the largest position of the grid: one number, not one per entry, since a
    mistake's table may have another number of rows (its prefix rows left out) and is compared at the same
    tolerance."""
    if dtype == torch.float64:
        return 1e-12, 0.0
    far = 2.5e-7 * (max(grid_h, grid_w) - 1)  # the float32 angle's error at the largest position
    floor = torch.finfo(dtype).eps / 2 if dtype in HALF else 1e-5
    return floor + far, 0.0


def _order(grid_h, grid_w):
    return "grid_h < grid_w" if grid_h < grid_w else "grid_h == grid_w" if grid_h == grid_w else "grid_h > grid_w"


def _call(grid_h, grid_w, dim, base, prefix_tokens, dtype, device, by_keyword):
    """(args, kwargs) of the call as sent: base, prefix_tokens, dtype and device only where given."""
    given = {"grid_h": grid_h, "grid_w": grid_w, "dim": dim} | ({} if base is None else {"base": base})
    args, kwargs = ([], given) if by_keyword else (list(given.values()), {})
    if prefix_tokens is not None:
        kwargs["prefix_tokens"] = prefix_tokens
    if device is not None:
        kwargs["device"] = device_arg(device)
    if dtype is not None:
        kwargs["dtype"] = dtype_arg(dtype)
    return args, kwargs


def _features(grid_h, grid_w, dim, base, prefix_tokens, dtype, by_keyword):
    prefix = prefix_tokens or 0
    return {"dtype": f"dtype {str(dtype or torch.float32).replace('torch.', '')}",
            "grid": _order(grid_h, grid_w), "size 1": size_one(grid_h, grid_w),
            "prefix": "no prefix tokens" if prefix == 0 else "one prefix token" if prefix == 1
            else "several prefix tokens",
            "dim": "dim 4" if dim == 4 else "dim > 4",
            "base": "the default base" if base in (None, 10000.0) else "base passed",
            "passing": "arguments by keyword" if by_keyword else "arguments by position"}


def _sizes(grid_h, grid_w, dim, prefix_tokens):
    prefix = prefix_tokens or 0
    return {"grid_h": grid_h, "grid_w": grid_w, "dim": dim, "dim // 2": dim // 2, "dim // 4": dim // 4,
            "prefix_tokens": prefix, "rows": prefix + grid_h * grid_w, "patches": grid_h * grid_w}


def _case(test, grid_h, grid_w, dim, base=None, *, prefix_tokens=None, dtype=None, device=None, by_keyword=False,
          scored=True):
    """One call: base, prefix_tokens, dtype and device left out where None (the defaults then apply)."""
    args, kwargs = _call(grid_h, grid_w, dim, base, prefix_tokens, dtype, device, by_keyword)
    label = call_label(NAME, args, kwargs)
    used_base, used_prefix, used_dtype = 10000.0 if base is None else base, prefix_tokens or 0, dtype or torch.float32
    expected = ref.sincos_2d_table(grid_h, grid_w, dim, used_base, prefix_tokens=used_prefix, dtype=used_dtype)
    atol, rtol = _tolerance(grid_h, grid_w, used_dtype)
    check = tensor_check(label, expected, atol=atol, rtol=rtol,
                         mistakes=_mistakes(grid_h, grid_w, dim, used_base, used_prefix, used_dtype),
                         axes=("token", "channel"), advice=_advice(dim, used_prefix, used_dtype))
    return Case(test, label, call_probe(NAME, args, kwargs), check,
                features=_features(grid_h, grid_w, dim, base, prefix_tokens, dtype, by_keyword),
                sizes=_sizes(grid_h, grid_w, dim, prefix_tokens), scored=scored)


def _meta_case(test, grid_h, grid_w, dim, prefix_tokens, dtype):
    """The table asked for on the meta device, which needs no GPU: it must be built there (a shape and a dtype are
    all a meta tensor has, so no values are compared). A frequency or grid made on the CPU meets the meta ones and
    fails; so does a table built on the CPU and never moved."""
    args, kwargs = _call(grid_h, grid_w, dim, None, prefix_tokens, dtype, "meta", False)
    label = call_label(NAME, args, kwargs)
    expected = computed_on_the_cpu(ref.sincos_2d_table, grid_h, grid_w, dim, prefix_tokens=prefix_tokens,
                                   dtype=dtype or torch.float32, device=torch.device("meta"))
    check = device_check(label, "meta", expected.shape, expected.dtype)
    return Case(test, label, call_probe(NAME, args, kwargs), check, sizes=_sizes(grid_h, grid_w, dim, prefix_tokens))


def _invalid(args, kwargs, why):
    label = call_label(NAME, args, kwargs)
    return Case("sincos_2d_table_invalid_args", label, call_probe(NAME, args, kwargs),
                raises_check(label, "ValueError", why))


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.sincos_2d_table, args, kwargs)
    return _case(NAME, given["grid_h"], given["grid_w"], given["dim"], given.get("base"),
                 prefix_tokens=given.get("prefix_tokens"), dtype=given.get("dtype")).check


def _sides(levels, rng):
    """(grid_h, grid_w) at a row's grid and size-1 levels: sides drawn in 2..9, odd and even, or a side of 1."""
    order = levels["grid"]
    if levels["size 1"] == "a size of 1":
        other = rng.randint(2, 9)
        return {"grid_h < grid_w": (1, other), "grid_h == grid_w": (1, 1), "grid_h > grid_w": (other, 1)}[order]
    if order == "grid_h == grid_w":
        side = rng.randint(2, 9)
        return side, side
    short, long = sorted(rng.sample(range(2, 10), 2))
    return (short, long) if order == "grid_h < grid_w" else (long, short)


def _from_contract(levels, rng, generator):
    """A call of sincos_2d_table_contract at one row of the contract's design."""
    grid_h, grid_w = _sides(levels, rng)
    prefix_tokens = {"no prefix tokens": rng.choice([None, 0]), "one prefix token": 1,
                     "several prefix tokens": rng.randint(2, 5)}[levels["prefix"]]
    dim = 4 if levels["dim"] == "dim 4" else 4 * rng.randint(2, 12)
    base = rng.choice([None, 10000.0]) if levels["base"] == "the default base" else rng.choice([100.0, 500.0, 50000.0])
    dtype = dtype_of(levels["dtype"])
    dtype = None if dtype == torch.float32 and rng.random() < 0.5 else dtype
    return _case("sincos_2d_table_contract", grid_h, grid_w, dim, base, prefix_tokens=prefix_tokens, dtype=dtype,
                 by_keyword=levels["passing"] == "arguments by keyword")


# The contract: what the docstring lets vary, each level sent by some case of sincos_2d_table_contract, every pair of
# levels together in one (autograder/core/contracts.py). The device is checked apart (_meta_case).
CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    Factor("grid", ("grid_h < grid_w", "grid_h == grid_w", "grid_h > grid_w")),
    Factor("size 1", ("a size of 1", "no size of 1")),
    Factor("prefix", ("no prefix tokens", "one prefix token", "several prefix tokens")),
    Factor("dim", ("dim 4", "dim > 4")),
    Factor("base", ("the default base", "base passed")),
    Factor("passing", ("arguments by position", "arguments by keyword")),
), _from_contract)


def _oblong(rng, low, high):
    """Two different sides in low..high, in a drawn order."""
    return tuple(rng.sample(range(low, high + 1), 2))


def build(rng, generator):
    values, contract = "sincos_2d_table_values", "sincos_2d_table_contract"
    (h1, w1), (h2, w2), (h3, w3) = _oblong(rng, 2, 9), _oblong(rng, 10, 40), _oblong(rng, 2, 12)
    cases = [
        _case(values, 1, 2, 4),  # the worked example
        _case(values, 3, 5, 16),
        _case(values, h1, w1, 4 * rng.randint(2, 16)),
        _case(values, 14, 21, 64),  # a 224 x 336 image in 16 x 16 patches
        _case(values, h2, w2, 4 * rng.randint(4, 24)),
        _case(values, h3, w3, 4 * rng.randint(2, 8), float(rng.choice([100, 500, 50000]))),
        _case(values, *_oblong(rng, 2, 12), 4 * rng.randint(2, 8), dtype=torch.float64),
        _case(values, 6, 4, 24, by_keyword=True),
        # The contract's corners by hand: ViT-B/16's class token, registers, a grid of one row, half precision, a
        # device passed.
        _case(contract, 14, 14, 768, prefix_tokens=1),
        _case(contract, 4, 7, 32, prefix_tokens=5),
        _case(contract, 1, 9, 8, prefix_tokens=1),
        _case(contract, 5, 3, 16, dtype=torch.bfloat16),
        _case(contract, 24, 17, 48, dtype=torch.bfloat16),  # far enough for angles rounded to bfloat16 to show
        _case(contract, 18, 26, 64, dtype=torch.float16, prefix_tokens=1),
        _case(contract, 3, 6, 12, 100.0, dtype=torch.float64, device=torch.device("cpu")),
        # Probes, worth nothing: small oblong tables.
        _case(values, 2, 3, 8, scored=False),
        _case(values, 3, 2, 8, prefix_tokens=1, scored=False),
        _case(values, 2, 3, 12, dtype=torch.float64, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    cases += [
        _invalid([4, 5, 6], {}, " (dim = 6 is even but not a multiple of 4: two axes, each of sine-cosine pairs)"),
        _invalid([4, 5, 10], {}, " (dim = 10 is not a multiple of 4)"),
        _invalid([4, 5, 0], {}, " (dim must be positive)"),
        _invalid([4, 5, -8], {}, " (dim must be positive)"),
        _invalid([0, 5, 8], {}, " (grid_h = 0: a grid needs at least one row)"),
        _invalid([3, -2, 8], {}, " (grid_w = -2: a grid needs at least one column)"),
        _invalid([3, 5, 8], {"prefix_tokens": -1}, " (prefix_tokens = -1 is negative)"),
    ]
    dtype = rng.choice([None, torch.float64, torch.float16])
    return cases + [_meta_case(contract, 5, 3, 8, 1, dtype)]


# The behaviour contract (autograder/core/behaviour.py): the table depends on every setting, so each call must build
# its own (or hand out a copy of a cached one, keyed on all of them).
BEHAVIOUR = Behaviour("sincos_2d_table_contract",
                      lambda rng, g: ((rng.randint(2, 4), rng.randint(5, 7), 4 * rng.randint(2, 4)), {}),
                      vary={"grid_h": (8,), "grid_w": (3,), "dim": (20,), "base": (100.0,), "prefix_tokens": (1,),
                            "dtype": (torch.float64,)})
