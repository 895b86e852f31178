"""Hidden cases for ``ntk_inverse_frequencies``, and what the unit's frequency tasks share (their check, RoPE's
frequencies written out, NTK's usual slips), which the other cases modules import from here.

Tolerance, for every frequency task of the unit: the reference computes in float64 and rounds once to float32.
A float32 formulation (Hugging Face's own: ``1 / base ** (arange / dim)`` in float32) errs in the exponent's
product ln(base') * 2i/dh by float32's relative rounding, so theta_i by about ln(base') * 1.2e-7 relatively:
below 3e-6 for every base' up to 1e10. The tolerance is 1e-5 relative (and 1e-30 absolute: every frequency is
positive, the smallest far above float32's denormals). Every mistake below changes some pair by a percent or more
on the cases that declare it (check-unit makes sure each is caught).
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import Case, Mistake, call_label, call_probe, passed, raises_check, tensor_check
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import long_context as ref

NAME = "ntk_inverse_frequencies"
RTOL, ATOL = 1e-5, 1e-30

HINTS = {
    ("factor", "factor 1"): "at factor 1 nothing is scaled: the output must be RoPE's own base ** (-2i / dh)",
    ("base", "base passed"): "the base argument seems not to be used",
    ("head size", "dh 4"): "dh = 4 goes wrong: its exponent dh / (dh - 2) is 2",
    ("passing", "head_dim by keyword"): "a call that names head_dim= goes wrong: keep the parameter names of the "
                                        "signature",
}


def theta_of(head_dim, base, exponent=None):
    """RoPE's frequencies written out in float64, (dh/2,): base ** exponent(i, dh), -2i/dh unless said."""
    pair = torch.arange(head_dim // 2, dtype=torch.float64)  # (dh/2,)
    return base ** (-2 * pair / head_dim if exponent is None else exponent(pair, head_dim))


def frequency_check(label, expected, mistakes, also_accept=None):
    """The check of a frequency task's output: (dh/2,) float32, within the module's tolerance; ``also_accept`` the
    answer with a helper's stand-in in place."""
    return tensor_check(label, expected, atol=ATOL, rtol=RTOL, mistakes=mistakes, axes=("pair",),
                        also_accept=also_accept,
                        advice=((r"pair", "Each pair i has its own frequency: write theta_i out for dh = 4 or 8 by "
                                          "hand and compare pair by pair."),))


def ntk_mistakes(head_dim, base, factor, base_passed=False, says=""):
    """NTK's usual slips at (dh, base, factor), each as the float32 output it gives: ``says`` is prefixed to each
    explanation (the dynamic task's "with the factor s: ")."""
    d = head_dim
    right = base * factor ** (d / (d - 2))

    def out(scaled_base, exponent=None):
        return lambda: theta_of(d, scaled_base, exponent).to(torch.float32)

    found = [
        Mistake(says + "the exponent uses i/dh where pair i needs 2i/dh (the index of the pair's first dimension, "
                "2i, not of the pair, i): theta_i = base' ** (-2i / dh).", out(right, lambda i, n: -i / n)),
        Mistake(says + "the base is scaled by factor ** ((dh - 2) / dh): NTK's exponent is dh / (dh - 2), the one "
                "that divides the slowest pair by exactly the factor.", out(base * factor ** ((d - 2) / d))),
        Mistake(says + "the base is multiplied by the factor itself: NTK multiplies it by factor ** (dh / (dh - 2)), "
                "so that the slowest pair is divided by exactly the factor.", out(base * factor)),
        Mistake(says + "every frequency is divided by the factor, as position interpolation does: NTK raises the "
                "base instead, which leaves pair 0 as it is and divides only the slowest pair by the full factor.",
                lambda: (theta_of(d, base) / factor).to(torch.float32)),
        Mistake(says + "the factor is not applied: the base becomes base * factor ** (dh / (dh - 2)) before the "
                "powers are taken.", out(base)),
        Mistake(says + "the frequencies grow instead of shrink: theta_i = base' ** (-2i / dh), with the minus sign.",
                out(right, lambda i, n: 2 * i / n)),
    ]
    if base_passed:
        found.append(Mistake(says + "the base passed is ignored: the default 10000 is scaled instead.",
                             out(10000.0 * factor ** (d / (d - 2)))))
    return found


def _case(test, head_dim, factor, base=None, by_keyword=False, scored=True):
    args = [] if by_keyword else [head_dim]
    kwargs = ({"head_dim": head_dim} if by_keyword else {}) | ({} if base is None else {"base": base}) | {
        "factor": factor}
    label = call_label(NAME, args, kwargs)
    used = 10000.0 if base is None else base
    expected = ref.ntk_inverse_frequencies(head_dim, base=used, factor=factor)
    check = frequency_check(label, expected, ntk_mistakes(head_dim, used, factor, base_passed=base is not None))
    features = {"head size": "dh 4" if head_dim == 4 else "dh 64 or more" if head_dim >= 64 else "dh 6 to 32",
                "factor": ("factor 1" if factor == 1 else "a whole factor" if float(factor).is_integer()
                           else "a fractional factor"),
                "base": "the default base" if base is None else "base passed",
                "passing": "head_dim by keyword" if by_keyword else "head_dim by position"}
    return Case(test, label, call_probe(NAME, args, kwargs), check, features=features,
                sizes={"head_dim": head_dim, "dh/2": head_dim // 2}, scored=scored)


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.ntk_inverse_frequencies, args, kwargs)
    return _case(NAME, given["head_dim"], given["factor"], base=given.get("base")).check


def _from_contract(levels, rng, generator):
    """A call of ntk_inverse_frequencies_values at one row of the contract's design."""
    head_dim = {"dh 4": 4, "dh 6 to 32": 2 * rng.randint(3, 16), "dh 64 or more": rng.choice([64, 80, 128])}[
        levels["head size"]]
    factor = {"factor 1": 1.0, "a whole factor": float(rng.choice([2, 4, 8, 16, 32])),
              "a fractional factor": rng.choice([1.5, 2.5, 3.25, 6.4])}[levels["factor"]]
    base = None if levels["base"] == "the default base" else float(rng.choice([500.0, 50000.0, 500000.0, 1e6]))
    return _case("ntk_inverse_frequencies_values", head_dim, factor, base=base,
                 by_keyword=levels["passing"] == "head_dim by keyword")


# The contract: what the docstring lets vary (autograder/core/contracts.py): every pair of levels in some case.
CONTRACT = Contract(NAME, (
    Factor("head size", ("dh 4", "dh 6 to 32", "dh 64 or more")),
    Factor("factor", ("factor 1", "a whole factor", "a fractional factor")),
    Factor("base", ("the default base", "base passed")),
    Factor("passing", ("head_dim by position", "head_dim by keyword")),
), _from_contract)


def invalid_cases(test, name, calls, substitute=None):
    """A raises_check case for each (args, kwargs, why) of ``calls`` to ``name`` (``substitute``: as call_probe's)."""
    cases = []
    for args, kwargs, why in calls:
        label = call_label(name, args, kwargs)
        cases.append(Case(test, label, call_probe(name, args, kwargs, substitute=substitute),
                          raises_check(label, "ValueError", why)))
    return cases


def build(rng, generator):
    cases = [
        _case("ntk_inverse_frequencies_values", 4, 4.0),  # the worked example
        _case("ntk_inverse_frequencies_values", 128, 8.0, base=500000.0),
        _case("ntk_inverse_frequencies_values", 2 * rng.randint(5, 40), float(rng.choice([2, 4, 16]))),
        _case("ntk_inverse_frequencies_values", 64, 1.0),
        # Probes, worth nothing.
        _case("ntk_inverse_frequencies_values", 8, 2.0, scored=False),
        _case("ntk_inverse_frequencies_values", 6, 1.0, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    test = "ntk_inverse_frequencies_invalid_args"
    cases += invalid_cases(test, NAME, [
        ([7], {"factor": 2.0}, " (head_dim is odd: RoPE turns coordinates in pairs)"),
        ([2], {"factor": 2.0}, " (head_dim = 2: the exponent dh / (dh - 2) divides by 0)"),
        ([0], {"factor": 2.0}, " (head_dim must be at least 4)"),
        ([-8], {"factor": 2.0}, " (head_dim must be at least 4)"),
        ([16], {"base": 1.0, "factor": 2.0}, " (a base of 1 makes every frequency 1)"),
        ([16], {"base": 0.5, "factor": 2.0}, " (a base below 1)"),
        ([16], {"base": math.inf, "factor": 2.0}, " (an infinite base)"),
        ([16], {"factor": 0.5}, " (a factor below 1 would shrink the context)"),
        ([16], {"factor": 0.0}, " (a factor of 0)"),
        ([16], {"factor": math.inf}, " (an infinite factor)"),
        ([16], {"factor": math.nan}, " (a factor that is NaN)"),
    ])
    return cases

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("ntk_inverse_frequencies_values", lambda rng, g: ((2 * rng.randint(4, 16),), {"factor": 4.0}),
                      vary={"head_dim": (34,), "base": (500000.0,), "factor": (2.0, 8.0)})
