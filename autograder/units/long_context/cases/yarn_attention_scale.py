"""Hidden cases for ``yarn_attention_scale``: a Python float, read as a float64 tensor of no axes (job.py's view
``number``).

Tolerance: 1e-6 relative. The reference's arithmetic is float64's; a formulation through float32 tensors (torch.log
of a float32 factor, returned with float()) is good to about 1e-7, and every mistake below changes the scale by a
percent or more at the factors that declare it.

The contract (``CONTRACT``): the factor 1, whole or fractional; mscale left out or given; the factor passed by
position or by keyword.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import Case, Mistake, call_label, call_probe, passed, raises_check, tensor_check
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import long_context as ref

NAME = "yarn_attention_scale"

HINTS = {
    ("mscale", "mscale passed"): "the mscale argument seems not to be used: it multiplies 0.1 * ln(factor)",
    ("factor", "factor 1"): "at factor 1 nothing is scaled: the scale is 1",
    ("passing", "factor by keyword"): "a call that names factor= goes wrong: keep the parameter names of the "
                                      "signature",
}


def _number(value):
    return torch.tensor(float(value), dtype=torch.float64)


def _case(test, factor, mscale=None, by_keyword=False, scored=True):
    args = [] if by_keyword else [factor]
    kwargs = ({"factor": factor} if by_keyword else {}) | ({} if mscale is None else {"mscale": mscale})
    label = call_label(NAME, args, kwargs)
    used = 1.0 if mscale is None else mscale
    expected = _number(ref.yarn_attention_scale(factor, mscale=used))
    root = 0.1 * used * math.log(factor) + 1.0
    mistakes = [
        Mistake("this is sqrt(1/t) = 0.1 * mscale * ln(factor) + 1, the number that multiplies q and k each (Hugging "
                "Face's yarn_get_mscale, which it multiplies into cos and sin): the scores take its square, "
                "(0.1 * mscale * ln(factor) + 1) ** 2.", lambda: _number(root)),
        Mistake("the logarithm is base 10: YaRN's is the natural logarithm, math.log(factor).",
                lambda: _number((0.1 * used * math.log10(factor) + 1.0) ** 2)),
        Mistake("the logarithm is base 2: YaRN's is the natural logarithm, math.log(factor).",
                lambda: _number((0.1 * used * math.log2(factor) + 1.0) ** 2)),
        Mistake("this is the temperature t itself: the scale on the scores is 1/t = (0.1 * mscale * ln(factor) + 1) "
                "** 2, above 1 (it sharpens the softmax).", lambda: _number(1.0 / root ** 2)),
        Mistake("the scale is 0.1 * mscale * ln(factor), without the + 1 (inside the square).",
                lambda: _number((0.1 * used * math.log(factor)) ** 2)),
        Mistake("the square is taken of 0.1 * mscale * ln(factor) alone, and 1 added after: (0.1 * mscale * "
                "ln(factor) + 1) ** 2 squares the sum.", lambda: _number((0.1 * used * math.log(factor)) ** 2 + 1)),
    ]
    if mscale is not None:
        mistakes.append(Mistake("mscale is ignored: it multiplies 0.1 * ln(factor).",
                                lambda: _number((0.1 * math.log(factor) + 1.0) ** 2)))
    check = tensor_check(label, expected, atol=0.0, rtol=1e-6, mistakes=mistakes)
    features = {"factor": ("factor 1" if factor == 1 else "a whole factor" if float(factor).is_integer()
                           else "a fractional factor"),
                "mscale": "the default mscale" if mscale is None else "mscale passed",
                "passing": "factor by keyword" if by_keyword else "factor by position"}
    return Case(test, label, call_probe(NAME, args, kwargs, view="number"), check, features=features,
                scored=scored)


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.yarn_attention_scale, args, kwargs)
    return _case(NAME, given["factor"], mscale=given.get("mscale")).check


def _from_contract(levels, rng, generator):
    factor = {"factor 1": 1.0, "a whole factor": float(rng.choice([2, 4, 8, 16, 32, 40])),
              "a fractional factor": rng.choice([1.5, 2.5, 3.2, 6.4])}[levels["factor"]]
    mscale = None if levels["mscale"] == "the default mscale" else rng.choice([0.707, 0.5, 2.0, 1.25])
    return _case("yarn_attention_scale_values", factor, mscale=mscale,
                 by_keyword=levels["passing"] == "factor by keyword")


CONTRACT = Contract(NAME, (
    Factor("factor", ("factor 1", "a whole factor", "a fractional factor")),
    Factor("mscale", ("the default mscale", "mscale passed")),
    Factor("passing", ("factor by position", "factor by keyword")),
), _from_contract)


def build(rng, generator):
    test = "yarn_attention_scale_values"
    cases = [
        _case(test, 4.0),  # the worked example
        _case(test, 16.0),
        _case(test, 1.0),
        _case(test, 40.0, mscale=0.707),  # DeepSeek's
        _case(test, 4.0, mscale=-0.5),  # the docstring asks only that mscale be finite: a negative one too
        _case(test, float(rng.choice([2, 8, 32]))),
        _case(test, 2.0, scored=False),  # a probe, worth nothing
    ] + contract_cases(CONTRACT, rng, generator)
    for args, kwargs, why in [([0.5], {}, " (a factor below 1)"), ([0.0], {}, " (a factor of 0: ln(0))"),
                              ([math.inf], {}, " (an infinite factor)"), ([math.nan], {}, " (a factor that is NaN)"),
                              ([4.0], {"mscale": math.inf}, " (an infinite mscale)"),
                              ([4.0], {"mscale": math.nan}, " (an mscale that is NaN)")]:
        label = call_label(NAME, args, kwargs)
        cases.append(Case("yarn_attention_scale_invalid_args", label, call_probe(NAME, args, kwargs),
                          raises_check(label, "ValueError", why)))
    return cases

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("yarn_attention_scale_values", lambda rng, g: ((rng.choice([2.0, 4.0, 16.0]),), {}),
                      view="number", fresh=False, vary={"factor": (32.0,), "mscale": (0.707,)})
