"""Hidden cases for ``llama3_inverse_frequencies``. Tolerance: the frequency tasks' (see
cases/ntk_inverse_frequencies.py); the wavelengths are compared with the thresholds in float64 by the reference, and
no contract case puts a wavelength within 1e-4 (relatively) of a threshold, so that a float32 formulation lands each
pair on the same side.

Two cases are drawn at the thresholds themselves (``_threshold_case``): the blend is continuous there (smooth is 0 at
L / low_freq_factor and 1 at L / high_freq_factor), so which side of a threshold a pair lands on changes nothing
at the threshold, and < for <= is no mistake (nor is a pair exactly at a threshold a case that tells anything). What
changes the answer is a threshold moved: L // high_freq_factor (floor division) moves it down by up to 1, and the
pairs whose wavelength lies in that gap change band. One case, drawn, puts a pair in the gap below each threshold.

The contract (``CONTRACT``): every setting left out (Llama 3.1's) or given; which bands the pairs fall in (all
three, or only some of them: a short or a long trained length); the factor whole or fractional.
"""

import math

import torch

from autograder.core.behaviour import Behaviour, draw
from autograder.core.cases import Case, Mistake, call_label, call_probe, passed
from autograder.core.contracts import Contract, Factor, contract_cases
from autograder.units.long_context.cases.ntk_inverse_frequencies import frequency_check, invalid_cases, theta_of
from solutions import long_context as ref

NAME = "llama3_inverse_frequencies"

HINTS = {
    ("settings", "settings passed"): "the arguments passed seem not to be used: look at each of factor, "
                                     "low_freq_factor, high_freq_factor and trained_length",
    ("bands", "the three bands"): "the blend between the thresholds goes wrong",
    ("thresholds", "a wavelength between floor(L / f) and L / f"): "only a pair whose wavelength lies just below a "
                                                                   "threshold goes wrong: the thresholds are "
                                                                   "L / low_freq_factor and L / high_freq_factor, "
                                                                   "true divisions (/), not floor divisions (//)",
}


def llama3(head_dim, base, factor, low, high, trained_length, *, swap=False, reverse=False, blend_reversed=False,
           exponent=None, no_two_pi=False, kept_band=False, divided_band=False, interpolate_all=False,
           smooth_from_wavelength=False, order="slow first"):
    """Llama 3's frequencies written out, with one slip or none: float32, (dh/2,). Where a slip makes the bands
    overlap, ``order`` says which rule wins: "slow first" (theta / factor), "fast first" (theta), or "middle
    between" (Hugging Face's form: the slow rule first, then the blend where neither threshold is passed)."""
    if swap:
        low, high = high, low
    theta = theta_of(head_dim, base, exponent)
    wavelength = (1 if no_two_pi else 2 * math.pi) / theta
    turns = wavelength / trained_length if smooth_from_wavelength else trained_length / wavelength
    smooth = (turns - low) / (high - low)
    if blend_reversed:
        smooth = 1 - smooth
    blended = theta if kept_band else theta / factor if divided_band else (1 - smooth) * theta / factor + smooth * theta
    fast, slow = wavelength < trained_length / high, wavelength > trained_length / low
    if reverse:
        fast, slow = slow, fast
    if order == "slow first":
        out = torch.where(slow, theta / factor, torch.where(fast, theta, blended))
    elif order == "fast first":
        out = torch.where(fast, theta, torch.where(slow, theta / factor, blended))
    else:
        out = torch.where(~fast & ~slow, blended, torch.where(slow, theta / factor, theta))
    return (theta / factor if interpolate_all else out).to(torch.float32)


def _bands(head_dim, base, low, high, trained_length):
    wavelength = 2 * math.pi / theta_of(head_dim, base)
    fast = bool((wavelength < trained_length / high).any())
    slow = bool((wavelength > trained_length / low).any())
    middle = bool(((wavelength >= trained_length / high) & (wavelength <= trained_length / low)).any())
    near = min((wavelength / threshold - 1).abs().min().item() for threshold in (trained_length / high,
                                                                              trained_length / low))
    return {(True, True, True): "the three bands"}.get((fast, middle, slow), "some of the bands"), near


def _case(test, head_dim, settings=None, scored=True):
    given = settings or {}
    kwargs = dict(given)
    label = call_label(NAME, [head_dim], kwargs)
    base, factor = given.get("base", 500000.0), given.get("factor", 8.0)
    low, high = given.get("low_freq_factor", 1.0), given.get("high_freq_factor", 4.0)
    trained_length = given.get("trained_length", 8192)
    expected = ref.llama3_inverse_frequencies(head_dim, base=base, factor=factor, low_freq_factor=low,
                                              high_freq_factor=high, trained_length=trained_length)
    at = (head_dim, base, factor, low, high, trained_length)

    def slip(**how):
        return lambda: llama3(*at, **how)

    inverted = ("the thresholds are inverted: L / high_freq_factor, the shorter wavelength, bounds the pairs kept "
                "as they are; L / low_freq_factor, the longer, those divided by the factor (low_freq_factor and "
                "high_freq_factor swapped).")
    reversed_rule = ("the rule runs the wrong way: short wavelengths (fast pairs) are divided by the factor, long ones "
                     "(slow pairs) kept.")
    orders = ("slow first", "fast first", "middle between")  # the bands overlap: each way of writing the rule
    mistakes = [Mistake(inverted, slip(swap=True, order=order)) for order in orders] + [
        Mistake(reversed_rule, slip(reverse=True, order=order)) for order in orders] + [
        Mistake("the blend runs the wrong way: smooth is 0 at the long threshold (theta / factor) and 1 at the short "
                "one (theta): theta' = (1 - smooth) * theta / factor + smooth * theta.", slip(blend_reversed=True)),
        Mistake("the frequencies use i/dh where pair i needs 2i/dh (the index of its first dimension, 2i): "
                "theta_i = base ** (-2i / dh).", slip(exponent=lambda i, n: -i / n)),
        Mistake("the wavelength is 1 / theta_i: a pair turns once every 2 pi / theta_i positions.",
                slip(no_two_pi=True)),
        Mistake("smooth reads wavelength / L, where it needs L / wavelength, the number of turns within L.",
                slip(smooth_from_wavelength=True)),
        Mistake("the pairs between the thresholds are kept as they are: they blend between theta / factor and "
                "theta.", slip(kept_band=True)),
        Mistake("the pairs between the thresholds are divided by the factor: they blend between theta / factor and "
                "theta.", slip(divided_band=True)),
        Mistake("every pair is divided by the factor, as position interpolation divides the positions: Llama 3 keeps "
                "the short wavelengths and blends the middle ones.", slip(interpolate_all=True)),
    ]
    for name, default in (("factor", 8.0), ("low_freq_factor", 1.0), ("high_freq_factor", 4.0),
                          ("trained_length", 8192), ("base", 500000.0)):
        if name in given and given[name] != default:
            changed = dict(zip(("base", "factor", "low_freq_factor", "high_freq_factor", "trained_length"),
                               (base, factor, low, high, trained_length)), **{name: default})
            mistakes.append(Mistake(f"the {name} passed is ignored: the default ({default:g}) is used.",
                                    lambda changed=changed: llama3(head_dim, changed["base"], changed["factor"],
                                                                   changed["low_freq_factor"],
                                                                   changed["high_freq_factor"],
                                                                   changed["trained_length"])))
    bands, _ = _bands(head_dim, base, low, high, trained_length)
    wavelength = 2 * math.pi / theta_of(head_dim, base)
    gap = any(bool(((wavelength >= threshold // 1) & (wavelength < threshold)).any())
              for threshold in (trained_length / high, trained_length / low))
    features = {"settings": "settings passed" if set(given) - {"factor"} else "the defaults",
                "thresholds": "a wavelength between floor(L / f) and L / f" if gap else "no wavelength within 1 "
                                                                                          "below a threshold",
                "bands": bands,
                "factor": "a whole factor" if float(factor).is_integer() else "a fractional factor"}
    return Case(test, label, call_probe(NAME, [head_dim], kwargs), frequency_check(label, expected, mistakes),
                features=features, sizes={"head_dim": head_dim, "dh/2": head_dim // 2, "L": trained_length},
                scored=scored)


def _settings(rng, levels):
    """Settings for one row: drawn again until no wavelength is near a threshold and the bands are the row's."""
    for _ in range(1000):
        head_dim = 2 * rng.randint(4, 64)
        factor = float(rng.choice([2, 4, 8, 16])) if levels["factor"] == "a whole factor" else rng.choice([1.5, 2.5,
                                                                                                             6.4])
        if levels["settings"] == "the defaults":
            settings = {} if factor == 8.0 else {"factor": factor}
            if levels["factor"] == "a whole factor" and rng.random() < 0.5:
                settings = {}
        else:
            low = rng.choice([0.5, 1.0, 2.0])
            settings = {"base": float(rng.choice([10000.0, 500000.0])), "factor": factor, "low_freq_factor": low,
                        "high_freq_factor": low * rng.choice([2.0, 4.0, 8.0]),
                        "trained_length": rng.choice([256, 2048, 8192, 65536])}
        used = {"base": 500000.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "trained_length": 8192} | settings
        bands, near = _bands(head_dim, used["base"], used["low_freq_factor"], used["high_freq_factor"],
                             used["trained_length"])
        whole = float(used["factor"]).is_integer()
        if near > 1e-4 and bands == levels["bands"] and whole == (levels["factor"] == "a whole factor") and (
                bool(set(settings) - {"factor"}) == (levels["settings"] == "settings passed")):
            return head_dim, settings
    raise ValueError(f"no llama3 settings found for {levels}")


def _threshold_case(test, rng):
    """A call whose thresholds L / high_freq_factor and L / low_freq_factor are drawn just above two pairs'
    wavelengths (a fast pair and a slower one), each a fraction of the way up to the next whole number: then
    floor(L / f) <= wavelength < L / f, and a threshold taken by floor division puts the pair in the other band."""
    base = 500000.0
    for _ in range(10_000):  # a head size with two such pairs (see below)
        head_dim = 2 * rng.randint(8, 64)
        wavelength = (2 * math.pi / theta_of(head_dim, base)).tolist()
        inside = [i for i, w in enumerate(wavelength) if 8 < w < 400 and w % 1 < 0.7]
        if any(wavelength[j] > 1.5 * wavelength[i] for i in inside for j in inside):
            break
    else:
        raise ValueError("no head size found with two short wavelengths for the threshold case")
    # Short wavelengths (8 to 400), each at least 0.3 below the next whole number: the gap a floor division opens
    # is then a part in 10**4 or more of the wavelength, which moves the blend by more than the tolerance (1e-5). The
    # slower pair's wavelength at least 1.5 times the faster's, for a blend of some width.
    fast = rng.choice([i for i in inside if any(wavelength[j] > 1.5 * wavelength[i] for j in inside)])
    slow = rng.choice([j for j in inside if wavelength[j] > 1.5 * wavelength[fast]])

    def threshold(w):
        return w + rng.uniform(0.5, 0.95) * (math.floor(w) + 1 - w)

    short, long = threshold(wavelength[fast]), threshold(wavelength[slow])
    trained_length = math.ceil(long * rng.uniform(1.5, 4.0))
    settings = {"factor": float(rng.choice([2, 4, 8, 16])), "low_freq_factor": trained_length / long,
                "high_freq_factor": trained_length / short, "trained_length": trained_length}
    return _case(test, head_dim, settings)


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.llama3_inverse_frequencies, args, kwargs)
    return _case(NAME, given.pop("head_dim"), settings=given).check


def _from_contract(levels, rng, generator):
    head_dim, settings = _settings(rng, levels)
    return _case("llama3_inverse_frequencies_values", head_dim, settings)


# The contract: "the defaults" means every setting left out but perhaps the factor (so that a fractional factor can
# come with it).
CONTRACT = Contract(NAME, (
    Factor("settings", ("the defaults", "settings passed")),
    Factor("bands", ("the three bands", "some of the bands")),
    Factor("factor", ("a whole factor", "a fractional factor")),
), _from_contract)


def build(rng, generator):
    test = "llama3_inverse_frequencies_values"
    cases = [
        _case(test, 8),  # the worked example
        _case(test, 128),  # Llama 3.1 8B
        _case(test, 64, {"factor": 32.0, "trained_length": 8192}),  # Llama 3.2's factor
        _case(test, 2 * rng.randint(8, 64), {"base": 10000.0, "trained_length": 4096, "low_freq_factor": 1.0,
                                             "high_freq_factor": 4.0, "factor": 4.0}),
        _case(test, 16, scored=False),  # a probe, worth nothing
    ] + contract_cases(CONTRACT, rng, generator)
    cases += invalid_cases("llama3_inverse_frequencies_invalid_args", NAME, [
        ([15], {}, " (head_dim is odd)"),
        ([-2], {}, " (head_dim must be positive)"),
        ([64], {"factor": 0.5}, " (a factor below 1)"),
        ([64], {"factor": math.inf}, " (an infinite factor)"),
        ([64], {"low_freq_factor": 4.0, "high_freq_factor": 1.0}, " (high_freq_factor below low_freq_factor: the "
                                                                   "thresholds would be inverted)"),
        ([64], {"low_freq_factor": 2.0, "high_freq_factor": 2.0}, " (equal factors: the blend divides by 0)"),
        ([64], {"low_freq_factor": 0.0}, " (a low_freq_factor of 0: L / 0)"),
        ([64], {"high_freq_factor": math.nan}, " (a high_freq_factor that is NaN)"),
        ([64], {"trained_length": 0}, " (a trained length of 0)"),
        ([64], {"base": 1.0}, " (a base of 1)"),
    ])
    # Drawn last, so that the cases above keep their settings.
    return cases + [_threshold_case(test, rng)]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("llama3_inverse_frequencies_values", lambda rng, g: ((2 * rng.randint(8, 64),), {}),
                      vary={"head_dim": (34,), "factor": (4.0,), "base": (10000.0,), "trained_length": (2048,),
                            "low_freq_factor": (2.0,), "high_freq_factor": (8.0,)})
