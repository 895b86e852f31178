"""Hidden cases for ``apply_rotary``.

While ``apply_rotary`` runs, the student's ``rotary_angles`` is swapped for the grader's stand-in, which
returns valid but scrambled (cos, sin). An ``apply_rotary`` that calls the helper is then right when it turns
the pairs by the stand-in's angles; one that computes its own angles must give the reference. Either way a
mistake in the helper is charged once, to its own task.

Tolerance: each output coordinate is a x cos + b sin of two inputs; a float32 formulation errs by about
|x| times the angle's error, 6e-8 * t, so the tolerance grows with the row's position:
1e-5 + 5e-7 * |t| (inputs are standard normal).

float16 and bfloat16 inputs: the contract turns them in float32 and rounds once, to x's dtype. Two correct
formulations differ before that rounding by float32's error only, so after it by at most one unit in the last
place of the output coordinate; a coordinate of pair (a, b) is at most |a| + |b| in size, so that unit is at most
eps(dtype) * (|a| + |b|). The tolerance is twice that, per coordinate, from the inputs, plus the angle's float32
error as above: (2 * eps + 5e-7 * |t|) * (|a| + |b|). A rotation whose angles or products are rounded to the half
dtype on the way is off by several such units far from position 0, and every named mistake by a whole turn.

The contract (``CONTRACT``): every dtype x may have, both layouts, positions from 0 or from an offset, integer or
float positions, x with no leading axis, one, or two (with positions of their own per sequence, (B, 1, L), as a
level of that factor), base left out, passed by position or by keyword, and an axis of length 1 (one position
among them). Its cases count in apply_rotary_positions (the test of calls beyond the plain (B, H, L, dh) one),
which no other test needs. The device is not a factor: one case sends meta tensors (no GPU needed) and checks that
the output is made there, of x's shape and dtype.
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, passed, raises_check, size_one,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, FLOAT_DTYPES, Factor, contract_cases, dtype_of
from autograder.units.rotary_alibi.job import scrambled_angles, scrambled_rotation
from solutions import rotary_alibi as ref

NAME = "apply_rotary"

HINTS = {
    ("layout", "interleaved=False"): "the rotate-half layout (interleaved=False) is wrong where the interleaved one "
                                     "works: it pairs coordinate i with i + dh/2, not with i + 1",
    ("layout", "interleaved=True"): "the interleaved layout is wrong where rotate half works: it pairs coordinates "
                                    "(2i, 2i + 1)",
    ("offset", "positions from an offset"): "positions that start at 0 work and others do not: use the positions "
                                            "passed in, not arange(L)",
    ("dtype", "dtype float64"): "keep x's dtype: compute in float64 when x is float64",
    ("dtype", "dtype float16"): "float16 input: compute the rotation in float32 and return float16",
    ("leading", "leading axes (B, H)"): "x with batch and head axes fails: the rotation acts on the last two axes "
                                        "(L, dh) only; broadcast the angles over the others",
    ("leading", "one leading axis (B, L, dh)"): "x with one leading axis fails: the rotation acts on the last two "
                                                "axes (L, dh) only; broadcast the angles over the others",
    ("leading", "positions per sequence (B, 1, L)"): "positions of their own for each sequence, (B, 1, L), go wrong: "
                                                     "the angles have the positions' shape plus (dh/2,) and "
                                                     "broadcast against x",
    ("dtype", "dtype bfloat16"): "bfloat16 input: compute the rotation in float32 and return bfloat16",
    ("positions", "float positions"): "integer positions work, fractional ones (from scaled_positions) do not: keep "
                                      "them fractional (a float dtype) all the way to the angles",
    ("base", "base passed"): "the base argument seems not to be used",
    ("base", "base by keyword"): "a call that names base= goes wrong: keep the parameter names of the signature",
}
HALF = (torch.float16, torch.bfloat16)
ADVICE = (
    (r"(?:odd|even) coordinate", "Only one member of each pair is wrong: look at the sign of the sine in each of the "
                             "two rotated coordinates (a' = a cos - b sin, b' = a sin + b cos)."),
)


def _rotate(x, positions, base, interleaved, sign=1.0, exponent=2.0, key=None):
    """The rotation written out, in float64: ``sign`` -1 turns the other way, ``exponent`` 1 uses i/dh; with
    ``key``, by the stand-in's scrambled angles (what a caller of rotary_angles gets while it runs)."""
    dim = x.shape[-1]
    if key is None:
        i = torch.arange(dim // 2, dtype=torch.float64)
        angle = positions.to(torch.float64)[..., None] * base ** (-exponent * i / dim)  # (..., L, dh/2)
        cos, sin = angle.cos(), angle.sin()
    else:
        cos, sin = scrambled_angles(positions, dim, base, dtype=torch.float64, key=key)
    sin = sign * sin
    wide = x.to(torch.float64)
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    a, b = wide.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1).to(x.dtype)


def mistakes(x, positions, base, interleaved, key):
    """The named mistakes of a rotation, with the angles of the reference and of the stand-in ``key``."""
    length = x.shape[-2]
    found = []
    for angles in (None, key):
        found += [
            Mistake(("the interleaved layout is used where interleaved=False asks for rotate half: pair i with "
                     "i + dh/2 (GPT-NeoX, LLaMA).") if not interleaved else
                    "rotate half is used where interleaved=True asks for the pairs (2i, 2i + 1) (RoFormer).",
                    lambda angles=angles: _rotate(x, positions, base, not interleaved, key=angles)),
            Mistake("the rotation turns the wrong way (-sin on the other component): a' = a cos - b sin, "
                    "b' = a sin + b cos.", lambda angles=angles: _rotate(x, positions, base, interleaved, sign=-1.0,
                                                                         key=angles)),
            Mistake("the positions passed in are ignored (arange(L) is used): a cache's queries start at their "
                    "own position.", lambda angles=angles: _rotate(x, torch.arange(length), base, interleaved,
                                                                   key=angles)),
        ]
    found.append(Mistake("the exponent uses i/dh where pair i needs 2i/dh: theta_i = base ** (-2i / dh).",
                         lambda: _rotate(x, positions, base, interleaved, exponent=1.0)))
    return found


def _pair_sizes(x, interleaved):
    """|a| + |b| of the pair each coordinate of x belongs to, in float64 (..., L, dh): a bound on the size of
    either rotated coordinate of the pair."""
    wide = x.to(torch.float64).abs()
    if interleaved:
        return (wide[..., 0::2] + wide[..., 1::2]).repeat_interleave(2, dim=-1)
    first, second = wide.chunk(2, dim=-1)
    return torch.cat((first + second, first + second), dim=-1)


def _axes(dims):
    """The names of x's axes: (L, dh) last, a batch and a head axis before them, and any others between."""
    if dims <= 4:
        return ("batch", "head", "position", "coordinate")[-dims:]
    return ("batch",) + ("leading",) * (dims - 4) + ("head", "position", "coordinate")


def _leading(shape, positions):
    if len(shape) == 2:
        return "x of shape (L, dh)"
    if len(shape) == 3:
        return "one leading axis (B, L, dh)"
    return "positions per sequence (B, 1, L)" if positions.dim() > 1 else "leading axes (B, H)"


def _case(test, generator, shape, positions=None, base=None, interleaved=True, dtype=torch.float32, scored=True,
          base_by_keyword=False, inputs=None):
    x = inputs if inputs is not None else torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)
    length = shape[-2]
    positions = torch.arange(length) if positions is None else positions
    args = [x, positions] + ([base] if base is not None and not base_by_keyword else [])
    kwargs = {} if interleaved else {"interleaved": False}
    if base is not None and base_by_keyword:
        kwargs = {"base": base, **kwargs}
    label = call_label(NAME, args, kwargs)
    used = 10000.0 if base is None else base
    expected = ref.apply_rotary(x, positions, used, interleaved=interleaved)
    far = 5e-7 * positions.to(torch.float64).abs()[..., None]  # the angle's float32 error, per row
    if dtype in HALF:  # one rounding to x's dtype, per coordinate (module docstring)
        atol, rtol = (2 * torch.finfo(dtype).eps + far) * _pair_sizes(x, interleaved), 0.0
    else:
        atol, rtol = (1e-5 + far if dtype == torch.float32 else 1e-10), 1e-5
    key = (3 + shape[-1] % 5, 5 + length % 3, 1 + len(shape))
    substitute = {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": list(key)}
    check = tensor_check(label, expected, atol=atol, rtol=rtol,
                         mistakes=mistakes(x, positions, used, interleaved, key),
                         also_accept=scrambled_rotation(x, positions, used, interleaved=interleaved, key=key),
                         axes=_axes(len(shape)), advice=ADVICE,
                         inputs=("x", "positions"))
    first = float(positions.reshape(-1)[0]) if positions.numel() else 0.0
    features = {"layout": f"interleaved={interleaved}", "dtype": f"dtype {str(dtype).replace('torch.', '')}",
                "offset": "positions from an offset" if first else "positions from 0",
                "leading": _leading(shape, positions),
                "size 1": size_one(*shape),
                "positions": "float positions" if positions.is_floating_point() else "integer positions",
                "base": ("the default base" if base is None else "base by keyword" if base_by_keyword
                         else "base passed")}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute), check, features=features,
                sizes={"L": length, "dh": shape[-1], "dh // 2": shape[-1] // 2}, scored=scored)


def _meta_case(test, shape, interleaved=True):
    """x and positions on the meta device, which needs no GPU: the output must be made there, of x's shape and dtype
    (a meta tensor has no values to compare)."""
    x = torch.empty(*shape, device="meta")
    positions = torch.empty(shape[-2], dtype=torch.int64, device="meta")
    kwargs = {} if interleaved else {"interleaved": False}
    label = call_label(NAME, [x, positions], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.apply_rotary, x, positions, interleaved=interleaved)
    substitute = {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": [3, 5, 1]}
    return Case(test, label, call_probe(NAME, [x, positions], kwargs, substitute=substitute),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("x", "positions")),
                sizes={"L": shape[-2], "dh": shape[-1]})


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.apply_rotary, args, kwargs)
    x = given["x"]
    return _case(NAME, None, tuple(x.shape), positions=given["positions"], base=given.get("base"),
                 interleaved=given.get("interleaved", True), dtype=x.dtype, inputs=x).check


def _from_contract(levels, rng, generator):
    """A call of apply_rotary_positions at one row of the contract's design."""
    batch, heads, length, dh = rng.randint(2, 3), rng.randint(2, 3), rng.randint(2, 12), 2 * rng.randint(2, 8)
    one = levels["size 1"] == "a size of 1"
    leading = levels["leading"]
    axes = {"x of shape (L, dh)": ["L"], "one leading axis (B, L, dh)": ["B", "L"]}.get(leading, ["B", "H", "L"])
    if one:  # one position, one sequence or one head
        which = rng.choice(axes)
        batch, heads, length = (1 if which == "B" else batch), (1 if which == "H" else heads), \
            (1 if which == "L" else length)
    shape = {"x of shape (L, dh)": (length, dh), "one leading axis (B, L, dh)": (batch, length, dh)}.get(
        leading, (batch, heads, length, dh))
    per_sequence = leading == "positions per sequence (B, 1, L)"
    rows = (batch, 1, length) if per_sequence else (length,)
    start = torch.zeros(rows[:-1] + (1,), dtype=torch.int64)
    if levels["offset"] == "positions from an offset":
        start = torch.randint(1, 3000, rows[:-1] + (1,), generator=generator)
    elif per_sequence and batch > 1:  # the first sequence from 0, the others from positions of their own
        start[1:] = torch.randint(1, 3000, (batch - 1, 1, 1), generator=generator)
    positions = start + torch.arange(length)  # rows, consecutive from each sequence's start
    if levels["positions"] == "float positions":  # fractional, as scaled_positions makes them
        kind = rng.choice([torch.float32, torch.float64])
        positions = (start.to(torch.float64) + torch.arange(length, dtype=torch.float64) / rng.choice([2, 4, 8])
                     ).to(kind)
    elif rng.random() < 0.3:
        positions = positions.to(torch.int32)
    base = None if levels["base"] == "the default base" else float(rng.choice([500.0, 1000.0, 50000.0]))
    return _case("apply_rotary_positions", generator, shape, positions=positions, base=base,
                 interleaved=levels["layout"] == "interleaved=True", dtype=dtype_of(levels["dtype"]),
                 base_by_keyword=levels["base"] == "base by keyword")


# The contract: what the docstring lets vary, each level sent by some case of apply_rotary_positions, every pair of
# levels together in one (autograder/core/contracts.py). Positions per sequence are a level of "leading": x of
# shape (L, dh) has no sequence of its own to give them to, and an excluded pair would confound the two factors.
CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    Factor("leading", ("x of shape (L, dh)", "one leading axis (B, L, dh)", "leading axes (B, H)",
                       "positions per sequence (B, 1, L)")),
    Factor("layout", ("interleaved=True", "interleaved=False")),
    Factor("offset", ("positions from 0", "positions from an offset")),
    Factor("positions", ("integer positions", "float positions")),
    Factor("base", ("the default base", "base passed", "base by keyword")),
    Factor("size 1", ("a size of 1", "no size of 1")),
), _from_contract)


def _invalid(generator):
    """The contract's ValueErrors: an odd dh, and positions that do not end in one entry per row of x."""
    cases = []
    for x, positions, why in (
            (torch.randn(5, 7, generator=generator), torch.arange(5), "dh = 7 is odd: coordinates turn in pairs"),
            (torch.randn(2, 6, 8, generator=generator), torch.arange(5), "x has L = 6 rows, positions 5 entries"),
            (torch.randn(4, 8, generator=generator), torch.tensor(3), "a single position for 4 rows")):
        label = call_label(NAME, [x, positions])
        # Under the stand-in for rotary_angles, which raises as the real one does for an odd head_dim.
        substitute = {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": [3, 5, 1]}
        cases.append(Case("apply_rotary_invalid_args", label, call_probe(NAME, [x, positions], substitute=substitute),
                          raises_check(label, "ValueError", f" ({why})")))
    return cases


def build(rng, generator):
    def dh():
        return 2 * rng.randint(2, 32)

    return [
        _case("apply_rotary_interleaved", generator, (12, 8)),
        _case("apply_rotary_interleaved", generator, (2, 3, rng.randint(5, 60), dh())),
        _case("apply_rotary_interleaved", generator, (1, 4, rng.randint(5, 30), dh()), base=500.0),
        _case("apply_rotary_half", generator, (12, 8), interleaved=False),
        _case("apply_rotary_half", generator, (2, 3, rng.randint(5, 60), dh()), interleaved=False),
        _case("apply_rotary_half", generator, (3, 1, rng.randint(5, 30), dh()), base=50000.0, interleaved=False),
        _case("apply_rotary_positions", generator, (2, 2, 5, 16), positions=torch.arange(95, 100)),
        _case("apply_rotary_positions", generator, (4, 16, 8), positions=torch.arange(2000, 2016), interleaved=False),
        _case("apply_rotary_positions", generator, (2, 1, 3, 7, 8), positions=torch.randint(0, 500, (7,), generator=generator)),
        # Positions of their own for each sequence of the batch, (B, 1, L) against x of (B, H, L, dh).
        _case("apply_rotary_positions", generator, (2, 3, 6, 8), positions=torch.randint(0, 300, (2, 1, 6), generator=generator)),
        *_invalid(generator),
        _case("apply_rotary_dtype", generator, (2, 2, 9, 16), dtype=torch.float64),
        _case("apply_rotary_dtype", generator, (1, 2, 9, 32), positions=torch.arange(100, 109), dtype=torch.float64,
              interleaved=False),
        _case("apply_rotary_dtype", generator, (2, 8, 64), dtype=torch.float16),
        # float16 far from position 0: angles computed in float16 are off by tenths of a radian there.
        _case("apply_rotary_dtype", generator, (2, 8, 32), positions=torch.arange(1000, 1008), dtype=torch.float16,
              interleaved=False),
        # Probes, worth nothing.
        _case("apply_rotary_interleaved", generator, (6, 4), scored=False),
        _case("apply_rotary_half", generator, (6, 4), interleaved=False, scored=False),
        _case("apply_rotary_positions", generator, (6, 4), positions=torch.arange(10, 16), scored=False),
        _case("apply_rotary_positions", generator, (1, 2, 6, 4), positions=torch.arange(3, 9), interleaved=False,
              scored=False),
        _meta_case("apply_rotary_positions", (2, 3, 5, 8), interleaved=rng.random() < 0.5),
    ] + contract_cases(CONTRACT, rng, generator)

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("apply_rotary_positions", lambda rng, g: ((draw(g, 2, 3, 5, 8), rng.randint(0, 50) + torch.arange(5)), {}),
                      trained=("x",), layouts=("x", "positions"), vary={"base": (500.0,), "interleaved": (False,)},
                      stand_ins=(("rotary_angles", "scrambled_angles", (3, 5, 1)),))
