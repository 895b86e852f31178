"""Hidden cases for ``apply_rotary``.

While ``apply_rotary`` runs, the student's ``rotary_angles`` is swapped for the grader's stand-in, which
returns valid but scrambled (cos, sin). An ``apply_rotary`` that calls the helper is then right when it turns
the pairs by the stand-in's angles; one that computes its own angles must give the reference. Either way a
mistake in the helper is charged once, to its own task.

Tolerance: each output coordinate is a x cos + b sin of two inputs; a float32 formulation errs by about
|x| times the angle's error, 6e-8 * t, so the tolerance grows with the row's position:
1e-5 + 5e-7 * |t| (inputs are standard normal). float16 inputs are compared in float16 (1e-2).
"""

import torch

from autograder.core.cases import Case, Mistake, call_label, call_probe, raises_check, size_one, tensor_check
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
}
ADVICE = (
    (r"(?:odd|even) column", "Only one member of each pair is wrong: look at the sign of the sine in each of the "
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


def _case(test, generator, shape, positions=None, base=None, interleaved=True, dtype=torch.float32, scored=True):
    x = torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)
    length = shape[-2]
    positions = torch.arange(length) if positions is None else positions
    args = [x, positions] + ([base] if base is not None else [])
    kwargs = {} if interleaved else {"interleaved": False}
    label = call_label(NAME, args, kwargs)
    used = 10000.0 if base is None else base
    expected = ref.apply_rotary(x, positions, used, interleaved=interleaved)
    if dtype == torch.float16:
        atol = 1e-2
    else:
        atol = (1e-5 + 5e-7 * positions.to(torch.float64).abs())[..., None] if dtype == torch.float32 else 1e-10
    key = (3 + shape[-1] % 5, 5 + length % 3, 1 + len(shape))
    substitute = {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": list(key)}
    check = tensor_check(label, expected, atol=atol, rtol=1e-5 if dtype != torch.float16 else 1e-2,
                         mistakes=mistakes(x, positions, used, interleaved, key),
                         also_accept=scrambled_rotation(x, positions, used, interleaved=interleaved, key=key),
                         axes=("batch", "head", "position", "coordinate")[-len(shape):], advice=ADVICE,
                         inputs=("x", "positions"))
    offset = int(positions.reshape(-1)[0]) if positions.numel() else 0
    features = {"layout": f"interleaved={interleaved}", "dtype": f"dtype {str(dtype).replace('torch.', '')}",
                "offset": "positions from an offset" if offset else "positions from 0",
                "leading": "leading axes (B, H)" if len(shape) > 2 else "x of shape (L, dh)",
                "size 1": size_one(*shape)}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute), check, features=features,
                sizes={"L": length, "dh": shape[-1], "dh // 2": shape[-1] // 2}, scored=scored)


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
    ]
