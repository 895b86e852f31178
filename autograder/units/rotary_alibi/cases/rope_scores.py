"""Hidden cases for ``rope_scores``.

While ``rope_scores`` runs, the student's ``apply_rotary`` and ``rotary_angles`` are swapped for the grader's
stand-ins (a rotation by scrambled angles): a ``rope_scores`` that rotates with either helper is right when it
gives the scores of the stand-in's rotation, one that rotates on its own must give the reference.

Tolerance: a score sums dh products of rotated coordinates; each rotated coordinate of a float32 formulation
errs by about 6e-8 * t (the angle's error), so a score by about sqrt(dh) times that and the coordinates'
size. The tolerance: 2e-5 * sqrt(dh) * (1 + 0.02 * max position) absolute and 1e-5 relative; positions
stay below about 3000. float64: 1e-9.

float16 and bfloat16: the reference rotates q and k in float32 and rounds each rotated coordinate to the half
dtype (apply_rotary's contract), then multiplies by the scale and takes the product, each rounding once more. A
formulation that stays in float32 until the end (a complex product, the relative form) skips some of these
roundings, one that scales after the product adds one: each rounding moves a term q'_d k'_d by a unit in the last
place, eps(dtype) / 2 of its size, and at most the whole score by eps(dtype) / 2 of it. Rotation leaves the size of
each pair (a, b) unchanged and |a c| + |b d| <= |(a, b)| |(c, d)|, so sum_d |q'_d k'_d| <= sum over pairs of
|q pair| * |k pair|, read from the inputs. The tolerance: 3 * eps(dtype) * |scale| * that sum (six such roundings),
plus the float32 tolerance above, absolute, and eps(dtype) relative. Every mistake changes scores by a share of
their size (a missing rotation, scale or sign), far beyond it. At scale 0.0 every correct formulation gives exact
zeros; the default scale stands in for |scale| there, so that a mistake that uses it is told by name.

The contract (``CONTRACT``): Lq below, equal to and above Lk; the positions left out, one set given, both, or both
fractional; both layouts; every dtype q and k may have (the docstring gives both one dtype, the scores q's: the
two are not mixed); the scale left out, given, or 0.0; base left out or given; an axis of length 1; q and k passed
by position or by keyword. Its cases count in rope_scores_positions, which no other test needs: most of them pass
positions, and a mistake with the positions passed in (one that changes positions_q in place, say) is then charged
once, there. The device is not a factor: one case (in rope_scores_layout) sends meta tensors and checks where the
scores are made.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, passed, score_factors, size_one,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import (FLOAT_DTYPES, LENGTHS, SCORE_POSITIONS, Contract, Factor, contract_cases,
                                       dtype_of, score_positions, score_sizes)
from autograder.units.rotary_alibi.cases.apply_rotary import _rotate
from solutions import rotary_alibi as ref

NAME = "rope_scores"

HINTS = {
    ("lengths", "Lq < Lk"): "the cases with more keys than queries go wrong: the queries are rotated by "
                            "positions_q (default arange(Lq)), the keys by positions_k (default arange(Lk))",
    ("lengths", "Lq > Lk"): "the cases with more queries than keys go wrong: the queries are rotated by "
                            "positions_q (default arange(Lq)), the keys by positions_k (default arange(Lk))",
    ("positions", "positions given"): "the positions passed in seem not to be used",
    ("positions", "positions_q given"): "positions_q passed alone goes wrong: the keys keep their default, "
                                        "arange(Lk)",
    ("positions", "positions_k given"): "positions_k passed alone goes wrong: the queries keep their default, "
                                        "arange(Lq)",
    ("positions", "float positions given"): "fractional positions (from scaled_positions) go wrong: keep them "
                                            "fractional all the way to the angles",
    ("layout", "interleaved=False"): "the layout argument seems not to reach the rotation",
    ("scale", "an explicit scale"): "look at how the scale argument is used",
    ("scale", "scale 0.0"): "scale=0.0 is a scale (every score 0), not a scale left out: test scale is None",
    ("base", "base passed"): "the base argument seems not to reach the rotation",
    ("dtype", "dtype float64"): "keep q's dtype throughout",
    ("dtype", "dtype float16"): "float16 q and k: rotate them as apply_rotary does (in float32, rounded to "
                                "float16) and return float16 scores",
    ("dtype", "dtype bfloat16"): "bfloat16 q and k: rotate them as apply_rotary does (in float32, rounded to "
                                 "bfloat16) and return bfloat16 scores",
    ("passing", "q and k by keyword"): "a call that names q= and k= goes wrong: keep the parameter names of the "
                                       "signature",
}
HALF = (torch.float16, torch.bfloat16)


def _scores_at(q, k, positions_q, positions_k, interleaved, scale, rotate_q=True, rotate_k=True, sign=1.0, key=None,
            sign_k=None, interleaved_k=None, reshaped=False, base=10000.0, base_k=None):
    """The scores written out in float64; the keys' sign, layout and base are the queries' unless given;
    ``reshaped`` makes k^T with reshape, which keeps the memory order, where transpose swaps the axes."""
    sign_k = sign if sign_k is None else sign_k
    interleaved_k = interleaved if interleaved_k is None else interleaved_k
    base_k = base if base_k is None else base_k
    turned_q = _rotate(q.double(), positions_q, base, interleaved, sign, key=key) if rotate_q else q.double()
    turned_k = _rotate(k.double(), positions_k, base_k, interleaved_k, sign_k, key=key) if rotate_k else k.double()
    keys = (turned_k.reshape(*turned_k.shape[:-2], turned_k.shape[-1], turned_k.shape[-2]) if reshaped
            else turned_k.transpose(-2, -1))
    return (scale * turned_q @ keys).to(q.dtype)


def _case(test, generator, batch, heads, length_q, length_k, head_dim, positions_q=None, positions_k=None,
          interleaved=True, scale=None, dtype=torch.float32, scored=True, base=None, by_keyword=False, inputs=None):
    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    q, k = inputs or (randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim))  # ``inputs``: given (check_at's), not drawn
    kwargs = {}
    if scale is not None:
        kwargs["scale"] = scale
    if positions_q is not None:
        kwargs["positions_q"] = positions_q
    if positions_k is not None:
        kwargs["positions_k"] = positions_k
    if not interleaved:
        kwargs["interleaved"] = False
    if base is not None:
        kwargs["base"] = base
    args = [q, k]
    if by_keyword:
        args, kwargs = [], {"q": q, "k": k, **kwargs}
    label = call_label(NAME, args, kwargs)
    expected = ref.rope_scores(q, k, scale=scale, positions_q=positions_q, positions_k=positions_k,
                               interleaved=interleaved, **({} if base is None else {"base": base}))
    used = 1 / math.sqrt(head_dim) if scale is None else scale
    turn = 10000.0 if base is None else base

    def _scores(*args, **kwargs):  # at the call's base
        return _scores_at(*args, base=turn, **kwargs)

    pq = torch.arange(length_q) if positions_q is None else positions_q
    pk = torch.arange(length_k) if positions_k is None else positions_k
    key = (3 + head_dim % 5, 5 + length_k % 3, 1 + length_q % 4)
    mistakes = []
    for angles in (None, key):
        mistakes += [
            Mistake("the keys are not rotated: both q and k turn by their own positions' angles.",
                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, used, rotate_k=False, key=angles)),
            Mistake("the queries are not rotated: both q and k turn by their own positions' angles.",
                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, used, rotate_q=False, key=angles)),
            Mistake("no scale: multiply the scores by scale (default 1/sqrt(dh)).",
                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, 1.0, key=angles)),
            Mistake("the rotation turns the wrong way (-sin on the other component): the score then depends on "
                    "n - m instead of m - n.", lambda angles=angles: _scores(q, k, pq, pk, interleaved, used,
                                                                            sign=-1.0, key=angles)),
            Mistake("the layout argument is ignored: interleaved=False pairs i with i + dh/2."
                    if not interleaved else "the layout is rotate half where the default, interleaved=True, pairs "
                    "(2i, 2i + 1).", lambda angles=angles: _scores(q, k, pq, pk, not interleaved, used, key=angles)),
            Mistake("the keys turn the other way (-sin on the other component), the queries the right way: the "
                    "score then depends on m + n, not on the distance n - m alone.",
                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, used, sign_k=-1.0, key=angles)),
            Mistake("the queries turn the other way (-sin on the other component), the keys the right way: the "
                    "score then depends on m + n, not on the distance n - m alone.",
                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, used, sign=-1.0, sign_k=1.0,
                                                  key=angles)),
            Mistake("k^T is made with reshape, which keeps the memory order and so mixes keys and coordinates: "
                    "k.transpose(-2, -1) swaps the two axes.",
                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, used, reshaped=True, key=angles)),
            Mistake(f"q and k are rotated in different layouts: interleaved={interleaved} must reach both "
                    "rotations.", lambda angles=angles: _scores(q, k, pq, pk, interleaved, used,
                                                                interleaved_k=not interleaved, key=angles)),
            Mistake(f"q and k are rotated in different layouts: interleaved={interleaved} must reach both "
                    "rotations.", lambda angles=angles: _scores(q, k, pq, pk, not interleaved, used,
                                                                interleaved_k=interleaved, key=angles)),
        ]
        if positions_k is not None:
            mistakes.append(Mistake("positions_k is ignored: the keys are rotated by arange(Lk), not by the "
                                    "positions passed in.", lambda angles=angles: _scores(
                                        q, k, pq, torch.arange(length_k), interleaved, used, key=angles)))
        if positions_q is not None:
            mistakes.append(Mistake("positions_q is ignored: the queries are rotated by arange(Lq), not by the "
                                    "positions passed in.", lambda angles=angles: _scores(
                                        q, k, torch.arange(length_q), pk, interleaved, used, key=angles)))
        if positions_q is None and positions_k is None and length_q != length_k:
            mistakes.append(Mistake("the queries default to the last Lq of the Lk positions (a cache's): both "
                                    "defaults count from 0, arange(Lq) and arange(Lk); a caller with a cache passes "
                                    "positions_q itself.", lambda angles=angles: _scores(
                                        q, k, torch.arange(length_k - length_q, length_k), pk, interleaved, used,
                                        key=angles)))
        if length_q != length_k or positions_q is not None:
            mistakes.append(Mistake("the queries are rotated by the keys' positions: queries turn by positions_q "
                                    "(default arange(Lq)), keys by positions_k.",
                                    lambda angles=angles: _scores(q, k, pk[-length_q:] if len(pk) >= length_q
                                                                  else pq, pk, interleaved, used, key=angles)))
        if not interleaved or turn != 10000.0:
            mistakes.append(Mistake("the keys are rotated with the default settings (interleaved=True, base 10000), "
                                    "the queries with those passed: q and k in different layouts or at different "
                                    "bases; interleaved and base must reach both rotations.",
                                    lambda angles=angles: _scores(q, k, pq, pk, interleaved, used, interleaved_k=True,
                                                                  base_k=10000.0, key=angles)))
        if turn != 10000.0:
            mistakes.append(Mistake("the base passed is ignored: the rotation uses the default base, 10000; pass "
                                    "base on to the rotation of q and of k.",
                                    lambda angles=angles: _scores_at(q, k, pq, pk, interleaved, used, key=angles)))
        if scale is not None:
            mistakes.insert(0, Mistake("the scale argument is ignored: the default 1/sqrt(dh) is used instead."
                                       if scale else "scale 0.0 is taken for a scale left out (scale or "
                                       "1/sqrt(dh)): scale=0.0 asks for scores of 0; test scale is None.",
                                       lambda angles=angles: _scores(q, k, pq, pk, interleaved,
                                                                     1 / math.sqrt(head_dim), key=angles)))
    substitute = [{"name": "apply_rotary", "stand_in": "scrambled_rotation", "key": list(key)},
                  {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": list(key)}]
    far = max(float(pq.abs().max()) if pq.numel() else 0, float(pk.abs().max()) if pk.numel() else 0)
    tolerance = 1e-9 if dtype == torch.float64 else 2e-5 * math.sqrt(head_dim) * (1 + 0.02 * far)
    rtol = 1e-5
    if dtype in HALF:  # six roundings of each term, bounded by the pairs' sizes (module docstring)
        size = abs(used) or 1 / math.sqrt(head_dim)  # at scale 0.0, that of the default (module docstring)
        tolerance = 3 * torch.finfo(dtype).eps * size * _pair_products(q, k, interleaved) + tolerance
        rtol = torch.finfo(dtype).eps
    check = tensor_check(label, expected, atol=tolerance, rtol=rtol, mistakes=mistakes,
                         also_accept=_scores(q, k, pq, pk, interleaved, used, key=key),
                         axes=("batch", "head", "query", "key"), factors=score_factors(head_dim, scale or None),
                         inputs=("q", "k"))
    given = ("float positions given" if positions_q is not None and positions_k is not None
             and positions_q.is_floating_point() else "positions given")
    features = {"lengths": _order(length_q, length_k), "size 1": size_one(batch, heads, length_q, length_k),
                "positions": {(False, False): "default positions", (True, False): "positions_q given",
                              (False, True): "positions_k given", (True, True): given}[
                    positions_q is not None, positions_k is not None],
                "layout": f"interleaved={interleaved}", "dtype": f"dtype {str(dtype).replace('torch.', '')}",
                "scale": ("the default scale" if scale is None else "scale 0.0" if scale == 0
                          else "an explicit scale"),
                "base": "the default base" if base is None else "base passed",
                "passing": "q and k by keyword" if by_keyword else "q and k by position"}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute), check, features=features,
                sizes={"Lq": length_q, "Lk": length_k, "dh": head_dim, "H": heads, "B": batch}, scored=scored)


def _order(length_q, length_k):
    return "Lq < Lk" if length_q < length_k else "Lq == Lk" if length_q == length_k else "Lq > Lk"


def _pair_products(q, k, interleaved):
    """sum over pairs of |q pair| * |k pair|, (B, H, Lq, Lk): a bound on sum_d |q'_d k'_d| whatever the angles."""
    def sizes(x):
        wide = x.to(torch.float64)
        a, b = (wide[..., 0::2], wide[..., 1::2]) if interleaved else wide.chunk(2, dim=-1)
        return torch.sqrt(a * a + b * b)  # (B, H, L, dh/2)

    return sizes(q) @ sizes(k).transpose(-2, -1)


def _meta_case(test, batch, heads, length_q, length_k, head_dim):
    """q and k on the meta device, which needs no GPU: the scores must be made there, (B, H, Lq, Lk) of q's dtype
    (a meta tensor has no values to compare). The default positions are made by the function itself."""
    q = torch.empty(batch, heads, length_q, head_dim, device="meta")
    k = torch.empty(batch, heads, length_k, head_dim, device="meta")
    label = call_label(NAME, [q, k]) + " on the meta device"
    expected = computed_on_the_cpu(ref.rope_scores, q, k)
    substitute = [{"name": "apply_rotary", "stand_in": "scrambled_rotation", "key": [3, 5, 1]},
                  {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": [3, 5, 1]}]
    return Case(test, label, call_probe(NAME, [q, k], substitute=substitute),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("q", "k")),
                sizes={"Lq": length_q, "Lk": length_k, "dh": head_dim, "H": heads, "B": batch})


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.rope_scores, args, kwargs)
    q, k = given["q"], given["k"]
    return _case(NAME, None, *q.shape[:-2], q.shape[-2], k.shape[-2], q.shape[-1],
                 positions_q=given.get("positions_q"), positions_k=given.get("positions_k"),
                 interleaved=given.get("interleaved", True), scale=given.get("scale"), dtype=q.dtype,
                 base=given.get("base"), inputs=(q, k)).check


def _from_contract(levels, rng, generator):
    """A call of rope_scores_positions at one row of the contract's design."""
    batch, heads, head_dim, length_q, length_k = score_sizes(levels, rng)
    positions_q, positions_k = score_positions(levels["positions"], rng, length_q, length_k)
    scale = {"the default scale": None, "scale 0.0": 0.0}.get(levels["scale"], rng.choice([0.5, 0.125, 2.0]))
    base = None if levels["base"] == "the default base" else float(rng.choice([500.0, 1000.0, 50000.0]))
    return _case("rope_scores_positions", generator, batch, heads, length_q, length_k, head_dim,
                 positions_q=positions_q, positions_k=positions_k, interleaved=levels["layout"] == "interleaved=True",
                 scale=scale, dtype=dtype_of(levels["dtype"]), base=base,
                 by_keyword=levels["passing"] == "q and k by keyword")


# The contract: what the docstring lets vary, each level sent by some case of rope_scores_positions, every pair of
# levels together in one (autograder/core/contracts.py). Fractional positions are a level of "positions": left out, the
# positions are whole numbers, and an excluded pair would confound the two factors.
CONTRACT = Contract(NAME, (
    SCORE_POSITIONS,
    FLOAT_DTYPES,
    LENGTHS,
    Factor("layout", ("interleaved=True", "interleaved=False")),
    Factor("scale", ("the default scale", "an explicit scale", "scale 0.0")),
    Factor("base", ("the default base", "base passed")),
    Factor("size 1", ("a size of 1", "no size of 1")),
    Factor("passing", ("q and k by position", "q and k by keyword")),
), _from_contract)





def build(rng, generator):
    def dh():
        return 2 * rng.randint(4, 32)

    def length():
        return rng.randint(2, 40)

    return [
        _case("rope_scores_values", generator, 2, 3, 7, 7, 16),
        _case("rope_scores_values", generator, 1, 4, length(), length(), dh()),
        _case("rope_scores_values", generator, 2, 2, rng.randint(2, 9), rng.randint(10, 40), dh()),
        _case("rope_scores_values", generator, 1, 1, 1, rng.randint(3, 20), dh()),
        _case("rope_scores_positions", generator, 1, 2, 4, 20, 16, positions_q=torch.arange(16, 20)),
        _case("rope_scores_positions", generator, 2, 2, 6, 6, 32, positions_q=torch.arange(1000, 1006),
              positions_k=torch.arange(1000, 1006)),
        _case("rope_scores_positions", generator, 1, 3, 5, 9, 8, positions_q=torch.randint(0, 300, (5,), generator=generator),
              positions_k=torch.randint(0, 300, (9,), generator=generator)),
        _case("rope_scores_layout", generator, 2, 2, length(), length(), dh(), interleaved=False),
        _case("rope_scores_layout", generator, 1, 3, 6, 11, 16, scale=0.5),
        _case("rope_scores_layout", generator, 2, 1, 5, 8, 32, dtype=torch.float64, interleaved=False),
        # Probes, worth nothing.
        _case("rope_scores_values", generator, 1, 2, 5, 5, 8, scored=False),
        _case("rope_scores_values", generator, 1, 2, 3, 6, 8, scored=False),
        _case("rope_scores_layout", generator, 1, 2, 5, 5, 8, interleaved=False, scored=False),
        _case("rope_scores_positions", generator, 1, 1, 4, 4, 8, positions_q=torch.arange(7, 11),
              positions_k=torch.arange(7, 11), scored=False),
        _meta_case("rope_scores_layout", 2, 2, 3, 5, 8),
    ] + contract_cases(CONTRACT, rng, generator)

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("rope_scores_layout", lambda rng, g: ((draw(g, 2, 3, 5, 8), draw(g, 2, 3, 6, 8)), {}),
                      trained=("q", "k"), layouts=("q", "k"),
                      vary={"base": (500.0,), "scale": (0.5,), "interleaved": (False,)},
                      stand_ins=(("apply_rotary", "scrambled_rotation", (3, 5, 1)),
                                 ("rotary_angles", "scrambled_angles", (3, 5, 1))))
