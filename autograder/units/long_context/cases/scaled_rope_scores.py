"""Hidden cases for ``scaled_rope_scores``.

Its rotation is the second unit's ``apply_rotary``, given: every job runs that reference in place of whatever the
student's file holds under its name, so a formulation that calls it and one that rotates on its own must both give
the reference's scores. The expected scores of every mistake are written out here in float64, independently of the
reference (rotate half by cos and sin of t * theta_i).

Tolerance: a score sums dh products of rotated coordinates; each rotated coordinate of a float32 formulation errs
by about 6e-8 * t * theta_i (the angle's error; theta_i <= 1), so a score by about sqrt(dh) times that. The
tolerance: 2e-5 * sqrt(dh) * (1 + 0.02 * the farthest position), times the attention scale where it is above 1,
absolute, and 1e-5 relative; float64 1e-9. float16 and bfloat16: the rotated coordinates are rounded to the
half dtype (apply_rotary's contract), then the scale and the product round again; each rounding moves a term of the
score by eps(dtype) / 2 of its size, and sum_d |q'_d k'_d| <= sum over pairs of |q pair| * |k pair| (a rotation keeps
each pair's size): 3 * eps(dtype) * |scale| * that sum is added, and the relative tolerance is eps(dtype). Every
mistake below changes the scores by a share of their size (a factor, a missing rotation, the wrong pairs).

The contract (``CONTRACT``): the positions left out, one set given, both, or both fractional; every float dtype of q
and k (the scores take q's); Lq below, equal to and above Lk; the attention scale left out or given; an axis of
length 1; the frequencies passed by position or by keyword. Its cases count in scaled_rope_scores_contract.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, lengths, passed, raises_check,
                                   score_factors, size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import (FLOAT_DTYPES, LENGTHS, SCORE_POSITIONS, Contract, Factor, contract_cases,
                                       dtype_of, score_positions, score_sizes)
from solutions import long_context as ref

NAME = "scaled_rope_scores"
HALF = (torch.float16, torch.bfloat16)

HINTS = {
    ("lengths", "Lq < Lk"): "the cases with more keys than queries go wrong: the queries turn by positions_q "
                            "(default arange(Lq)), the keys by positions_k (default arange(Lk))",
    ("lengths", "Lq > Lk"): "the cases with more queries than keys go wrong: the queries turn by positions_q "
                            "(default arange(Lq)), the keys by positions_k (default arange(Lk))",
    ("positions", "positions given"): "the positions passed in seem not to be used",
    ("positions", "positions_q given"): "positions_q passed alone goes wrong: the keys keep their default, arange(Lk)",
    ("positions", "positions_k given"): "positions_k passed alone goes wrong: the queries keep their default, "
                                        "arange(Lq)",
    ("positions", "float positions given"): "fractional positions go wrong: keep them fractional all the way to the "
                                            "angles",
    ("positions", "positions per sequence"): "positions of shape (B, 1, L) or (B, H, L) go wrong: any shape that "
                                             "broadcasts to (B, H, L) is allowed, each sequence (and head) turning by "
                                             "its own positions",
    ("scale", "a scale passed"): "look at how attention_scale enters: it multiplies the scores once",
    ("dtype", "dtype float64"): "keep q's dtype throughout",
    ("dtype", "dtype float16"): "float16 q and k: rotate them as apply_rotary does and return float16 scores",
    ("dtype", "dtype bfloat16"): "bfloat16 q and k: rotate them as apply_rotary does and return bfloat16 scores",
    ("passing", "frequencies by keyword"): "a call that names inverse_frequencies= goes wrong: keep the parameter "
                                           "names of the signature",
}


def turned(x, positions, theta, *, layout="half", sign=1.0, angle_of=None):
    """x (B, H, L, dh) turned pair by pair in float64 by t * theta_i (``angle_of(t, theta)`` in its place); layout
    "half" pairs (i, i + dh/2), "interleaved" (2i, 2i + 1), "repeated" is rotate half with cos and sin laid out as
    theta_0, theta_0, theta_1, theta_1, ... (the interleaved layout's tables)."""
    wide = x.to(torch.float64)
    t = positions.to(torch.float64)[..., None]  # (..., L, 1)
    frequencies = theta.to(torch.float64)  # (dh/2,)
    angle = angle_of(t, frequencies) if angle_of is not None else t * frequencies  # (..., L, dh/2)
    cos, sin = angle.cos(), sign * angle.sin()
    if layout == "half":
        a, b = wide.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    if layout == "interleaved":
        a, b = wide[..., 0::2], wide[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = wide.chunk(2, dim=-1)
    cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)  # (..., L, dh)
    return wide * cos + torch.cat((-b, a), dim=-1) * sin


def scores_of(q, k, positions_q, positions_k, theta, scale, *, rotate_q=True, rotate_k=True, **how):
    """The scores written out in float64, then in q's dtype: scale * q' . k'."""
    turned_q = turned(q, positions_q, theta, **how) if rotate_q else q.to(torch.float64)
    turned_k = turned(k, positions_k, theta, **how) if rotate_k else k.to(torch.float64)
    return (scale * turned_q @ turned_k.transpose(-2, -1)).to(q.dtype)


def _pair_products(q, k):
    """sum over pairs of |q pair| * |k pair|, (B, H, Lq, Lk): a bound on sum_d |q'_d k'_d| whatever the angles."""
    def sizes(x):
        a, b = x.to(torch.float64).chunk(2, dim=-1)
        return torch.sqrt(a * a + b * b)

    return sizes(q) @ sizes(k).transpose(-2, -1)


def _case(test, generator, batch, heads, length_q, length_k, theta, attention_scale=None, positions_q=None,
          positions_k=None, dtype=torch.float32, by_keyword=False, scored=True, inputs=None):
    head_dim = 2 * theta.shape[0]

    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    # ``inputs``: q and k given (check_at's), not drawn
    q, k = inputs or (randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim))
    args = [q, k] + ([] if by_keyword else [theta])
    kwargs = ({"inverse_frequencies": theta} if by_keyword else {})
    if attention_scale is not None:
        kwargs["attention_scale"] = attention_scale
    if positions_q is not None:
        kwargs["positions_q"] = positions_q
    if positions_k is not None:
        kwargs["positions_k"] = positions_k
    label = call_label(NAME, args, kwargs)
    expected = ref.scaled_rope_scores(q, k, theta, attention_scale=1.0 if attention_scale is None else attention_scale,
                                      positions_q=positions_q, positions_k=positions_k)
    extra = 1.0 if attention_scale is None else attention_scale
    root = 1 / math.sqrt(head_dim)
    pq = torch.arange(length_q) if positions_q is None else positions_q
    pk = torch.arange(length_k) if positions_k is None else positions_k

    def scores(scale=extra * root, at_q=pq, at_k=pk, **how):
        return lambda: scores_of(q, k, at_q, at_k, theta, scale, **how)

    mistakes = [
        Mistake("the pairs are (2i, 2i + 1), the interleaved layout: this unit's frequencies are in the rotate-half "
                "layout of LLaMA and Hugging Face, pair i = (x[i], x[i + dh/2]).", scores(layout="interleaved")),
        Mistake("cos and sin are laid out as theta_0, theta_0, theta_1, theta_1, ... (repeat_interleave, the "
                "interleaved tables) under rotate half: coordinate i and i + dh/2 share theta_i, so the tables are "
                "torch.cat((angles, angles), -1).", scores(layout="repeated")),
        Mistake("no 1/sqrt(dh): the scores are attention_scale / sqrt(dh) * q' . k'.", scores(scale=extra)),
        Mistake("the rotation turns the wrong way (-sin on the other component): the score then depends on n - m "
                "instead of m - n.", scores(sign=-1.0)),
        Mistake("the keys are not rotated: both q and k turn by their own positions' angles.", scores(rotate_k=False)),
        Mistake("the queries are not rotated: both q and k turn by their own positions' angles.",
                scores(rotate_q=False)),
        Mistake("the frequencies are used in reverse order: pair i turns at inverse_frequencies[i], the fastest "
                "first.", lambda: scores_of(q, k, pq, pk, theta.flip(0), extra * root)),
        Mistake("the angle is t / theta_i: inverse_frequencies are angular speeds, the angle is t * theta_i.",
                scores(angle_of=lambda t, f: t / f)),
    ]
    in_float32 = ("the angles t * theta_i are computed in float32: compute them in float64 (float32 keeps about 7 "
                  "digits, so far from position 0 the fast pairs' angles lose their fractional part), then rotate.")
    mistakes += [Mistake(in_float32, scores(angle_of=lambda t, f: t.to(torch.float32) * f.to(torch.float32))),  # cos
                 Mistake(in_float32, scores(angle_of=lambda t, f: (t.to(torch.float32) * f.to(torch.float32))  # in 32
                                            .to(torch.float64)))]  # or cos and sin of that angle in float64
    if extra != 1.0:
        mistakes += [
            Mistake("the attention scale is missing from the scores (applied to the values, or not at all): YaRN's "
                    "temperature multiplies the scores, attention_scale / sqrt(dh) * q' . k'.", scores(scale=root)),
            Mistake("the attention scale multiplies q and k each, so the scores by its square: it multiplies the "
                    "scores once (or q and k each by its square root).", scores(scale=extra * extra * root)),
            Mistake("the scores are divided by the attention scale: it multiplies them (a scale above 1 sharpens the "
                    "softmax).", scores(scale=root / extra)),
            Mistake("the scores carry the square root of the attention scale: it multiplies the scores once, whole "
                    "(its square root goes on q and k each, if at all).", scores(scale=math.sqrt(extra) * root)),
        ]
    if positions_k is not None:
        mistakes.append(Mistake("positions_k is ignored: the keys turn by arange(Lk), not by the positions passed in.",
                                scores(at_k=torch.arange(length_k))))
    if positions_q is not None:
        mistakes.append(Mistake("positions_q is ignored: the queries turn by arange(Lq), not by the positions passed "
                                "in.", scores(at_q=torch.arange(length_q))))
    if positions_q is None and positions_k is None and length_q != length_k:
        mistakes.append(Mistake("the queries default to the last Lq of the Lk positions (a cache's): both defaults "
                                "count from 0, arange(Lq) and arange(Lk).",
                                scores(at_q=torch.arange(length_k - length_q, length_k))))
    if (length_q != length_k or positions_q is not None) and pk.shape[-1] >= length_q:
        mistakes.append(Mistake("the queries turn by the keys' positions: queries by positions_q (default "
                                "arange(Lq)), keys by positions_k.", scores(at_q=pk[..., -length_q:])))
    far = max(float(pq.abs().max()) if pq.numel() else 0.0, float(pk.abs().max()) if pk.numel() else 0.0)
    size = abs(extra) * root
    atol = 1e-9 if dtype == torch.float64 else 2e-5 * math.sqrt(head_dim) * (1 + 0.02 * far) * max(abs(extra), 1.0)
    rtol = 1e-5
    if dtype in HALF:
        atol = 3 * torch.finfo(dtype).eps * size * _pair_products(q, k) + atol
        rtol = torch.finfo(dtype).eps
    check = tensor_check(label, expected, atol=atol, rtol=rtol, mistakes=mistakes,
                         axes=("batch", "head", "query", "key"),
                         factors=score_factors(head_dim, None if extra == 1.0 else extra), inputs=("q", "k"))
    given = ("float positions given" if positions_q is not None and positions_k is not None
             and positions_q.is_floating_point() else "positions given")
    if any(positions is not None and positions.dim() > 1 for positions in (positions_q, positions_k)):
        given = "positions per sequence"  # (B, 1, L) or (B, H, L): not a level of the contract's, a case of its own
    features = {"lengths": lengths(length_q, length_k), "size 1": size_one(batch, heads, length_q, length_k),
                "positions": {(False, False): "default positions", (True, False): "positions_q given",
                              (False, True): "positions_k given", (True, True): given}[
                    positions_q is not None, positions_k is not None],
                "dtype": f"dtype {str(dtype).replace('torch.', '')}",
                "scale": "scale left out" if attention_scale is None else "a scale passed",
                "passing": "frequencies by keyword" if by_keyword else "frequencies by position"}
    return Case(test, label, call_probe(NAME, args, kwargs), check, features=features,
                sizes={"Lq": length_q, "Lk": length_k, "dh": head_dim, "H": heads, "B": batch}, scored=scored)


def _meta_case(test, batch, heads, length_q, length_k, theta):
    """q and k on the meta device (no values, no GPU needed, and as unwilling as CUDA to meet the CPU), the
    frequencies on the CPU, where this unit's functions make them: the scores must be made on q's device, of shape
    (B, H, Lq, Lk) and q's dtype. Default positions made on the CPU fail here as on a GPU."""
    head_dim = 2 * theta.shape[0]
    q = torch.empty(batch, heads, length_q, head_dim, device="meta")
    k = torch.empty(batch, heads, length_k, head_dim, device="meta")
    # q and k by keyword: a meta tensor has no values, so it is kept out of the positional arguments that tools
    # read values from (tests/core/test_hidden_cases_per_student.py compares them).
    kwargs = {"q": q, "k": k, "inverse_frequencies": theta}
    label = call_label(NAME, [], kwargs) + " on the meta device (the frequencies on the CPU)"
    expected = computed_on_the_cpu(ref.scaled_rope_scores, q, k, theta)
    return Case(test, label, call_probe(NAME, [], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("q", "k")),
                sizes={"B": batch, "H": heads, "Lq": length_q, "Lk": length_k, "dh": head_dim})


def _frequencies(rng, head_dim):
    """The frequencies of one of the unit's methods (or RoPE's own, or position interpolation's), (dh/2,) float32."""
    factor = float(rng.choice([2, 4, 8]))
    kind = rng.choice(["rope", "interpolation", "ntk", "yarn", "llama3"]) if head_dim >= 4 else "rope"
    theta = (10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)).to(torch.float32)
    if kind == "interpolation":
        return theta / factor
    if kind == "ntk":
        return ref.ntk_inverse_frequencies(head_dim, factor=factor)
    if kind == "yarn":
        return ref.yarn_inverse_frequencies(head_dim, factor=factor, trained_length=rng.choice([64, 256, 2048]))
    if kind == "llama3":
        return ref.llama3_inverse_frequencies(head_dim, base=10000.0, factor=factor, trained_length=256)
    return theta


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.scaled_rope_scores, args, kwargs)
    q, k = given["q"], given["k"]
    return _case(NAME, None, *q.shape[:-2], q.shape[-2], k.shape[-2], given["inverse_frequencies"],
                 attention_scale=given.get("attention_scale"), positions_q=given.get("positions_q"),
                 positions_k=given.get("positions_k"), dtype=q.dtype, inputs=(q, k)).check


def _from_contract(levels, rng, generator):
    """A call of scaled_rope_scores_contract at one row of the contract's design."""
    batch, heads, head_dim, length_q, length_k = score_sizes(levels, rng)
    positions_q, positions_k = score_positions(levels["positions"], rng, length_q, length_k)
    scale = None if levels["scale"] == "scale left out" else rng.choice([1.296477, 1.631390, 0.5, 2.0])
    return _case("scaled_rope_scores_contract", generator, batch, heads, length_q, length_k,
                 _frequencies(rng, head_dim), attention_scale=scale, positions_q=positions_q, positions_k=positions_k,
                 dtype=dtype_of(levels["dtype"]), by_keyword=levels["passing"] == "frequencies by keyword")


CONTRACT = Contract(NAME, (
    SCORE_POSITIONS,
    FLOAT_DTYPES,
    LENGTHS,
    Factor("scale", ("scale left out", "a scale passed")),
    Factor("size 1", ("a size of 1", "no size of 1")),
    Factor("passing", ("frequencies by position", "frequencies by keyword")),
), _from_contract)


def build(rng, generator):
    values, scaled = "scaled_rope_scores_values", "scaled_rope_scores_attention_scale"
    rope16 = (10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)).to(torch.float32)
    cases = [
        _case(values, generator, 2, 3, 7, 7, rope16),
        _case(values, generator, 1, 4, 6, 11, ref.yarn_inverse_frequencies(32, factor=4.0, trained_length=256)),
        _case(values, generator, 2, 2, 9, 5, ref.llama3_inverse_frequencies(16, base=10000.0, trained_length=128)),
        _case(values, generator, 1, 2, rng.randint(2, 9), rng.randint(10, 40),
              ref.ntk_inverse_frequencies(2 * rng.randint(4, 32), factor=8.0)),
        _case(values, generator, 2, 1, 5, 8, rope16 / 4),  # position interpolation by 4
        _case(values, generator, 1, 1, 1, rng.randint(3, 20), _frequencies(rng, 2 * rng.randint(2, 16))),
        _case(values, generator, 1, 2, 4, 4, torch.tensor([0.5])),  # dh = 2, the worked example's frequency
        # Positions per sequence, (B, 1, Lq), and per sequence and head, (B, H, Lk): each row turns by its own.
        _case(values, generator, 2, 3, 4, 6, rope16, positions_q=torch.tensor([[[0, 1, 2, 3]], [[100, 101, 102, 103]]]),
              positions_k=torch.arange(6).view(1, 1, 6) + torch.tensor([[0, 5, 9], [97, 100, 104]]).view(2, 3, 1)),
        _meta_case(values, 2, 3, 5, 7, rope16),
        _case(scaled, generator, 1, 2, 6, 9, ref.yarn_inverse_frequencies(32, factor=4.0, trained_length=256),
              attention_scale=ref.yarn_attention_scale(4.0)),
        _case(scaled, generator, 2, 2, 5, 5, ref.yarn_inverse_frequencies(16, factor=16.0, trained_length=512),
              attention_scale=ref.yarn_attention_scale(16.0), positions_q=torch.arange(3000, 3005),
              positions_k=torch.arange(3000, 3005)),
        _case(scaled, generator, 1, 3, 4, 7, rope16, attention_scale=0.5),
        # Probes, worth nothing.
        _case(values, generator, 1, 2, 5, 5, rope16, scored=False),
        _case(values, generator, 1, 2, 3, 6, rope16, scored=False),
        _case(scaled, generator, 1, 2, 4, 4, rope16, attention_scale=2.0, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    q, k = torch.randn(1, 2, 4, 8, generator=generator), torch.randn(1, 2, 6, 8, generator=generator)
    theta = rope16[:4]
    for args, kwargs, why in [
        ([torch.randn(1, 2, 4, 7, generator=generator), torch.randn(1, 2, 6, 7, generator=generator),
          torch.ones(3)], {}, " (dh = 7 is odd: the coordinates turn in pairs)"),
        ([q, torch.randn(1, 2, 6, 6, generator=generator), theta], {}, " (q and k differ in dh)"),
        ([q, k, rope16], {}, " (inverse_frequencies has dh = 8 entries, not dh/2 = 4: one per pair)"),
        ([q, k, theta[None]], {}, " (inverse_frequencies of shape (1, 4), not (4,))"),
        ([q, k, theta], {"positions_q": torch.arange(5)}, " (positions_q gives 5 positions for 4 queries)"),
        ([q, k, theta], {"positions_k": torch.arange(4)}, " (positions_k gives 4 positions for 6 keys)"),
    ]:
        label = call_label(NAME, args, kwargs)
        cases.append(Case("scaled_rope_scores_invalid_args", label, call_probe(NAME, args, kwargs),
                          raises_check(label, "ValueError", why)))
    return cases

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour(
    "scaled_rope_scores_contract",
    lambda rng, g: ((draw(g, 2, 3, 5, 8), draw(g, 2, 3, 6, 8), 0.5 ** torch.arange(4, dtype=torch.float32)), {}),
    trained=("q", "k"), layouts=("q", "k", "inverse_frequencies"), vary={"attention_scale": (0.7,)})
