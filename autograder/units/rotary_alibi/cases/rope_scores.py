"""Hidden cases for ``rope_scores``.

While ``rope_scores`` runs, the student's ``apply_rotary`` and ``rotary_angles`` are swapped for the grader's
stand-ins (a rotation by scrambled angles): a ``rope_scores`` that rotates with either helper is right when it
gives the scores of the stand-in's rotation, one that rotates on its own must give the reference.

Tolerance: a score sums dh products of rotated coordinates; each rotated coordinate of a float32 formulation
errs by about 6e-8 * t (the angle's error), so a score by about sqrt(dh) times that and the coordinates'
size. The tolerance: 2e-5 * sqrt(dh) * (1 + 0.02 * max position) absolute and 1e-5 relative; positions
stay below about 3000. float64: 1e-9.
"""

import math

import torch

from autograder.core.cases import (Case, Mistake, call_label, call_probe, lengths, score_factors, size_one,
                                     tensor_check)
from autograder.units.rotary_alibi.cases.apply_rotary import _rotate
from solutions import rotary_alibi as ref

NAME = "rope_scores"

HINTS = {
    ("lengths", "Lq != Lk"): "square cases work and the others do not: the queries are rotated by positions_q "
                             "(default arange(Lq)), the keys by positions_k (default arange(Lk))",
    ("positions", "positions given"): "the positions passed in seem not to be used",
    ("layout", "interleaved=False"): "the layout argument seems not to reach the rotation",
    ("scale", "an explicit scale"): "look at how the scale argument is used",
    ("dtype", "dtype float64"): "keep q's dtype throughout",
}


def _scores(q, k, positions_q, positions_k, interleaved, scale, rotate_q=True, rotate_k=True, sign=1.0, key=None,
            sign_k=None, interleaved_k=None, reshaped=False):
    """The scores written out in float64; the keys' sign and layout are the queries' unless given; ``reshaped``
    makes k^T with reshape, which keeps the memory order, where transpose swaps the axes."""
    sign_k = sign if sign_k is None else sign_k
    interleaved_k = interleaved if interleaved_k is None else interleaved_k
    turned_q = _rotate(q.double(), positions_q, 10000.0, interleaved, sign, key=key) if rotate_q else q.double()
    turned_k = _rotate(k.double(), positions_k, 10000.0, interleaved_k, sign_k, key=key) if rotate_k else k.double()
    keys = (turned_k.reshape(*turned_k.shape[:-2], turned_k.shape[-1], turned_k.shape[-2]) if reshaped
            else turned_k.transpose(-2, -1))
    return (scale * turned_q @ keys).to(q.dtype)


def _case(test, generator, batch, heads, length_q, length_k, head_dim, positions_q=None, positions_k=None,
          interleaved=True, scale=None, dtype=torch.float32, scored=True):
    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    q, k = randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim)
    kwargs = {}
    if scale is not None:
        kwargs["scale"] = scale
    if positions_q is not None:
        kwargs["positions_q"] = positions_q
    if positions_k is not None:
        kwargs["positions_k"] = positions_k
    if not interleaved:
        kwargs["interleaved"] = False
    label = call_label(NAME, [q, k], kwargs)
    expected = ref.rope_scores(q, k, scale=scale, positions_q=positions_q, positions_k=positions_k,
                               interleaved=interleaved)
    used = 1 / math.sqrt(head_dim) if scale is None else scale
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
        if scale is not None:
            mistakes.insert(0, Mistake("the scale argument is ignored: the default 1/sqrt(dh) is used instead.",
                                       lambda angles=angles: _scores(q, k, pq, pk, interleaved,
                                                                     1 / math.sqrt(head_dim), key=angles)))
    substitute = [{"name": "apply_rotary", "stand_in": "scrambled_rotation", "key": list(key)},
                  {"name": "rotary_angles", "stand_in": "scrambled_angles", "key": list(key)}]
    far = max(int(pq.max()) if pq.numel() else 0, int(pk.max()) if pk.numel() else 0)
    tolerance = 1e-9 if dtype == torch.float64 else 2e-5 * math.sqrt(head_dim) * (1 + 0.02 * far)
    check = tensor_check(label, expected, atol=tolerance, rtol=1e-5, mistakes=mistakes,
                         also_accept=_scores(q, k, pq, pk, interleaved, used, key=key),
                         axes=("batch", "head", "query", "key"), factors=score_factors(head_dim, scale),
                         inputs=("q", "k"))
    features = {"lengths": lengths(length_q, length_k), "size 1": size_one(batch, heads, length_q, length_k),
                "positions": "positions given" if positions_q is not None or positions_k is not None
                else "default positions",
                "layout": f"interleaved={interleaved}", "dtype": f"dtype {str(dtype).replace('torch.', '')}",
                "scale": "an explicit scale" if scale is not None else "the default scale"}
    return Case(test, label, call_probe(NAME, [q, k], kwargs, substitute=substitute), check, features=features,
                sizes={"Lq": length_q, "Lk": length_k, "dh": head_dim, "H": heads, "B": batch}, scored=scored)


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
    ]
