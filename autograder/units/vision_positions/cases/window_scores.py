"""Hidden cases for ``window_scores``.

While ``window_scores`` runs, the student's ``window_relative_index`` is swapped for the grader's stand-in
(``scrambled_window_index``), which returns a valid but scrambled index: (N, N) int64, each entry one of the
(2Wh - 1)(2Ww - 1) rows of the table, not Swin's. A ``window_scores`` that calls the helper is then right when it
gathers the bias with the stand-in's index (the check's ``also_accept``); one that builds its own index must give
the reference. Either way a wrong index is charged once, to window_relative_index's own task. Every mistake of the
bias is declared with both indices, the reference's and the stand-in's.

Tolerance, per entry, from the inputs. An entry is s * sum_d q_d k_d + b (s the scale used, b the gathered bias).
Write S = |s| * sum_d |q_d k_d| and u = eps / 2 the dtype's unit roundoff.
* float32 and float64: the call computes in its own dtype. A dot product of dh terms summed in any order is within
  dh * u * S of the exact one, the scale and the bias's addition add a rounding each: any correct formulation is
  within (dh + 2) * u * (S + |b|) of the exact entry. The expected entry is the exact one rounded once (the
  reference run in float64 on the same inputs; float64 itself is the reference as it is), so the tolerance is twice
  that bound, (dh + 2) * eps * (S + |b|), and rtol 0. Every known mistake moves entries by a bias (or another
  patch's or head's bias), or the product by a factor of the scale or sqrt(dh): orders of magnitude more.
* float16 and bfloat16: torch's half-precision products and sums accumulate in float32 (on the CPU and on a GPU),
  so a correct formulation rounds to the half dtype only a few times per entry: the scaled q (or each product q_d
  k_d, each at most u * S in all), the product's sum (u * S), the bias (a float32 table turned to q's dtype,
  u * |b|) and the addition (u * (S + |b|)): at most 4u * S + 2u * |b|, and the expected entry (exact, rounded
  once) is off by u * (S + |b|) more, 5u * (S + |b|) = 2.5 * eps * (S + |b|) in all. The tolerance is
  3 * eps * (S + |b|), a little above that, and rtol 0; each known mistake still moves most entries by a
  whole bias or by the product times a factor of 2 or more, which this tolerance does not hide (for bfloat16, whose
  eps is 2^-7, it is about 0.02 of an entry's size).
The bound of either index's bias is taken (the reference's or the stand-in's), as the call may use either.

The contract (``CONTRACT``): every float dtype of q and k (the scores in q's dtype, the table in q's dtype too);
a square window, one wider than tall and one taller than wide; the scale left out (1/sqrt(dh)), 1.0, a tiny one
(1e-4 or less: the scores are then nearly the bias, which the scale must not touch), 0.0 (a scale like any other)
and another explicit one; an axis of length 1 or none (one window, one head, or a window one patch high or wide:
a 1 x 1 window where the window is square); and the arguments passed by position or by keyword (scale is
keyword-only). Its cases count in window_scores_values, the task's one test of values. Beside it, hand-written
cases: the docstring's worked example, Swin's 7 x 7 window, windows and heads of sizes of their own, a table of
another dtype than q's (float32, as a model's parameter is under autocast: the scores still in q's dtype), and
H == N, the one shape where a bias left as (N, N, H) broadcasts against the (B * nW, H, N, N) scores and is added
without an error (elsewhere that mistake raises, and its message says which shapes do not line up; there its
output is also the one of reshaping (N, N, H) to (H, N, N), the same shape, and both mistakes are named).

One case sends q, k and the table on the meta device (no GPU needed): the scores must be made there, of q's dtype
and shape (B * nW, H, N, N). The stand-in takes the helper's place there too, built where it is asked to be (an
index built on the CPU still indexes a meta table, so the index's device is not charged here: the docstring does
not fix it, and the timing tier sees an index copied at every call).

The ValueErrors (window_scores_invalid_args): q's patches not Wh * Ww, and a table that is not ((2Wh - 1)(2Ww - 1),
H): one row a patch rather than an offset, the table transposed (H, offsets), and a one-dimensional table of one
head.

The stand-in (``scrambled_window_index``) is the grader's, run in the job beside the student's code, so it holds
nothing of Swin's index (no offset r1 - r2 or c1 - c2 in it): each patch gets a code, r * (Ww + 1) + c, and an
entry mixes the query's and the key's codes (and their columns) with multipliers of its key, modulo the number of
offsets: the same vectorized arithmetic as the real helper (aranges, a broadcast, a few multiplications), so that
the timed path costs the same with it. Its transpose differs from it at every entry off the diagonal, and it
changes when Wh and Ww trade places (in an oblong window), so a caller that transposes the index or passes the
sides the wrong way round is seen, and named, with the stand-in too. It is defined here; the unit's job.py carries
a copy, which the worker swaps in (STAND_INS["scrambled_window_index"]).

BEHAVIOUR: q, k and the table are what a model trains (gradients must reach each) and what a caller may hand over
in any memory layout; the scale is varied between calls.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, passed, raises_check,
                                   score_factors, size_one, tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import FLOAT_DTYPES, Contract, Factor, contract_cases, dtype_of
from autograder.units.vision_positions.job import scrambled_window_index
from solutions import vision_positions as ref

NAME = "window_scores"
STAND_IN = "scrambled_window_index"  # its name in the unit's job.py (STAND_INS)


HINTS = {
    ("window", ("a window wider than tall", "a window taller than wide")): "square windows work and oblong ones do "
                                                                           "not: Wh and Ww are taken for each other "
                                                                           "somewhere; pass window_h, window_w to "
                                                                           "window_relative_index in that order",
    ("window", "a window wider than tall"): "windows wider than tall go wrong: look at where Wh and Ww are used "
                                            "(window_relative_index(window_h, window_w), the table's "
                                            "(2Wh - 1)(2Ww - 1) rows)",
    ("window", "a window taller than wide"): "windows taller than wide go wrong: look at where Wh and Ww are used "
                                             "(window_relative_index(window_h, window_w), the table's "
                                             "(2Wh - 1)(2Ww - 1) rows)",
    ("heads", "several heads"): "with one head it works: bias_table[index] is (N, N, H); each head's bias is its own "
                                "column of the table, moved first with permute(2, 0, 1) to (H, N, N)",
    ("windows", "several windows"): "with one window it works: the same (H, N, N) bias is added to every window's "
                                    "scores (a leading axis to broadcast over)",
    ("size 1", "a size of 1"): "the cases with an axis of length 1 fail (one window, one head, a window one patch "
                               "high or wide): look for a squeeze(), or an axis dropped or mixed up when its length "
                               "is 1",
    ("scale", "the default scale"): "with the scale left out it goes wrong: the default is 1 / sqrt(dh), dh the last "
                                    "axis of q",
    ("scale", "scale 1.0"): "scale=1.0 goes wrong: a scale passed is used as it is, with no 1/sqrt(dh) on top of it",
    ("scale", "a tiny scale"): "a tiny scale goes wrong: the scale multiplies q @ k^T only, so the scores are then "
                               "nearly the bias itself",
    ("scale", "scale 0.0"): "0.0 is a scale like any other: test `scale is None`, not `if not scale` or "
                            "`scale or ...`, which take 0.0 for \"not given\"",
    ("scale", "another explicit scale"): "look at how the scale argument is used: it multiplies q @ k^T, never the "
                                         "bias",
    ("dtype", "dtype float64"): "keep q's dtype: float64 queries give float64 scores",
    ("dtype", "dtype float16"): "half precision goes wrong: the scores keep q's dtype, float16 in and float16 out; "
                                "build nothing in float32 that the scores then meet (a bias in float32 added to them "
                                "makes float32 scores)",
    ("dtype", "dtype bfloat16"): "bfloat16 goes wrong: the scores keep q's dtype, bfloat16 in and bfloat16 out; build "
                                 "nothing in float32 that the scores then meet (a bias in float32 added to them makes "
                                 "float32 scores)",
    ("table", "table in float32"): "a table of another dtype than q's goes wrong: the scores are in q's dtype, so "
                                   "turn the table (or the gathered bias) to q's dtype before adding it",
    ("passing", "arguments by keyword"): "a call that names q=, k=, bias_table=, window_h= and window_w= fails: keep "
                                         "the parameter names of the signature",
}
HALF = (torch.float16, torch.bfloat16)
ADVICE = (
    (r"the term bias enters with the factor", "The scale multiplies q @ k^T only: the bias is added as it is."),
)


def _bias(table, index):
    """Each head's bias, (H, N, N), in float64: head h's column of ``table`` at ``index``."""
    return table.to(torch.float64)[index].permute(2, 0, 1)


def _scores(q, k, bias, scale):
    """scale * q k^T + bias, in float64: (B * nW, H, N, N)."""
    return scale * (q.to(torch.float64) @ k.to(torch.float64).transpose(-2, -1)) + bias


def _mistakes(q, k, table, window_h, window_w, scale, key):
    """The known wrong formulations, at these inputs, with the reference's index and with the stand-in's under
    ``key`` (what a caller of window_relative_index gets while it is graded). ``scale``: the one passed (None: left
    out)."""
    heads, patches, head_dim = q.shape[1], q.shape[2], q.shape[3]
    offsets = table.shape[0]
    default = 1 / math.sqrt(head_dim)
    used = default if scale is None else scale
    wide = table.to(torch.float64)
    found = []
    for helper in (ref.window_relative_index, lambda h, w: scrambled_window_index(h, w, key=key)):
        idx = helper(window_h, window_w)
        right = _bias(table, idx)
        if used != 1:
            found.append(Mistake("the scale multiplies the bias too: the scores are scale * (q @ k^T) + bias, the "
                                 "scale on the product only, the bias added as it is.",
                                 lambda right=right: used * _scores(q, k, right, 1.0)))
        if heads == patches:  # the only shape where (N, N, H) broadcasts against (B * nW, H, N, N) into its shape
            found.append(Mistake("bias_table[index] is (N, N, H) and was added as it is: it broadcasts against the "
                                 "(B * nW, H, N, N) scores only because H == N here, with its heads on the key axis; "
                                 "move the heads first with permute(2, 0, 1) to (H, N, N).",
                                 lambda idx=idx: _scores(q, k, wide[idx], used)))
        found += [
            Mistake("bias_table[index] is (N, N, H) and was reshaped to (H, N, N): reshape keeps the memory order and "
                    "mixes the heads with the patches; move the heads first with permute(2, 0, 1).",
                    lambda idx=idx: _scores(q, k, wide[idx].reshape(heads, patches, patches), used)),
            Mistake("the table is read as (H, offsets) (bias_table.reshape(H, -1) or .view): it is "
                    "((2Wh - 1)(2Ww - 1), H), one row per offset, one column per head; head h's bias is "
                    "bias_table[index, h] (bias_table[index].permute(2, 0, 1), or bias_table.T[:, index]).",
                    lambda idx=idx: _scores(q, k, wide.reshape(heads, offsets)[:, idx], used)),
            Mistake("the bias is transposed: the entry of query patch n1 and key patch n2 is "
                    "bias_table[index[n1, n2], h], not index[n2, n1] (index.T, or the heads moved first with "
                    "permute(2, 1, 0) or .T, which also swap the two patch axes: use permute(2, 0, 1)).",
                    lambda idx=idx: _scores(q, k, _bias(table, idx.T), used)),
        ]
        if window_h != window_w:
            found.append(Mistake("window_relative_index is called with the window's sides the wrong way round: "
                                 "window_relative_index(window_h, window_w), Wh rows of Ww patches each.",
                                 lambda helper=helper: _scores(q, k, _bias(table, helper(window_w, window_h)), used)))
        if scale is None and head_dim != 1:
            found.append(Mistake("no scale: with scale left out the product is multiplied by 1 / sqrt(dh), dh the "
                                 "last axis of q.", lambda right=right: _scores(q, k, right, 1.0)))
        if scale is None and head_dim > 1:
            found.append(Mistake("the default scale is 1 / dh: it is 1 / sqrt(dh), dh the last axis of q (the scores' "
                                 "spread then does not grow with the head's size).",
                                 lambda right=right: _scores(q, k, right, 1.0 / head_dim)))
        if scale == 0.0:
            found.append(Mistake("a scale of 0 is taken for \"not given\" (`scale or 1 / sqrt(dh)`): 0 is a scale "
                                 "like any other, and the scores are then the bias alone; test `scale is None`.",
                                 lambda right=right: _scores(q, k, right, default)))
        if scale is not None and scale != default:
            found.append(Mistake("the scale argument is ignored: 1 / sqrt(dh) is used where a scale is passed.",
                                 lambda right=right: _scores(q, k, right, default)))
        if used not in (0.0, 1.0):
            found.append(Mistake("the scale divides q @ k^T: it multiplies it (the default 1 / sqrt(dh) makes the "
                                 "scores smaller, not larger).", lambda right=right: _scores(q, k, right, 1 / used)))
    found.append(Mistake("the bias is left out: the scores are scale * (q @ k^T) plus each head's bias "
                         "bias_table[index].permute(2, 0, 1) for the offset between the two patches.",
                         lambda: _scores(q, k, 0.0, used)))
    return found


def _tolerance(q, k, biases, used, dtype):
    """Per entry, from the inputs (module docstring): (dh + 2) * eps * (S + |b|) for float32 and float64,
    3 * eps * (S + |b|) for the half dtypes, |b| the larger of the two indices' biases."""
    eps = torch.finfo(dtype).eps
    size = abs(used) * (q.to(torch.float64).abs() @ k.to(torch.float64).abs().transpose(-2, -1))  # S
    bias = torch.maximum(*(b.abs() for b in biases))  # (H, N, N)
    factor = 3 if dtype in HALF else q.shape[-1] + 2
    return factor * eps * (size + bias)


def _features(windows, heads, window_h, window_w, dtype, scale, passing, table_dtype):
    return {"dtype": f"dtype {str(dtype).replace('torch.', '')}",
            "window": ("a square window" if window_h == window_w else "a window wider than tall"
                       if window_h < window_w else "a window taller than wide"),
            "scale": ("the default scale" if scale is None else "scale 0.0" if scale == 0 else "scale 1.0"
                      if scale == 1 else "a tiny scale" if scale <= 1e-4 else "another explicit scale"),
            "size 1": size_one(windows, heads, window_h, window_w),
            "passing": passing,
            "heads": "one head" if heads == 1 else "several heads",
            "windows": "one window" if windows == 1 else "several windows",
            "table": "table in q's dtype" if table_dtype == dtype else f"table in {str(table_dtype)[6:]}"}


def _key(windows, heads, window_h, window_w):
    """The stand-in's key for a call: its own for each shape of call."""
    return [3 + window_h % 4, 5 + window_w % 3, 1 + (heads + windows) % 5]


def _case(test, generator, windows, heads, window_h, window_w, head_dim, scale=None, dtype=torch.float32,
          table_dtype=None, by_keyword=False, scored=True, inputs=None):
    """A call with q and k of ``dtype``, the table of ``table_dtype`` (default: q's), drawn from ``generator``, or
    ``inputs`` = (q, k, bias_table) given (check_at's)."""
    patches, offsets = window_h * window_w, (2 * window_h - 1) * (2 * window_w - 1)
    if inputs is not None:
        q, key, table = inputs
    else:
        def randn(*shape, kind=dtype):
            return torch.randn(*shape, generator=generator, dtype=torch.float64).to(kind)

        q, key = randn(windows, heads, patches, head_dim), randn(windows, heads, patches, head_dim)
        table = randn(offsets, heads, kind=table_dtype or dtype)
    return _checked(test, q, key, table, window_h, window_w, scale, by_keyword, scored)


def _checked(test, q, key, table, window_h, window_w, scale, by_keyword, scored):
    """The Case of one call on these inputs."""
    windows, heads, patches, head_dim = q.shape
    dtype = q.dtype
    named = {"q": q, "k": key, "bias_table": table, "window_h": window_h, "window_w": window_w}
    args, kwargs = ([], dict(named)) if by_keyword else (list(named.values()), {})
    if scale is not None:
        kwargs["scale"] = scale
    label = call_label(NAME, args, kwargs)
    used = 1 / math.sqrt(head_dim) if scale is None else scale
    if dtype == torch.float64:
        expected = ref.window_scores(q, key, table, window_h, window_w, scale=scale)
    else:  # the exact scores of these inputs, rounded once to q's dtype
        expected = ref.window_scores(q.double(), key.double(), table.double(), window_h, window_w,
                                     scale=scale).to(dtype)
    stand_key = _key(windows, heads, window_h, window_w)
    index = ref.window_relative_index(window_h, window_w)
    stand_in = scrambled_window_index(window_h, window_w, key=tuple(stand_key))
    right, scrambled = _bias(table, index), _bias(table, stand_in)
    product = q.to(torch.float64) @ key.to(torch.float64).transpose(-2, -1)  # (B * nW, H, N, N), unscaled
    check = tensor_check(label, expected, atol=_tolerance(q, key, (right, scrambled), used, dtype), rtol=0.0,
                         mistakes=_mistakes(q, key, table, window_h, window_w, scale, tuple(stand_key)),
                         also_accept=_scores(q, key, scrambled, used).to(dtype),
                         axes=("window", "head", "query patch", "key patch"),
                         factors=score_factors(head_dim, scale if scale else None), advice=ADVICE,
                         inputs=("q", "k", "bias_table"),
                         terms={"q @ k^T": (product, used), "bias": (right, 1.0)},
                         also_terms={"q @ k^T": (product, used), "bias": (scrambled, 1.0)})
    substitute = {"name": "window_relative_index", "stand_in": STAND_IN, "key": stand_key}
    features = _features(windows, heads, window_h, window_w, dtype, scale,
                         "arguments by keyword" if by_keyword else "arguments by position", table.dtype)
    sizes = {"B * nW": windows, "H": heads, "Wh": window_h, "Ww": window_w, "N": patches, "dh": head_dim,
             "(2Wh - 1)(2Ww - 1)": table.shape[0]}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute), check, features=features,
                sizes=sizes, scored=scored)


def _worked_example(test):
    """The docstring's: one window of 1 x 2 patches, one head, dh = 1, scale 1: [[1.5, 1.0], [3.0, 2.5]]."""
    q = torch.tensor([[[[1.0], [2.0]]]])  # (1, 1, 2, 1)
    key = torch.tensor([[[[1.0], [1.0]]]])
    table = torch.tensor([[0.0], [0.5], [1.0]])  # offsets -1, 0, +1
    return _checked(test, q, key, table, 1, 2, 1.0, False, True)


def _meta_case(test, windows, heads, window_h, window_w, head_dim):
    """q, k and the table on the meta device (no values, no GPU needed), by keyword, the helper the stand-in: the
    scores must be made there, (B * nW, H, N, N) in q's dtype (a meta tensor has no values to compare)."""
    patches, offsets = window_h * window_w, (2 * window_h - 1) * (2 * window_w - 1)
    kwargs = {"q": torch.empty(windows, heads, patches, head_dim, device="meta"),
              "k": torch.empty(windows, heads, patches, head_dim, device="meta"),
              "bias_table": torch.empty(offsets, heads, device="meta"), "window_h": window_h, "window_w": window_w}
    label = call_label(NAME, [], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.window_scores, **kwargs)
    substitute = {"name": "window_relative_index", "stand_in": STAND_IN,
                  "key": _key(windows, heads, window_h, window_w)}
    return Case(test, label, call_probe(NAME, [], kwargs, substitute=substitute),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("q", "k", "bias_table")),
                sizes={"B * nW": windows, "H": heads, "Wh": window_h, "Ww": window_w, "N": patches, "dh": head_dim})


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.window_scores, args, kwargs)
    return _checked(NAME, given["q"], given["k"], given["bias_table"], given["window_h"], given["window_w"],
                    given.get("scale"), False, True).check


SCALES = ("the default scale", "scale 1.0", "a tiny scale", "scale 0.0", "another explicit scale")


def _from_contract(levels, rng, generator):
    """A call of window_scores_values at one row of the contract's design."""
    shape = levels["window"]
    if shape == "a square window":
        window_h = window_w = rng.randint(2, 4)
    else:
        short, long = sorted(rng.sample(range(2, 6), 2))
        window_h, window_w = (short, long) if shape == "a window wider than tall" else (long, short)
    windows, heads = rng.randint(2, 4), rng.randint(2, 4)
    if levels["size 1"] == "a size of 1":  # one window, one head, or a window one patch high or wide
        which = rng.choice(["windows", "heads", "side"])
        if which == "windows":
            windows = 1
        elif which == "heads":
            heads = 1
        elif shape == "a square window":
            window_h = window_w = 1
        elif shape == "a window wider than tall":
            window_h = 1
        else:
            window_w = 1
    scale = {"the default scale": None, "scale 1.0": 1.0, "scale 0.0": 0.0,
             "a tiny scale": rng.choice([1e-4, 3e-5, 1e-6]),
             "another explicit scale": rng.choice([0.125, 0.5, 2.0, 3.0])}[levels["scale"]]
    return _case("window_scores_values", generator, windows, heads, window_h, window_w, rng.randint(2, 9),
                 scale=scale, dtype=dtype_of(levels["dtype"]), by_keyword=levels["passing"] == "arguments by keyword")


# The contract: what the docstring lets vary, each level sent by some case of window_scores_values, every pair of
# levels together in one (autograder/core/contracts.py). The device is checked apart (_meta_case), and so is a
# table of another dtype than q's (a hand-written case's level of its own).
CONTRACT = Contract(NAME, (
    FLOAT_DTYPES,
    Factor("window", ("a square window", "a window wider than tall", "a window taller than wide")),
    Factor("scale", SCALES),
    Factor("size 1", ("a size of 1", "no size of 1")),
    Factor("passing", ("arguments by position", "arguments by keyword")),
), _from_contract)


def _invalid(generator):
    """The docstring's ValueErrors: q's patches not Wh * Ww, and a table that is not ((2Wh - 1)(2Ww - 1), H)."""
    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    cases = []
    for q, table, window_h, window_w, why in (
            (randn(2, 3, 5, 4), randn(15, 3), 2, 3, "q holds 5 patches a window where a 2 x 3 window has 6"),
            (randn(2, 3, 6, 4), randn(6, 3), 2, 3, "the table has 6 rows, one a patch: a 2 x 3 window has "
                                                   "3 * 5 = 15 offsets"),
            (randn(2, 3, 6, 4), randn(3, 15), 2, 3, "the table is (H, offsets) = (3, 15), not (15, 3)"),
            (randn(3, 1, 4, 4), randn(9), 2, 2, "a one-dimensional table: it is (offsets, H), even for one head"),
            (randn(2, 3, 6, 4), randn(15, 1), 2, 3, "the table has one column for 3 heads: one number per offset "
                                                    "and head, none broadcast over the heads")):
        args = [q, q.clone(), table, window_h, window_w]
        label = call_label(NAME, args)
        # Under the stand-in for window_relative_index, which refuses what the real one refuses (a side below 1).
        substitute = {"name": "window_relative_index", "stand_in": STAND_IN, "key": [3, 5, 1]}
        cases.append(Case("window_scores_invalid_args", label, call_probe(NAME, args, substitute=substitute),
                          raises_check(label, "ValueError", f" ({why})")))
    return cases


def build(rng, generator):
    def side():
        return rng.randint(2, 5)

    return [
        _worked_example("window_scores_values"),
        # Sizes of their own on every axis: windows, heads, patches, dh and offsets all differ.
        _case("window_scores_values", generator, 2, 3, 2, 3, 5),
        _case("window_scores_values", generator, 3, 2, 3, 3, 8),
        _case("window_scores_values", generator, rng.randint(2, 4), rng.randint(2, 5), 2, side() + 2,
              rng.randint(3, 16)),
        _case("window_scores_values", generator, rng.randint(2, 4), rng.randint(2, 5), side() + 2, 2,
              rng.randint(3, 16), scale=0.5),
        # Swin's window: 7 x 7 patches, 169 offsets, three heads of 32 channels.
        _case("window_scores_values", generator, 2, 3, 7, 7, 32),
        _case("window_scores_values", generator, 3, 4, 3, 5, 6, scale=1.0),
        _case("window_scores_values", generator, 2, 3, 4, 2, 8, scale=1e-4),
        # H == N: a bias left as (N, N, H) broadcasts into the scores' shape (module docstring).
        _case("window_scores_values", generator, 3, 4, 2, 2, 6),
        # A table in float32 while q is in another dtype: the scores in q's dtype.
        _case("window_scores_values", generator, 2, 3, 2, 3, 8, dtype=torch.bfloat16, table_dtype=torch.float32),
        _case("window_scores_values", generator, 2, 3, 3, 2, 8, dtype=torch.float64, table_dtype=torch.float32),
        *_invalid(generator),
        # Probes for the diagnosis, worth nothing: one window and one head, square and oblong; H == N again.
        _case("window_scores_values", generator, 1, 1, 3, 3, 4, scored=False),
        _case("window_scores_values", generator, 1, 1, 2, 4, 4, scored=False),
        _case("window_scores_values", generator, 2, 3, 1, 3, 4, scored=False),
        _case("window_scores_values", generator, 2, 3, 3, 3, 4, scale=1.0, scored=False),
    ] + contract_cases(CONTRACT, rng, generator) + [  # drawn after the hand-written cases: theirs stay as they were
        _meta_case("window_scores_values", 2, 3, 2, 3, 8)]


# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("window_scores_values",
                      lambda rng, g: ((draw(g, 2, 3, 6, 5), draw(g, 2, 3, 6, 5), draw(g, 15, 3), 2, 3), {}),
                      trained=("q", "k", "bias_table"), layouts=("q", "k", "bias_table"), vary={"scale": (0.5,)},
                      stand_ins=(("window_relative_index", STAND_IN, (3, 5, 1)),))
