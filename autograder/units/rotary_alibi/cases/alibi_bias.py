"""Hidden cases for ``alibi_bias``.

The slopes come with the call (the grader's, not the student's alibi_slopes), so a wrong alibi_slopes costs
only its own task. Tolerance: float32's rounding of slope * distance, however it is formed (s * j - s * i rounds twice): a
few ulps of the largest term, 2.5e-7 * max(Lq, Lk) * max slope, and rtol 1e-6.

Half-precision slopes (float16, bfloat16): the bias is in the slopes' dtype, so each entry is rounded to it at
least once, and a formulation that rounds twice (s * j - s * i, or the distance cast first) is off by a unit in the
last place of its largest term. The tolerance is that, from the inputs: 2.1 * eps(dtype) * max(Lq, Lk) * max
slope (the float32 formula with the half dtype's eps), and rtol eps(dtype). The lengths stay below 256, where
bfloat16 still holds every whole distance exactly; every mistake changes an entry by a whole slope or more.

The contract (``CONTRACT``): Lq below, equal to and above Lk, causal or not, the slopes' dtype, an axis of length 1
(one head, one query, one key), and the arguments passed by position or by keyword. Its cases count in
alibi_bias_layout (the shape and dtype test), which no other test needs.

The rubric's decision on BLOOM's form (``slope_h * j``, the key's own position): it differs from the
contract's ``-slope_h * (i - j)`` by ``slope_h * i``, the same for every key of row i, so under the causal
mask the softmax is the same. A causal bias in that form earns the points, with a note saying why it is
equivalent and what the contract asks for; without the mask (causal=False) it is not equivalent, and fails.
"""

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, Verdict, call_label, call_probe, device_check, passed, raises_check,
                                   size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import (FLOAT_DTYPES, LENGTHS, Contract, Factor, contract_cases, dtype_of,
                                       lengths_of)
from solutions import rotary_alibi as ref

NAME = "alibi_bias"

HINTS = {
    ("lengths", "Lq < Lk"): "the cases with more keys than queries go wrong: the query axis has length_q entries, "
                            "the key axis length_k, and both count from 0",
    ("lengths", "Lq > Lk"): "the cases with more queries than keys go wrong: the query axis has length_q entries, "
                            "the key axis length_k, and both count from 0",
    ("dtype", "dtype float16"): "take the dtype from the slopes: float16 slopes give a float16 bias",
    ("dtype", "dtype bfloat16"): "take the dtype from the slopes: bfloat16 slopes give a bfloat16 bias",
    ("passing", "arguments by keyword"): "a call that names its arguments (length_q=, length_k=, slopes=) goes "
                                         "wrong: keep the parameter names of the signature",
    ("dtype", "dtype float64"): "take the dtype from the slopes",
    ("causal", "causal=False"): "the causal bias is right and the bidirectional one is not: without the mask both "
                                "directions cost, -slope * |i - j|",
}

BLOOM_NOTE = ("Accepted: the bias is slope_h * j (BLOOM's form, the key's own position). It differs from the "
              "contract's -slope_h * (i - j) by slope_h * i, the same number for every key of row i, and a softmax "
              "does not change when a row is shifted by a constant, so under the causal mask the attention is the "
              "same. The contract asks for -slope_h * (i - j): a zero diagonal, every entry 0 or negative, the "
              "same numbers whatever Lk is.")


def _distance(length_q, length_k):
    return (torch.arange(length_q)[:, None] - torch.arange(length_k)[None, :]).to(torch.float64)  # (Lq, Lk): i - j


def _bias(slopes, values):
    return (slopes.to(torch.float64)[:, None, None] * values).unsqueeze(0).to(slopes.dtype)  # (1, H, Lq, Lk)


def _mistakes(length_q, length_k, slopes, causal):
    d = _distance(length_q, length_k)
    right = -d.clamp(min=0) if causal else -d.abs()
    found = [
        Mistake("the sign is reversed: the bias is a penalty, -slope_h * (i - j), so far keys get less attention.",
                lambda: _bias(slopes, -right)),
        Mistake("the distance is taken the other way (j - i): the key at j lies i - j positions before query i.",
                lambda: _bias(slopes, -(-d).clamp(min=0) if causal else right.flip(-1))),
    ]
    if causal:
        found += [
            Mistake("|i - j| is used where causal=True: keys after the query get 0 (the caller's mask removes "
                    "them), not a penalty.", lambda: _bias(slopes, -d.abs())),
            Mistake("the future keys get -inf: the bias carries no mask (they are 0), the caller's causal mask "
                    "removes them.", lambda: _bias(slopes, right.masked_fill(d < 0, float("-inf")))),
        ]
    else:
        found += [
            Mistake("the causal form is used where causal=False asks for -slope_h * |i - j| in both directions.",
                    lambda: _bias(slopes, -d.clamp(min=0))),
            Mistake("the bias is slope_h * j, BLOOM's form: under a causal mask it gives the same attention as "
                    "-slope_h * (i - j), but without the mask (causal=False) the keys after the query would get a "
                    "bonus; the contract asks for -slope_h * |i - j|.",
                    lambda: _bias(slopes, torch.arange(length_k, dtype=torch.float64).expand(length_q, -1))),
        ]
    if length_q != length_k:
        shifted = d + (length_k - length_q)  # query i read as position i + Lk - Lq: the last Lq rows of (Lk, Lk)
        found.append(Mistake("the rows are the last Lq of a square (Lk, Lk) bias, as for a cache's queries: the "
                             "contract counts query i and key j both from 0; a caller with a cache takes those rows "
                             "itself.", lambda: _bias(slopes, -shifted.clamp(min=0) if causal else -shifted.abs())))
    return found


def _order(length_q, length_k):
    return "Lq < Lk" if length_q < length_k else "Lq == Lk" if length_q == length_k else "Lq > Lk"


def _case(test, length_q, length_k, slopes, causal=True, scored=True, by_keyword=False):
    args, kwargs = [length_q, length_k, slopes], {} if causal else {"causal": False}
    if by_keyword:
        args, kwargs = [], {"length_q": length_q, "length_k": length_k, "slopes": slopes, **kwargs}
    label = call_label(NAME, args, kwargs)
    expected = ref.alibi_bias(length_q, length_k, slopes, causal=causal)
    # slope * (i - j) in float32, however it is formed (s * j - s * i, say): within a few ulps of the largest term
    atol = 1e-7 + 2.5e-7 * max(length_q, length_k, 1) * float(slopes.abs().max()) if len(slopes) else 1e-7
    rtol = 1e-6
    if slopes.dtype in (torch.float16, torch.bfloat16):  # the same, in ulps of the half dtype (module docstring)
        eps = torch.finfo(slopes.dtype).eps
        atol = 2.1 * eps * max(length_q, length_k, 1) * float(slopes.abs().max().float()) if len(slopes) else eps
        rtol = eps
    strict = tensor_check(label, expected, atol=atol, rtol=rtol, mistakes=_mistakes(length_q, length_k, slopes, causal),
                          axes=("batch", "head", "query", "key"))
    bloom = tensor_check(label, _bias(slopes, torch.arange(length_k, dtype=torch.float64).expand(length_q, -1)),
                         atol=atol, rtol=rtol) if causal else None

    def check(outcome):
        verdict = strict(outcome)
        if verdict.passed or bloom is None:
            return verdict
        return Verdict(True, BLOOM_NOTE) if bloom(outcome).passed else verdict

    # What it holds, for a reader (core/form_slips.py, the tests of the feedback's words): the strict check's own,
    # and Bloom's layout as its other right answer.
    for name in ("expected", "mistakes", "atol", "rtol", "axes", "coordinates", "advice"):
        setattr(check, name, getattr(strict, name))
    check.also_accept = bloom.expected if bloom is not None else None
    check.strict = strict  # the check of the reference's form, with its mistakes (check_at reads them)
    features = {"lengths": _order(length_q, length_k), "size 1": size_one(len(slopes), length_q, length_k),
                "causal": f"causal={causal}", "dtype": f"dtype {str(slopes.dtype).replace('torch.', '')}",
                "passing": "arguments by keyword" if by_keyword else "arguments by position"}
    return Case(test, label, call_probe(NAME, args, kwargs), check, features=features,
                sizes={"Lq": length_q, "Lk": length_k, "H": len(slopes)}, scored=scored)


def _invalid(slopes):
    """Slopes that are not one slope per head, (H,): the contract's ValueError, not a bias of some shape."""
    args = [3, 4, slopes]
    label = call_label(NAME, args)
    return Case("alibi_bias_invalid_args", label, call_probe(NAME, args),
                raises_check(label, "ValueError", f" (slopes must be one-dimensional, (H,): these have shape "
                                                  f"{tuple(slopes.shape)})"))


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.alibi_bias, args, kwargs)
    return _case(NAME, given["length_q"], given["length_k"], given["slopes"], causal=given.get("causal", True)).check.strict


def _from_contract(levels, rng, generator):
    """A call of alibi_bias_layout at one row of the contract's design."""
    dtype = dtype_of(levels["dtype"])
    heads, length_q, length_k = rng.randint(2, 12), rng.randint(2, 30), rng.randint(2, 30)
    while length_q == length_k:
        length_k = rng.randint(2, 30)
    short, long = sorted((length_q, length_k))
    length_q, length_k = lengths_of(levels["lengths"], short, long, short)
    if levels["size 1"] == "a size of 1":  # one head, one query or one key (both where the lengths are equal)
        which = rng.choice(["heads", "query" if levels["lengths"] != "Lq > Lk" else "key"])
        if which == "heads":
            heads = 1
        elif levels["lengths"] == "Lq == Lk":
            length_q = length_k = 1
        elif which == "query":
            length_q = 1
        else:
            length_k = 1
    slopes = ref.alibi_slopes(heads).to(dtype) * rng.choice([1.0, 0.5, 2.0])
    return _case("alibi_bias_layout", length_q, length_k, slopes, causal=levels["causal"] == "causal=True",
                 by_keyword=levels["passing"] == "arguments by keyword")


# The contract: what the docstring lets vary, each level sent by some case of alibi_bias_layout, every pair of levels
# together in one (autograder/core/contracts.py).
CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    LENGTHS,
    Factor("causal", ("causal=True", "causal=False")),
    Factor("size 1", ("a size of 1", "no size of 1")),
    Factor("passing", ("arguments by position", "arguments by keyword")),
), _from_contract)


def _meta_case(test, length_q, length_k, heads, causal):
    """Slopes on the meta device, which needs no GPU: the bias must be made there, of the slopes' dtype (a meta
    tensor has no values to compare). A distance grid built on the CPU meets the meta slopes and fails."""
    slopes = torch.empty(heads, device="meta")
    kwargs = {} if causal else {"causal": False}
    label = call_label(NAME, [length_q, length_k, slopes], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.alibi_bias, length_q, length_k, slopes, causal=causal)
    return Case(test, label, call_probe(NAME, [length_q, length_k, slopes], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("length_q", "length_k", "slopes")),
                sizes={"Lq": length_q, "Lk": length_k, "H": heads})


def build(rng, generator):
    def slopes(heads, dtype=torch.float32):
        return ref.alibi_slopes(heads).to(dtype)

    n = rng.randint(5, 40)
    return [
        _case("alibi_bias_causal", 4, 4, torch.tensor([0.5])),
        _case("alibi_bias_causal", n, n, slopes(8)),
        _case("alibi_bias_causal", rng.randint(2, 30), rng.randint(2, 30), slopes(rng.choice([4, 12]))),
        _case("alibi_bias_bidirectional", 5, 5, torch.tensor([0.25, 0.5]), causal=False),
        _case("alibi_bias_bidirectional", rng.randint(2, 30), rng.randint(2, 30), slopes(6), causal=False),
        _case("alibi_bias_bidirectional", n, n, slopes(16), causal=False),
        _case("alibi_bias_layout", 3, 11, slopes(4)),
        _case("alibi_bias_layout", 9, 2, slopes(1), causal=False),
        _case("alibi_bias_layout", 7, 7, slopes(8, torch.float64)),
        *(_invalid(bad) for bad in (slopes(4)[:, None], torch.tensor(0.5), slopes(2)[None])),
        # Probes, worth nothing.
        _case("alibi_bias_causal", 6, 6, slopes(2), scored=False),
        _case("alibi_bias_bidirectional", 6, 6, slopes(2), causal=False, scored=False),
        _case("alibi_bias_layout", 4, 6, slopes(2), scored=False),
    ] + contract_cases(CONTRACT, rng, generator) + [_meta_case("alibi_bias_layout", 5, 8, 3, causal=rng.random() < 0.5)]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("alibi_bias_layout", lambda rng, g: ((rng.randint(4, 9), rng.randint(4, 9), draw(g, 4).abs()), {}),
                      trained=("slopes",), layouts=("slopes",),
                      vary={"length_q": (11,), "length_k": (10,), "causal": (False,)})
