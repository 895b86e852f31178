"""Hidden cases for ``dynamic_ntk_inverse_frequencies``.

While it runs, the student's ``ntk_inverse_frequencies`` is swapped for the grader's stand-in (job.py's
``scrambled_ntk``: valid frequencies that are not NTK's, depending on the factor it is given): a dynamic NTK that
calls the helper is right when it gives the stand-in's frequencies at the right factor s, one that computes on
its own must give the reference. Each mistake is declared both ways. Tolerance: the frequency tasks' (see
cases/ntk_inverse_frequencies.py).

The contract (``CONTRACT``): the length below, at, just past and far past the trained length; the factor 1, whole
or fractional; the base left out or given; the lengths given by keyword (they are keyword-only) with head_dim by
position or by keyword.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import Case, Mistake, call_label, call_probe, passed
from autograder.core.contracts import Contract, Factor, contract_cases
from autograder.units.long_context.cases.ntk_inverse_frequencies import (frequency_check, invalid_cases,
                                                                         ntk_mistakes, theta_of)
from autograder.units.long_context.job import scrambled_ntk
from solutions import long_context as ref

NAME = "dynamic_ntk_inverse_frequencies"

HINTS = {
    ("length", "length below L"): "at lengths up to the trained length the frequencies are RoPE's own: the factor "
                                  "s is never below 1 (Hugging Face takes max(length, L))",
    ("length", "length L"): "at the trained length itself s = factor * 1 - (factor - 1) = 1: nothing is scaled",
    ("length", "length far past L"): "far past L, s = factor * length / L - (factor - 1) keeps growing",
    ("base", "base passed"): "the base argument seems not to reach the scaling",
    ("multiple", "a length between multiples of L"): "s grows smoothly with the length: between whole multiples of "
                                                     "L, length / L is a fraction (integer division, //, drops it)",
    ("passing", "head_dim by keyword"): "a call that names head_dim= goes wrong: keep the parameter names of the "
                                        "signature",
}


def _case(test, head_dim, length, trained_length, factor, base=None, by_keyword=False, scored=True):
    args = [] if by_keyword else [head_dim]
    kwargs = (({"head_dim": head_dim} if by_keyword else {}) | {"length": length, "trained_length": trained_length}
              | ({} if base is None else {"base": base}) | {"factor": factor})
    label = call_label(NAME, args, kwargs)
    used = 10000.0 if base is None else base
    expected = ref.dynamic_ntk_inverse_frequencies(head_dim, length=length, trained_length=trained_length, base=used,
                                                   factor=factor)
    right = max(1.0, factor * length / trained_length - (factor - 1))
    key = (1 + head_dim % 5, 3 + length % 4, 2 + trained_length % 3)

    def stand_in(s, at_base=used):  # what a call of the helper at factor s gives while the stand-in is in place
        return lambda: scrambled_ntk(head_dim, base=at_base, factor=s, key=key)

    def own(s, at_base=used):  # NTK at factor s, computed without the helper
        return lambda: theta_of(head_dim, at_base * s ** (head_dim / (head_dim - 2))).to(torch.float32)

    wrong = {  # the factor s of each slip with the length, and what it is
        "the scaling is applied at every length: at lengths up to the trained length L the frequencies are RoPE's "
        "own, s = max(1, factor * length / L - (factor - 1)) (Hugging Face never takes the length below L)":
            factor * length / trained_length - (factor - 1),
        "the factor is used as it is, whatever the length (static NTK): dynamic NTK scales by s = factor * length "
        "/ L - (factor - 1) past L, and not at all up to L": factor,
        "s = factor * length / L: the shift - (factor - 1) is missing, so that s = 1 exactly at L":
            factor * length / trained_length,
        "s = length / L: the factor is missing from s = factor * length / L - (factor - 1)":
            max(1.0, length / trained_length),
        "s = factor * length / L - factor: the shift is - (factor - 1), which makes s = 1 at L":
            factor * length / trained_length - factor,
        "s stops at the factor: s = max(1, factor * length / L - (factor - 1)) has no ceiling, it keeps growing "
        "with the length": min(factor, right),
    }
    mistakes = []
    for make in (stand_in, own):  # through the helper (the stand-in in place), or computed here
        for explain, s in wrong.items():
            if s > 0 and s != right:
                mistakes.append(Mistake(explain + ".", make(s)))
        if base is not None:
            mistakes.append(Mistake("the base passed is ignored: the default 10000 is scaled instead.",
                                    make(right, 10000.0)))
    mistakes += ntk_mistakes(head_dim, used, right, says="at the factor s of the length: ")
    check = frequency_check(label, expected, mistakes,
                            also_accept=scrambled_ntk(head_dim, base=used, factor=right, key=key))
    substitute = [{"name": "ntk_inverse_frequencies", "stand_in": "scrambled_ntk", "key": list(key)}]
    ratio = length / trained_length
    features = {"length": ("length below L" if ratio < 1 else "length L" if ratio == 1
                           else "length just past L" if ratio <= 2 else "length far past L"),
                "factor": ("factor 1" if factor == 1 else "a whole factor" if float(factor).is_integer()
                           else "a fractional factor"),
                "base": "the default base" if base is None else "base passed",
                "passing": "head_dim by keyword" if by_keyword else "head_dim by position",
                "multiple": ("a length that is a whole multiple of L" if length % trained_length == 0
                             else "a length between multiples of L")}
    return Case(test, label, call_probe(NAME, args, kwargs, substitute=substitute), check, features=features,
                sizes={"head_dim": head_dim, "length": length, "L": trained_length}, scored=scored)


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.dynamic_ntk_inverse_frequencies, args, kwargs)
    return _case(NAME, given["head_dim"], given["length"], given["trained_length"], given["factor"],
                 base=given.get("base")).check


def _from_contract(levels, rng, generator):
    """A call at one row of the contract's design: its test is that of its length (short or past L)."""
    head_dim = 2 * rng.randint(2, 64)
    trained_length = rng.choice([512, 1000, 2048, 4096])
    factor = {"factor 1": 1.0, "a whole factor": float(rng.choice([2, 4, 8])),
              "a fractional factor": rng.choice([1.5, 2.5, 3.2])}[levels["factor"]]
    # Below L: a length at which the slip "scaled at every length" still gives s > 0, so it shows.
    low = int(trained_length * (factor - 1) / factor) + 1 if factor > 1 else 1
    length = {"length below L": rng.randint(max(low, trained_length // 2), trained_length - 1),
              "length L": trained_length,
              "length just past L": rng.randint(trained_length + 1, 2 * trained_length),
              "length far past L": rng.randint(3 * trained_length, 20 * trained_length)}[levels["length"]]
    test = ("dynamic_ntk_inverse_frequencies_short" if length <= trained_length
            else "dynamic_ntk_inverse_frequencies_values")
    base = None if levels["base"] == "the default base" else float(rng.choice([500.0, 50000.0, 500000.0]))
    return _case(test, head_dim, length, trained_length, factor, base=base,
                 by_keyword=levels["passing"] == "head_dim by keyword")


CONTRACT = Contract(NAME, (
    Factor("length", ("length below L", "length L", "length just past L", "length far past L")),
    Factor("factor", ("factor 1", "a whole factor", "a fractional factor")),
    Factor("base", ("the default base", "base passed")),
    Factor("passing", ("head_dim by position", "head_dim by keyword")),
), _from_contract)


def build(rng, generator):
    values, short = "dynamic_ntk_inverse_frequencies_values", "dynamic_ntk_inverse_frequencies_short"
    cases = [
        _case(values, 4, 4096, 2048, 2.0),  # the worked example: s = 3
        _case(values, 128, 32768, 4096, 8.0, base=500000.0),
        _case(values, 2 * rng.randint(4, 40), rng.randint(5000, 9000), 2048, float(rng.choice([2, 4]))),
        _case(values, 64, 10000, 1000, 1.0),  # factor 1: s = length / L
        _case(short, 4, 2048, 2048, 2.0),  # at L itself
        _case(short, 64, 1800, 2048, 4.0),  # without the max, s = 4 * 0.88 - 3 = 0.52
        _case(short, 2 * rng.randint(4, 32), 1800, 2048, 2.0),  # scaled by 0.76 without the max
        _case(short, 32, 900, 1000, 8.0, base=50000.0),  # 8 * 0.9 - 7 = 0.2
        # Probes, worth nothing.
        _case(values, 8, 3000, 1000, 2.0, scored=False),
        _case(short, 8, 800, 1000, 2.0, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    test = "dynamic_ntk_inverse_frequencies_invalid_args"
    stand_in = [{"name": "ntk_inverse_frequencies", "stand_in": "scrambled_ntk", "key": [3, 5, 1]}]
    cases += invalid_cases(test, NAME, [
        ([16], {"length": 4096, "trained_length": 2048, "factor": 0.5}, " (a factor below 1)"),
        ([16], {"length": 1000, "trained_length": 2048, "factor": 0.5}, " (a factor below 1, even where the length "
                                                                         "is short)"),
        ([16], {"length": 4096, "trained_length": 2048, "factor": math.inf}, " (an infinite factor)"),
        ([16], {"length": 4096, "trained_length": 2048, "factor": math.nan}, " (a factor that is NaN)"),
        ([16], {"length": 0, "trained_length": 2048, "factor": 2.0}, " (a length of 0)"),
        ([16], {"length": 4096, "trained_length": 0, "factor": 2.0}, " (a trained length of 0)"),
        ([15], {"length": 4096, "trained_length": 2048, "factor": 2.0}, " (head_dim is odd)"),
        ([16], {"length": 4096, "trained_length": 2048, "base": 1.0, "factor": 2.0}, " (a base of 1)"),
        # At a short length too, where s = 1 and no scaling is done: the arguments are checked all the same.
        ([15], {"length": 1000, "trained_length": 2048, "factor": 2.0}, " (head_dim is odd, at a length below the "
                                                                         "trained one too)"),
        ([16], {"length": 1000, "trained_length": 2048, "base": 1.0, "factor": 2.0}, " (a base of 1, at a length "
                                                                                      "below the trained one too)"),
    ], substitute=stand_in)
    return cases

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour(
    "dynamic_ntk_inverse_frequencies_values",
    lambda rng, g: ((2 * rng.randint(4, 16),), {"length": 6000, "trained_length": 2048, "factor": 4.0}),
    vary={"head_dim": (34,), "length": (9000,), "trained_length": (4096,), "base": (500000.0,), "factor": (2.0,)},
    stand_ins=(("ntk_inverse_frequencies", "scrambled_ntk", (3, 5, 1)),))
