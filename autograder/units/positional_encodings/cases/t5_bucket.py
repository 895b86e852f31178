"""Hidden cases for ``t5_relative_position_bucket``: bucket for bucket, exact.

The reference agrees with Hugging Face's ``T5Attention._relative_position_bucket``
on every case here (a test in tests/ checks that where transformers is installed).

The contract's cases (in the test of their direction) send every shape the docstring allows,
a 0-d tensor included. A 0-d tensor holds one distance, and at most distances
most wrong formulas give the right bucket by chance; a case a wrong formula gets
right by chance blurs the condition the feedback states (the settings' num_buckets
no longer tells passing cases from failing ones). So the scalar's distance is
drawn where it tells the most apart: where its bucket differs from the buckets of
the other direction, of T5's defaults for each setting, of every known mistake, and
of the formula with an exact part of half or twice its size. The contract's cases
go to the test of their direction, not to t5_bucket_settings: there, causal calls
with T5's defaults beside the hand-chosen settings would leave no condition that
separates the cases a setting's slip fails from those it passes by chance.
"""

import math

import torch

from autograder.core.behaviour import Behaviour
from autograder.core.cases import (Case, Mistake, call_label, call_probe, device_check, passed, raises_check,
                                   tensor_check)
from autograder.core.cases import computed_on_the_cpu
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import positional_encodings as ref

NAME = "t5_relative_position_bucket"

HINTS = {
    ("direction", "bidirectional=False"): "the encoder's buckets are right, the decoder's are not: look at the "
                                          "causal branch (only the past gets buckets there)",
    ("direction", "bidirectional=True"): "the decoder's buckets are right, the encoder's are not: look at how the "
                                         "buckets are halved between the two directions",
    ("settings", "settings passed"): "with T5's defaults it works: look for a number written where "
                                     "num_buckets or max_distance belongs",
    ("ratio", "max_distance / max_exact not whole"): "only the settings where max_distance / max_exact is not a "
                                                     "whole number fail: look at how that ratio is computed",
    ("positions dtype", "int32 positions"): "int32 positions go wrong: the buckets are int64 whatever the integer "
                                            "dtype of relative_position",
    ("shape", "a scalar"): "a 0-d relative_position goes wrong: the buckets have relative_position's shape, () "
                           "included; look for an index or a view that needs an axis",
    ("passing", "settings by position"): "settings passed by position go wrong: keep the order of the signature, "
                                         "(relative_position, bidirectional, num_buckets, max_distance)",
    ("passing", "settings by keyword"): "settings passed by name go wrong: keep the parameter names of the "
                                        "signature you were given",
}


def _one_side(distance, n, max_distance, log_span=None, dtype=torch.float32, ratio=None, log=torch.log):
    """Buckets 0..n-1 for distances >= 0, with knobs to reproduce the usual slips: how many buckets the log part
    spans, the precision of the log, max_distance / max_exact, and the log
    taken of d / max_exact."""
    max_exact = n // 2
    log_span = n - max_exact if log_span is None else log_span
    ratio = max_distance / max_exact if ratio is None else ratio
    far = max_exact + (log(distance.to(dtype) / max_exact) / math.log(ratio) * log_span).long()
    return torch.where(distance < max_exact, distance, far.clamp(max=n - 1))


def mistakes(relative_position, bidirectional, num_buckets, max_distance):
    rp = relative_position
    n = num_buckets // 2 if bidirectional else num_buckets
    found = []
    if bidirectional:
        found += [
            Mistake("the direction is flipped: keys after the query (relative_position > 0) take the upper half "
                    "of the buckets, keys before it the lower half.",
                    lambda: (rp < 0).long() * n + _one_side(rp.abs(), n, max_distance)),
            Mistake("the buckets are not halved for the two directions: with bidirectional=True each direction "
                    "gets num_buckets // 2 buckets (n = num_buckets // 2 before max_exact = n // 2).",
                    lambda: (rp > 0).long() * num_buckets + _one_side(rp.abs(), num_buckets, max_distance)),
            Mistake("the far buckets are not clamped: every distance from max_distance on belongs to the last "
                    "bucket of its half, n - 1.",
                    lambda: (rp > 0).long() * n + torch.where(rp.abs() < n // 2, rp.abs(), n // 2 + (
                        torch.log(rp.abs().float() / (n // 2)) / math.log(max_distance / (n // 2)) * (n - n // 2)).long())),
        ]
        side = lambda **knobs: (rp > 0).long() * n + _one_side(rp.abs(), n, max_distance, **knobs)
    else:
        found += [
            Mistake("in a causal model the past gets the buckets and the future bucket 0: use "
                    "max(-relative_position, 0), not max(relative_position, 0).",
                    lambda: _one_side(rp.clamp(min=0), n, max_distance)),
            Mistake("in a causal model future keys (relative_position > 0) all go to bucket 0; |relative_position| "
                    "gives them the buckets of the past.",
                    lambda: _one_side(rp.abs(), n, max_distance)),
        ]
        side = lambda **knobs: _one_side((-rp).clamp(min=0), n, max_distance, **knobs)
    found += [
        Mistake("the log-spaced part spans n buckets; it spans n - max_exact (the rest after the exact ones).",
                lambda: side(log_span=n)),
        Mistake("max_distance / max_exact is divided as integers (//); T5 divides them as real numbers.",
                lambda: side(ratio=max(2, max_distance // (n // 2)))),
        Mistake("the two logs have different bases (log2 of d / max_exact over the natural log of max_distance / "
                "max_exact): their ratio is the same in every base only when both use the same one.",
                lambda: side(log=torch.log2)),
        Mistake("the two logs have different bases (log10 of d / max_exact over the natural log of max_distance / "
                "max_exact): their ratio is the same in every base only when both use the same one.",
                lambda: side(log=torch.log10)),
        Mistake("right everywhere but where a distance falls on a bucket's edge: there the log is computed in "
                "another precision than T5's float32 (float64 here); compute log(d / max_exact) in float32, in "
                "exactly the order of the formula.",
                lambda: side(dtype=torch.float64)),
    ]
    return found


def _advice(bidirectional, num_buckets):
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    return (
        (rf"right for \|relative_position\| up to {max_exact - 1}, wrong from {max_exact} on",
         f"The exact buckets (distances below max_exact = {max_exact}) are right and the log-spaced ones are not: "
         "look at the log part of the formula."),
        (r"wrong for relative_position up to -?\d+, right from",
         "Only keys before the query are wrong: look at the buckets the past gets."),
        (r"right for relative_position up to -?\d+, wrong from",
         "Only keys after the query are wrong: look at the buckets the future gets."),
        (r"one too (high|low)|one off",
         "Off by one bucket: look at where your formula turns the log into a whole number (T5 truncates a float32 "
         "log with .long(); rounding, ceil, or another precision moves a bucket's edge)."),
    )


def case(test, relative_position, bidirectional=True, num_buckets=32, max_distance=128, pass_all=True,
         by_position=False):
    kwargs = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance} if pass_all else {}
    args = [relative_position]
    if by_position:
        args, kwargs = [relative_position, bidirectional, num_buckets, max_distance], {}
    label = call_label(NAME, args, kwargs)
    expected = ref.t5_relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)
    check = tensor_check(label, expected, atol=0, rtol=0,
                         mistakes=mistakes(relative_position, bidirectional, num_buckets, max_distance),
                         coordinates={"|relative_position|": relative_position.abs(),
                                      "relative_position": relative_position},
                         advice=_advice(bidirectional, num_buckets), inputs=("relative_position",))
    max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
    features = {"direction": f"bidirectional={bidirectional}",
                "settings": "settings passed" if (num_buckets, max_distance) != (32, 128) else "T5's defaults",
                "ratio": "max_distance / max_exact not whole" if max_exact and max_distance % max_exact
                else "max_distance / max_exact whole",
                "num_buckets": f"num_buckets={num_buckets}",
                "positions dtype": f"{str(relative_position.dtype).replace('torch.', '')} positions",
                "shape": SHAPES.get(relative_position.dim(), "three axes or more"),
                "passing": ("settings by position" if by_position else "settings by keyword" if pass_all
                            else "settings left out")}
    return Case(test, label, call_probe(NAME, args, kwargs), check, features=features,
                sizes={"num_buckets": num_buckets, "max_distance": max_distance, "max_exact": max_exact})


SHAPES = {0: "a scalar", 1: "a line", 2: "a grid"}
# Settings the contract sends besides T5's own (bidirectional num_buckets, max_distance); the causal ones too. In
# each, max_distance is a whole multiple of max_exact in both directions (bidirectional: num_buckets // 4; causal:
# num_buckets // 2), as at T5's defaults: an integer division there is a slip of the settings, shown and charged in
# t5_bucket_settings alone (its (True, 32, 100)). A setting here that showed it would charge it in the test of a
# direction instead, and only for the students whose seed drew that setting.
OTHER_SETTINGS = ((24, 72), (16, 96), (40, 300), (12, 48))


def _telling_distance(bidirectional, num_buckets, max_distance, rng):
    """One relative position for a 0-d case: in the log part (past keys for a causal call, where its buckets
    are), and among those, one whose bucket the most wrong formulas miss (see the module's docstring)."""
    n = num_buckets // 2 if bidirectional else num_buckets
    far = torch.arange(n // 2, 2 * max_distance)
    sign = rng.choice([-1, 1]) if bidirectional else -1
    candidates = sign * far
    right = ref.t5_relative_position_bucket(candidates, bidirectional, num_buckets, max_distance)
    others = [ref.t5_relative_position_bucket(candidates, not bidirectional, num_buckets, max_distance)]
    for other_buckets, other_distance in ((32, max_distance), (num_buckets, 128)):
        try:
            others.append(ref.t5_relative_position_bucket(candidates, bidirectional, other_buckets, other_distance))
        except ValueError:  # a setting with T5's other default is undefined: nothing to tell apart there
            pass
    for mistake in mistakes(candidates, bidirectional, num_buckets, max_distance):
        others.append(mistake.output())
    distance = candidates.abs()
    for max_exact in (n // 4, n):  # an exact part of half or twice its size, the rest of the formula as it is
        if 0 < max_exact < max_distance:
            log = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
            others.append(torch.where(distance < max_exact, distance, (max_exact + log.long()).clamp(max=n - 1)))
    told = sum((other != right).long() for other in others)  # (candidates,): how many each tells apart
    best = torch.nonzero(told == told.max()).flatten().tolist()
    return int(candidates[rng.choice(best)])


def check_at(args, kwargs):
    """The check of any call's output and its declared mistakes, at that call's inputs: what the self-checks'
    table of known mistakes is made of (autograder/course/mistake_table.py)."""
    given = passed(ref.t5_relative_position_bucket, args, kwargs)
    settings = {name: given.get(name, default) for name, default in (
        ("bidirectional", True), ("num_buckets", 32), ("max_distance", 128))}
    return case(NAME, given["relative_position"], **settings, pass_all=len(given) > 1).check


def _from_contract(levels, rng, generator):
    """A call at one row of the contract's design, in the test of its direction (t5_bucket_bidirectional or
    t5_bucket_causal): not in t5_bucket_settings, whose hand-chosen settings are what tells a setting's slip
    apart (with causal calls of T5's defaults among them, a causal slip that some settings hide by chance
    leaves no condition that separates its passing cases from its failing ones)."""
    num_buckets, max_distance = (32, 128) if levels["settings"] == "T5's defaults" else rng.choice(OTHER_SETTINGS)
    reach = 3 * max_distance  # past max_distance, where every bucket is the last
    shape = {"a scalar": (), "a line": (rng.randint(50, 200),), "a grid": (rng.randint(5, 20), rng.randint(5, 20)),
             "three axes or more": (2, rng.randint(3, 6), rng.randint(5, 12))}[levels["shape"]]
    relative_position = torch.randint(-reach, reach + 1, shape, generator=generator)
    bidirectional = levels["direction"] == "bidirectional=True"
    if not shape:
        relative_position = torch.tensor(_telling_distance(bidirectional, num_buckets, max_distance, rng))
    else:  # the exact buckets, the edge of the log part and max_distance itself are in every tensor
        flat = relative_position.view(-1)
        marks = torch.tensor([0, 1, -1, max_distance, -max_distance, max_distance - 1])[:flat.numel()]
        flat[:marks.numel()] = marks
    relative_position = relative_position.to(getattr(torch, levels["positions dtype"].split()[0]))
    return case("t5_bucket_bidirectional" if bidirectional else "t5_bucket_causal", relative_position, bidirectional,
                num_buckets, max_distance, by_position=levels["passing"] == "settings by position")


# The contract: what the docstring lets vary, each level sent by some case of the test of its direction, every pair
# of levels together in one (autograder/core/contracts.py). Leaving the settings out is T5's defaults only: the
# first case of t5_bucket_bidirectional does that.
CONTRACT = Contract(NAME, (
    Factor("positions dtype", ("int64 positions", "int32 positions")),
    Factor("shape", ("a scalar", "a line", "a grid", "three axes or more")),
    Factor("direction", ("bidirectional=True", "bidirectional=False")),
    Factor("settings", ("T5's defaults", "settings passed")),
    Factor("passing", ("settings by keyword", "settings by position")),
), _from_contract)


def _meta_case(test, shape):
    """Distances on the meta device (no values, no GPU needed): the buckets must be made there, int64, of their
    shape; a table or a constant tensor made on the CPU meets them and fails. By keyword: a meta tensor has no values
    for tools that read positional ones."""
    kwargs = {"relative_position": torch.empty(shape, dtype=torch.long, device="meta")}
    label = call_label(NAME, [], kwargs) + " on the meta device"
    expected = computed_on_the_cpu(ref.t5_relative_position_bucket, **kwargs)
    return Case(test, label, call_probe(NAME, [], kwargs),
                device_check(label, "meta", expected.shape, expected.dtype, inputs=("relative_position",)))


def build(rng, generator):
    line = torch.arange(-2000, 2001)
    grid = torch.arange(300)[None, :] - torch.arange(300)[:, None]  # key - query, (300, 300)
    scattered = torch.randint(-3000, 3001, (3, 5, 7), generator=generator)
    cases = [
        case("t5_bucket_bidirectional", line, pass_all=False),
        case("t5_bucket_bidirectional", grid),
        case("t5_bucket_bidirectional", scattered),
        # int32 positions, as an int32 index gives them: the buckets are int64 whatever the input's integer dtype.
        case("t5_bucket_bidirectional", (torch.arange(40)[None, :] - torch.arange(30)[:, None]).to(torch.int32)),
        case("t5_bucket_causal", line, bidirectional=False),
        case("t5_bucket_causal", grid, bidirectional=False),
        case("t5_bucket_causal", scattered, bidirectional=False),
    ]
    # (True, 32, 100): max_distance is no multiple of max_exact = 8, so an integer division there shows.
    # (True, 20, 160), (True, 32, 1461): distances land on a bucket's edge, where a log in float64 rather than
    # T5's float32 gives the next bucket (10, 20 and 80 for the first; 762 for the second).
    for bidirectional, num_buckets, max_distance in [(True, 64, 256), (False, 16, 32), (True, 8, 20), (True, 10, 50),
                                                     (True, 32, 100), (True, 20, 160), (True, 32, 1461),
                                                     (False, rng.choice([12, 24, 48]), rng.choice([60, 100, 500]))]:
        cases.append(case("t5_bucket_settings", torch.arange(-max(700, max_distance + 50), max(700, max_distance + 50) + 1),
                          bidirectional, num_buckets, max_distance))
    for bidirectional, num_buckets, max_distance, why in [
        (True, 3, 128, " (3 buckets, halved to 1 per direction, leave max_exact = 0)"),
        (False, 1, 128, " (1 bucket leaves max_exact = 0)"),
        (True, 32, 8, " (max_distance = 8 is not above max_exact = 8: log(max_distance / max_exact) = 0)"),
        (False, 32, 10, " (max_distance = 10 is below max_exact = 16)"),
    ]:
        kwargs = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
        label = call_label(NAME, [line], kwargs)
        cases.append(Case("t5_bucket_invalid_args", label, call_probe(NAME, [line], kwargs),
                          raises_check(label, "ValueError", why)))
    return cases + contract_cases(CONTRACT, rng, generator) + [_meta_case("t5_bucket_bidirectional", (6, 9))]

# The behaviour contract (autograder/core/behaviour.py): which of its properties this task's function holds.
BEHAVIOUR = Behaviour("t5_bucket_settings", lambda rng, g: (
    (torch.arange(40)[None, :] * 7 - torch.arange(30)[:, None] * 5,), {}), layouts=("relative_position",),
    vary={"bidirectional": (False,), "num_buckets": (16,), "max_distance": (64,)})
