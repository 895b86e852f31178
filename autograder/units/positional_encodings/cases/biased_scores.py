"""Hidden cases for ``biased_scores``.

The contract's cases (``CONTRACT``) vary the dtype (float32, float64, float16,
bfloat16: q, k and bias in the same one), the length order (Lq < Lk, = and >),
the bias's shape (each one the docstring names, all broadcasting to (B, H, Lq, Lk)),
the scale (left out, given, and 0.0), an axis of length 1, and how the arguments
are passed (by position, or q=, k=, bias= by keyword). They count in
biased_scores_values, with one case that sends meta tensors and checks where the
scores are made (no values there to compare).

Half precision: the reference's own rounding differs from any other correct order
of operations (matmul, then the scale, then the bias; or baddbmm) by up to a dot
product's rounding error, dh * eps * scale * sum |q_i k_i|, plus a rounding of
the bias and of the sum; each entry's tolerance is twice that bound, from the
inputs. Every known mistake changes entries by far more (a factor of sqrt(dh), a
scaled bias, a missing term). Mixed dtypes (a float32 bias with float16 q) are
left out: the docstring does not say which dtype wins, and promotion and a cast to
q's dtype are both defensible.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, lengths, passed, score_factors,
                                   size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import (FLOAT_DTYPES, LENGTHS, Contract, Factor, contract_cases, dtype_of,
                                       lengths_of)
from solutions import positional_encodings as ref

NAME = "biased_scores"

HINTS = {
    ("lengths", ("Lq < Lk", "Lq > Lk")): "a length taken from the other argument is the usual reason: the query "
                                         "axis has length_q entries, the key axis length_k",
    ("bias", "bias (Lq, Lk)"): "a bias of shape (Lq, Lk) is added to every batch and head: let it broadcast",
    ("bias", "bias (B, 1, 1, Lk)"): "a bias of shape (B, 1, 1, Lk) (a padding mask) is added along the keys: let it "
                                    "broadcast",
    ("scale", "an explicit scale"): "look at how the scale argument is used",
    ("scale", "scale 0.0"): "0.0 is a scale like any other: test `scale is None`, not `if not scale` or "
                            "`scale or ...`, which take 0.0 for \"not given\"",
    ("size 1", "a size of 1"): "the cases with an axis of length 1 fail: look for a squeeze(), or for an "
                               "axis that is dropped or mixed up when its length is 1",
    ("dtype", "dtype float64"): "look at where your scores take their dtype: keep q's dtype throughout",
    ("dtype", "dtype float16"): "half precision goes wrong: keep q's dtype, and build nothing in float32 that the "
                                "result then mixes with",
    ("dtype", "dtype bfloat16"): "bfloat16 goes wrong: keep q's dtype, and build nothing in float32 that the "
                                 "result then mixes with",
    ("dtype", ("dtype bfloat16", "dtype float16", "dtype float64")): "only float32 works: with q of dtype float64, "
                                                                    "float16 or bfloat16 the scores come back in "
                                                                    "another dtype; keep q's dtype (no .float(), no "
                                                                    "buffer made in the default dtype)",
    ("passing", "arguments by keyword"): "a call that names q=, k= and bias= fails: keep the parameter names of the "
                                         "signature you were given",
}

HALF = (torch.float16, torch.bfloat16)


def _half_tolerance(q, k, bias, used, dtype):
    """Each entry's bound on the rounding of any correct order of operations in ``dtype`` (see the docstring)."""
    eps = torch.finfo(dtype).eps
    q, k, bias = (t.to(torch.float64).abs() for t in (q, k, bias))
    products = q @ k.transpose(-2, -1)  # (B, H, Lq, Lk): sum |q_i k_i|
    return 2 * q.shape[-1] * eps * abs(used) * products + 2 * eps * bias + 1e-3


def _case(test, generator, batch, heads, length_q, length_k, head_dim, bias_shape, scale=None, scored=True,
          dtype=torch.float32, by_keyword=False, bias_form=None, inputs=None):
    def randn(*shape):
        if dtype == torch.float32:  # drawn as before, so that the hand-written cases stay as they were
            return torch.randn(*shape, generator=generator)
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)

    q, k, bias = inputs or (randn(batch, heads, length_q, head_dim), randn(batch, heads, length_k, head_dim),
                            randn(*bias_shape))  # ``inputs``: given (check_at's), not drawn
    kwargs = {} if scale is None else {"scale": scale}
    args = [q, k, bias]
    if by_keyword:
        args, kwargs = [], {"q": q, "k": k, "bias": bias, **kwargs}
    label = call_label(NAME, args, kwargs)
    wide = (q.double(), k.double(), bias.double()) if dtype in HALF else (q, k, bias)
    expected = ref.biased_scores(*wide, scale=scale).to(dtype)  # in half precision: the exact scores, rounded once
    used = 1 / math.sqrt(head_dim) if scale is None else scale
    wq, wk, wbias = wide
    product = wq @ wk.transpose(-2, -1)  # (B, H, Lq, Lk)
    mistakes = [
        Mistake("the scale multiplies the bias too; only q @ k^T is scaled: scale * (q @ k^T) + bias.",
                lambda: used * (product + wbias)),
        Mistake("the scale is missing: scale * q @ k^T + bias, with scale = 1/sqrt(dh) by default.",
                lambda: product + wbias),
        Mistake("the scale is 1/dh; it is 1/sqrt(dh).", lambda: product / head_dim + wbias),
    ]
    if scale is not None:
        mistakes.insert(0, Mistake("the scale argument is ignored: the default 1/sqrt(dh) is used instead.",
                                   lambda: product / math.sqrt(head_dim) + wbias))
    atol = rtol = 5e-5 if dtype == torch.float32 else 1e-10
    if dtype in HALF:
        atol, rtol = _half_tolerance(q, k, bias, used, dtype), torch.finfo(dtype).eps
    check = tensor_check(label, expected, atol=atol, rtol=rtol, mistakes=mistakes,
                         axes=("batch", "head", "query", "key"), factors=score_factors(head_dim, scale or None),
                         terms={"q @ k^T": (product, used), "bias": (wbias, 1.0)}, inputs=("q", "k", "bias"))
    shape = {(batch, heads, length_q, length_k): "(B, H, Lq, Lk)", (1, heads, length_q, length_k): "(1, H, Lq, Lk)",
             (length_q, length_k): "(Lq, Lk)", (batch, 1, 1, length_k): "(B, 1, 1, Lk)"}.get(tuple(bias_shape), "other")
    features = {"lengths": lengths(length_q, length_k), "bias": bias_form or f"bias {shape}",
                "size 1": size_one(batch, heads, length_q, length_k),
                "scale": "the default scale" if scale is None else "scale 0.0" if scale == 0 else "an explicit scale",
                "dtype": f"dtype {str(dtype)[6:]}",
                "passing": "arguments by keyword" if by_keyword else "arguments by position"}
    return Case(test, label, call_probe(NAME, args, kwargs), check, features=features,
                sizes={"B": batch, "H": heads, "Lq": length_q, "Lk": length_k, "dh": head_dim}, scored=scored)


def _meta_case(test, batch, heads, length_q, length_k, head_dim):
    """q, k and bias on the meta device, which needs no GPU: the scores must be made there, of shape (B, H, Lq, Lk)
    and q's dtype (a meta tensor has no values to compare)."""
    q = torch.empty(batch, heads, length_q, head_dim, device="meta")
    k = torch.empty(batch, heads, length_k, head_dim, device="meta")
    bias = torch.empty(1, heads, length_q, length_k, device="meta")
    # By keyword, as the contract's cases may call it: a meta tensor has no values, so it is kept out of the
    # positional arguments that tools read values from (tests/core/test_hidden_cases_per_student.py compares them).
    kwargs = {"q": q, "k": k, "bias": bias}
    label = call_label(NAME, [], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.biased_scores, q, k, bias)
    return Case(test, label, call_probe(NAME, [], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("q", "k", "bias")),
                sizes={"B": batch, "H": heads, "Lq": length_q, "Lk": length_k, "dh": head_dim})


# Explicit scales none of which is 1, 1/sqrt(dh) or 1/dh for the head sizes drawn: a mistake that uses one of those
# instead never gets a case right by chance.
SCALES = (0.3, 0.7, 1.5, 2.0)
HEAD_DIMS = (4, 6, 8, 12, 16)


# The contract: what the docstring lets vary, each level sent by some case of biased_scores_values, every pair of
# levels together in one (autograder/core/contracts.py). The device is checked apart (_meta_case).
def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.biased_scores, args, kwargs)
    q, k, bias = given["q"], given["k"], given["bias"]
    return _case(NAME, None, *q.shape[:-2], q.shape[-2], k.shape[-2], q.shape[-1], tuple(bias.shape),
                 scale=given.get("scale"), dtype=q.dtype, inputs=(q, k, bias)).check


def _from_contract(levels, rng, generator):
    form = levels["bias"]
    batch, heads = rng.randint(2, 3), rng.randint(2, 4)
    small, large = rng.randint(2, 4), rng.randint(5, 9)
    if levels["size 1"] == "a size of 1":
        # Which axis is 1: never B or H where it would make one bias shape another ((B, H, ..) with B = 1 is
        # (1, H, ..)), or let a bias that fails to broadcast pass by chance ((1, H, ..) with H = 1).
        axes = {"bias (B, H, Lq, Lk)": ("H", "L"), "bias (1, H, Lq, Lk)": ("L",)}.get(form, ("B", "H", "L"))
        axis = rng.choice(axes)
        batch, heads = (1 if axis == "B" else batch), (1 if axis == "H" else heads)
        if axis == "L":
            small = 1
    order = levels["lengths"]
    if order == "Lq == Lk":
        large = small if small == 1 else large
    length_q, length_k = lengths_of(order, small, large, large)
    bias_shape = {"bias (B, H, Lq, Lk)": (batch, heads, length_q, length_k),
                  "bias (1, H, Lq, Lk)": (1, heads, length_q, length_k), "bias (Lq, Lk)": (length_q, length_k),
                  "bias (B, 1, 1, Lk)": (batch, 1, 1, length_k)}[form]
    scale = {"the default scale": None, "an explicit scale": rng.choice(SCALES), "scale 0.0": 0.0}[levels["scale"]]
    return _case("biased_scores_values", generator, batch, heads, length_q, length_k, rng.choice(HEAD_DIMS),
                 bias_shape, scale=scale, dtype=dtype_of(levels["dtype"]),
                 by_keyword=levels["passing"] == "arguments by keyword", bias_form=form)


CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    Factor("bias", ("bias (B, H, Lq, Lk)", "bias (1, H, Lq, Lk)", "bias (Lq, Lk)", "bias (B, 1, 1, Lk)")),
    LENGTHS,
    Factor("scale", ("the default scale", "an explicit scale", "scale 0.0")),
    Factor("size 1", ("a size of 1", "no size of 1")),
    Factor("passing", ("arguments by position", "arguments by keyword")),
), _from_contract)


def build(rng, generator):
    length = rng.randint(10, 30)
    cases = [
        _case("biased_scores_values", generator, 2, 3, 7, 7, 8, (1, 3, 7, 7)),
        _case("biased_scores_values", generator, 1, 2, 5, 11, 16, (1, 2, 5, 11)),
        _case("biased_scores_values", generator, 3, 1, 1, 4, 4, (3, 1, 1, 4)),
        _case("biased_scores_values", generator, 2, 4, length, length, 8, (2, 4, length, length)),
        _case("biased_scores_scale", generator, 2, 2, 6, 6, 8, (1, 2, 6, 6), scale=1.0),
        _case("biased_scores_scale", generator, 1, 2, 4, 5, 16, (1, 2, 4, 5), scale=0.25),
        _case("biased_scores_broadcast", generator, 2, 3, 6, 6, 8, (6, 6)),
        _case("biased_scores_broadcast", generator, 2, 3, 5, 8, 8, (2, 1, 1, 8)),
        # Probes for the diagnosis, worth nothing: square and not, the bias of the full shape.
        _case("biased_scores_values", generator, 1, 1, 4, 4, 4, (1, 1, 4, 4), scored=False),
        _case("biased_scores_values", generator, 1, 2, 3, 6, 4, (1, 2, 3, 6), scored=False),
        _meta_case("biased_scores_values", 2, 3, 4, 6, 8),
    ]
    # Drawn after the hand-written cases, so that theirs stay as they were.
    return cases + contract_cases(CONTRACT, rng, generator)

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour(
    "biased_scores_broadcast", lambda rng, g: ((draw(g, 2, 3, 4, 8), draw(g, 2, 3, 6, 8), draw(g, 1, 3, 4, 6)), {}),
    trained=("q", "k", "bias"), layouts=("q", "k", "bias"), vary={"scale": (0.5,)})
