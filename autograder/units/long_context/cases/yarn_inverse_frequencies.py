"""Hidden cases for ``yarn_inverse_frequencies``. Tolerance: the frequency tasks' (see
cases/ntk_inverse_frequencies.py); the ramp's bounds are whole pairs (truncate=True) or fractional ones computed in
float64 from the same formula, and a float32 formulation of the ramp moves an entry by float32's rounding only.

The contract (``CONTRACT``): truncate left out, True or False; the betas left out or given; bounds that fall inside
the pairs, meet, or are clamped at 0 or dh - 1 (a short trained length, a large one); the factor whole or
fractional; the base left out or given.

One case is drawn at the rounded bounds (``_rounding_case``): low just below a whole number and high just above one,
where round() goes the other way from floor(low) and ceil(high) (and ceil(low), floor(high) move each bound by one).
Every case says whether round() would move a bound (its "rounding" feature), so that a slip there is told by it.
"""

import math

import torch

from autograder.core.behaviour import Behaviour
from autograder.core.cases import Case, Mistake, call_label, call_probe, passed
from autograder.core.contracts import Contract, Factor, contract_cases
from autograder.units.long_context.cases.ntk_inverse_frequencies import frequency_check, invalid_cases, theta_of
from solutions import long_context as ref

NAME = "yarn_inverse_frequencies"

HINTS = {
    ("truncate", "truncate=False"): "truncate=False keeps the bounds fractional: no floor or ceil",
    ("bounds", "bounds clamped"): "where a bound falls outside the pairs it is clamped: low at 0, high at dh - 1",
    ("meeting", "bounds that meet"): "where low == high, high moves up by 0.001: the ramp is then a step at low",
    ("betas", "betas passed"): "the beta arguments seem not to be used",
    ("base", "base passed"): "the base argument seems not to reach the frequencies or the bounds",
    ("rounding", "a bound that round() moves the other way"): "only where low lies just below a whole number or high "
                                                              "just above one does it go wrong: truncate rounds "
                                                              "outwards, floor(low) and ceil(high), never to the "
                                                              "nearest",
}


def pair_turning(head_dim, base, trained_length, beta, per_dimension=False):
    """The fractional pair index that turns ``beta`` times within the trained length (its dimension, 2i, where
    ``per_dimension``)."""
    return (1 if per_dimension else 0.5) * head_dim * math.log(trained_length / (2 * math.pi * beta)) / math.log(base)


def yarn(head_dim, base, factor, trained_length, beta_fast, beta_slow, truncate, *, swap=False, reverse=False,
         exponent=None, ramp_on_dimensions=False, bounds_in_dimensions=False, clamp_at_half=False, no_nudge=False,
         no_clamp=False, interpolate_all=False):
    """YaRN's frequencies written out, with one slip or none: float32, (dh/2,)."""
    fast, slow = (beta_slow, beta_fast) if swap else (beta_fast, beta_slow)
    low = pair_turning(head_dim, base, trained_length, fast, bounds_in_dimensions)
    high = pair_turning(head_dim, base, trained_length, slow, bounds_in_dimensions)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    if not no_clamp:
        low, high = max(low, 0), min(high, head_dim // 2 - 1 if clamp_at_half else head_dim - 1)
    if low == high and not no_nudge:
        high += 0.001
    pair = torch.arange(head_dim // 2, dtype=torch.float64)
    index = 2 * pair if ramp_on_dimensions else pair
    ramp = ((index - low) / torch.tensor(high - low, dtype=torch.float64)).clamp(0, 1)  # a division by 0 as torch has it
    if reverse:
        ramp = 1 - ramp
    if interpolate_all:
        ramp = torch.ones_like(ramp)
    theta = theta_of(head_dim, base, exponent)
    return ((1 - ramp) * theta + ramp * theta / factor).to(torch.float32)


def _bounds(head_dim, base, trained_length, beta_fast, beta_slow, truncate):
    low = pair_turning(head_dim, base, trained_length, beta_fast)
    high = pair_turning(head_dim, base, trained_length, beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    return low, high


def _case(test, head_dim, factor, trained_length, base=None, betas=None, truncate=None, scored=True):
    kwargs = ({} if base is None else {"base": base}) | {"factor": factor, "trained_length": trained_length}
    if betas is not None:
        kwargs |= {"beta_fast": betas[0], "beta_slow": betas[1]}
    if truncate is not None:
        kwargs["truncate"] = truncate
    label = call_label(NAME, [head_dim], kwargs)
    used_base = 10000.0 if base is None else base
    fast, slow = (32.0, 1.0) if betas is None else betas
    cut = truncate is not False
    expected = ref.yarn_inverse_frequencies(head_dim, base=used_base, factor=factor, trained_length=trained_length,
                                            beta_fast=fast, beta_slow=slow, truncate=cut)
    at = (head_dim, used_base, factor, trained_length, fast, slow)

    def slip(truncate=cut, **how):
        return lambda: yarn(*at, truncate, **how)

    mistakes = [
        Mistake("the ramp's bounds are swapped: low comes from beta_fast (pairs turning many times: a small index) "
                "and high from beta_slow.", slip(swap=True)),
        Mistake("the ramp runs the wrong way: pairs below low (many turns) keep theta_i, pairs above high (few "
                "turns) get theta_i / factor.", slip(reverse=True)),
        Mistake("the frequencies use i/dh where pair i needs 2i/dh (the index of its first dimension, 2i): "
                "theta_i = base ** (-2i / dh).", slip(exponent=lambda i, n: -i / n)),
        Mistake("the ramp is read at the dimension 2i where it runs over the pair index i = 0 .. dh/2 - 1.",
                slip(ramp_on_dimensions=True)),
        Mistake("the bounds are dimensions, dh * ln(L / (2 pi beta)) / ln(base), where the ramp needs the pair "
                "index: dh * ln(L / (2 pi beta)) / (2 ln(base)).", slip(bounds_in_dimensions=True)),
        Mistake("high is clamped at dh/2 - 1; the YaRN authors' code (and Hugging Face) clamps it at dh - 1, which "
                "changes the ramp's slope where the bound is past the last pair.", slip(clamp_at_half=True)),
        Mistake("every pair is divided by the factor, as position interpolation divides the positions: YaRN keeps "
                "the pairs that turn many times within L, and interpolates only the slow ones.",
                slip(interpolate_all=True)),
        Mistake("the bounds are not clamped: low is at least 0 and high at most dh - 1.", slip(no_clamp=True)),
    ]
    if cut:
        mistakes.append(Mistake("the bounds are not rounded outwards: truncate=True (the default) takes floor(low) "
                                "and ceil(high).", slip(truncate=False)))
    else:
        mistakes.append(Mistake("truncate=False is ignored: the bounds stay fractional, with no floor or ceil.",
                                slip(truncate=True)))
    low, high = _bounds(head_dim, used_base, trained_length, fast, slow, cut)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        mistakes.append(Mistake("where low == high the ramp divides by zero: move high up by 0.001 (a step at "
                                "low, as the YaRN authors' code does).", slip(no_nudge=True)))
    if betas is not None:
        mistakes.append(Mistake("the betas passed are ignored: the defaults 32 and 1 are used.",
                                lambda: yarn(head_dim, used_base, factor, trained_length, 32.0, 1.0, cut)))
    if base is not None:
        mistakes.append(Mistake("the base passed is ignored: the default 10000 is used.",
                                lambda: yarn(head_dim, 10000.0, factor, trained_length, fast, slow, cut)))
    raw_low, raw_high = _bounds(head_dim, used_base, trained_length, fast, slow, cut)
    exact_low, exact_high = _bounds(head_dim, used_base, trained_length, fast, slow, False)
    nearest = max(round(exact_low), 0), min(round(exact_high), head_dim - 1)
    features = {
        "rounding": ("bounds not rounded" if not cut else "a bound that round() moves the other way"
                     if nearest != (low, high) else "bounds that round() moves as floor and ceil do"),
        "truncate": {None: "truncate left out", True: "truncate=True", False: "truncate=False"}[truncate],
        "betas": "the default betas" if betas is None else "betas passed",
        "bounds": "bounds clamped" if raw_low < 0 or raw_high > head_dim - 1 else "bounds inside",
        "meeting": "bounds that meet" if low == high else "bounds apart",
        "factor": "a whole factor" if float(factor).is_integer() else "a fractional factor",
        "base": "the default base" if base is None else "base passed"}
    return Case(test, label, call_probe(NAME, [head_dim], kwargs),
                frequency_check(label, expected, mistakes), features=features,
                sizes={"head_dim": head_dim, "dh/2": head_dim // 2, "L": trained_length}, scored=scored)


def _rounding_case(test, rng):
    """A call whose bounds are drawn near whole numbers, inside the pairs: the fractional low a little below one
    (floor and round part), the fractional high a little above one (ceil and round part)."""
    for _ in range(10_000):
        head_dim, trained_length = 2 * rng.randint(16, 64), rng.randint(1024, 65536)
        base = float(round(math.exp(rng.uniform(math.log(5000), math.log(10 ** 6)))))
        low, high = _bounds(head_dim, base, trained_length, 32.0, 1.0, False)
        if 1 < low and high < head_dim // 2 - 1 and 0.6 < low % 1 < 0.95 and 0.05 < high % 1 < 0.4:
            return _case(test, head_dim, float(rng.choice([2, 4, 8, 16])), trained_length, base=base)
    raise ValueError("no YaRN settings found with bounds near whole numbers")


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.yarn_inverse_frequencies, args, kwargs)
    betas = ((given.get("beta_fast", 32.0), given.get("beta_slow", 1.0))
             if {"beta_fast", "beta_slow"} & set(given) else None)
    return _case(NAME, given["head_dim"], given["factor"], given["trained_length"], base=given.get("base"),
                 betas=betas, truncate=given.get("truncate")).check


BASES = (500.0, 50000.0, 500000.0)  # the bases a row of the contract passes


def _from_contract(levels, rng, generator):
    truncate = {"truncate left out": None, "truncate=True": True, "truncate=False": False}[levels["truncate"]]
    values = truncate is not False and levels["betas"] == "the default betas" and levels["bounds"] == "bounds inside"
    # A base of 500 puts high past dh/2 - 1 (0.58 dh at L = 8192), where clamping it at dh/2 - 1 shows: a slip of
    # the options, charged in yarn_inverse_frequencies_options at every seed (its hand-written (128, 4.0, 131072)).
    # In a row of the values test it would charge it there instead, at the seeds that drew 500 for that row.
    base = None if levels["base"] == "the default base" else float(
        rng.choice(BASES[1:] if values else BASES))
    factor = float(rng.choice([2, 4, 8, 16])) if levels["factor"] == "a whole factor" else rng.choice([1.5, 2.5, 6.4])
    head_dim = 2 * rng.randint(8, 64)
    betas = None if levels["betas"] == "the default betas" else (float(rng.choice([16, 24, 48])),
                                                                 float(rng.choice([0.5, 1.0, 2.0])))
    bounds = levels["bounds"]
    if bounds == "bounds clamped":  # below 2 pi * 16 <= 2 pi beta_fast: low < 0, clamped at 0
        length = rng.choice([8, 12, 20])
    else:
        length = rng.choice([1024, 2048, 4096, 8192])
    test = "yarn_inverse_frequencies_values" if values else "yarn_inverse_frequencies_options"
    return _case(test, head_dim, factor, length, base=base, betas=betas, truncate=truncate)


# The contract. Bounds that meet are no level of it: with truncate=False they meet only for two equal betas, so
# that the level could not come with the default ones; two hand-written cases of yarn_inverse_frequencies_options
# send them (at pair 0 with the defaults, a short L; and with equal betas).
CONTRACT = Contract(NAME, (
    Factor("bounds", ("bounds inside", "bounds clamped")),
    Factor("truncate", ("truncate left out", "truncate=True", "truncate=False")),
    Factor("betas", ("the default betas", "betas passed")),
    Factor("factor", ("a whole factor", "a fractional factor")),
    Factor("base", ("the default base", "base passed")),
), _from_contract)


def build(rng, generator):
    values, options = "yarn_inverse_frequencies_values", "yarn_inverse_frequencies_options"
    cases = [
        _case(values, 8, 4.0, 2048),  # the worked example
        _case(values, 128, 16.0, 4096, base=500000.0),  # Qwen-like
        _case(values, 64, 4.0, 2048),
        _case(values, 2 * rng.randint(8, 64), float(rng.choice([2, 8, 32])), rng.choice([1024, 4096, 8192])),
        _case(values, 128, 40.0, 4096, base=10000.0),  # DeepSeek-like factor
        _case(options, 64, 4.0, 2048, truncate=False),
        _case(options, 64, 8.0, 4096, betas=(16.0, 2.0)),
        _case(options, 32, 4.0, 16),  # low < 0, clamped at 0
        _case(options, 128, 4.0, 10 ** 9),  # high clamped at dh - 1
        _case(options, 128, 4.0, 131072),  # high = 70, past dh/2 - 1 = 63, with low = 45 inside: the clamp's place
        _case(options, 32, 4.0, 6),  # both bounds at 0 (L < 2 pi): a step at pair 0
        _case(options, 64, 4.0, 4096, betas=(4.0, 4.0), truncate=False),  # equal betas: a step inside
        # Probes, worth nothing.
        _case(values, 16, 2.0, 1024, scored=False),
        _case(options, 16, 2.0, 1024, truncate=False, scored=False),
    ] + contract_cases(CONTRACT, rng, generator)
    test = "yarn_inverse_frequencies_invalid_args"
    good = {"factor": 4.0, "trained_length": 2048}
    cases += invalid_cases(test, NAME, [
        ([15], good, " (head_dim is odd)"),
        ([0], good, " (head_dim must be positive)"),
        ([64], good | {"factor": 0.5}, " (a factor below 1)"),
        ([64], good | {"factor": math.nan}, " (a factor that is NaN)"),
        ([64], good | {"trained_length": 0}, " (a trained length of 0)"),
        ([64], good | {"beta_fast": 1.0, "beta_slow": 32.0}, " (beta_slow above beta_fast: the ramp would run "
                                                             "backwards)"),
        ([64], good | {"beta_slow": 0.0}, " (a beta of 0: no pair turns 0 times)"),
        ([64], good | {"beta_fast": -32.0, "beta_slow": -64.0}, " (negative betas)"),
        ([64], good | {"beta_fast": math.inf}, " (an infinite beta)"),
        ([64], good | {"base": 1.0}, " (a base of 1: ln(base) = 0)"),
    ])
    return cases + [_rounding_case(values, rng)]  # drawn last, so that the cases above keep their settings

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("yarn_inverse_frequencies_options",
                      lambda rng, g: ((2 * rng.randint(8, 32),), {"factor": 8.0, "trained_length": 4096}),
                      vary={"head_dim": (34,), "factor": (4.0,), "trained_length": (2048,), "beta_fast": (16.0,),
                            "truncate": (False,)})
