"""A task's contract as data, and the hidden cases drawn from it as a covering design. Instructor-only.

Each task declares, in its cases module (``CONTRACT``), the domain of its function: every factor of a call
that its docstring lets vary (a dtype it allows, lengths with Lq < Lk, = and >, a scale left out, given, or
0.0, an argument passed by position or by keyword, the device asked for) and the levels each may take. A
mistake that shows only at one level of one factor (a float16 table, a keyword argument ignored) is seen only
if some case sends that level, and it is told apart only if no other factor's level always comes with it.

So the cases drawn from a contract are a covering design of strength two (``design``): every level of every
factor appears, every pair of levels of two factors appears together in some case, except the pairs the
contract excludes (and says why). With every pair covered, no level appears only together with one level of
another factor (``confounded``): a condition the feedback states ("wrong for float16") is the one that
matters, not another that always came with it. ``tests/core/test_contracts.py`` checks both for every task of
every unit, so a unit added later is held to the same.

The generator is greedy (the AETG idea: each new case is the one, among a few candidates, that covers the
most pairs not yet covered) and deterministic for a given ``random.Random``; a handful of cases covers what
the product of all levels would need hundreds for.

Every seed's cases hold the same design: the one the unit's shared seed draws (``same_designs``, used by
cases.build_cases). With a course secret, each student's hidden cases then hold the same combinations of levels
as every classmate's, and only the values drawn in each case (``Contract.make``, from the student's seed) differ:
no student is held to a harder set of corners than another. It also spares each student's seed the design, about
a third of the time it takes to build a seed's cases.
"""

import contextlib
import contextvars
import itertools
import random
from dataclasses import dataclass, field
from typing import Callable

import torch

CANDIDATES = 24  # rows tried for each row kept: more covers the pairs in fewer rows, at a little more time


@dataclass(frozen=True)
class Factor:
    """One way a call may vary: ``name`` as the cases' features name it, and its ``levels`` (their values)."""

    name: str
    levels: tuple

    def __post_init__(self):
        if len(self.levels) != len(set(self.levels)) or not self.levels:
            raise ValueError(f"factor {self.name!r}: its levels must be distinct and at least one")


@dataclass(frozen=True)
class Contract:
    """The domain of a task's function, and how one call is made from a choice of levels.

    ``make(levels, rng, generator)`` returns one scored Case whose ``features`` hold ``levels``; ``excluded``
    lists the pairs of levels no call can have together, each ``((name, level), (name, level), why)``.
    """

    function: str
    factors: tuple
    make: Callable = field(compare=False)
    excluded: tuple = ()

    def __post_init__(self):
        names = [factor.name for factor in self.factors]
        if len(names) != len(set(names)):
            raise ValueError(f"contract of {self.function}: two factors share a name")
        levels = {factor.name: factor.levels for factor in self.factors}
        for first, second, why in self.excluded:
            for name, level in (first, second):
                if name not in levels or level not in levels[name]:
                    raise ValueError(f"contract of {self.function}: excluded pair names {name}={level!r}, "
                                     "which no factor has")
            if not why:
                raise ValueError(f"contract of {self.function}: say why {first} and {second} cannot go together")

    def factor(self, name):
        return next(factor for factor in self.factors if factor.name == name)


# Factors several tasks share, named as their cases' features name them.
FLOAT_DTYPES = Factor("dtype", ("dtype float32", "dtype float64", "dtype float16", "dtype bfloat16"))
LENGTHS = Factor("lengths", ("Lq < Lk", "Lq == Lk", "Lq > Lk"))


def dtype_of(level):
    """The torch dtype a level of FLOAT_DTYPES names ("dtype bfloat16" -> torch.bfloat16)."""
    return getattr(torch, level.split()[-1])


def lengths_of(level, short, long, equal):
    """(Lq, Lk) for a level of LENGTHS: the short and the long length in its order, or ``equal`` twice."""
    return {"Lq < Lk": (short, long), "Lq == Lk": (equal, equal), "Lq > Lk": (long, short)}[level]


# The positions a RoPE score path takes (positions_q=, positions_k=), and the sizes of a score call with its
# "size 1" level: shared by the second unit's rope_scores and the third unit's scaled_rope_scores.
SCORE_POSITIONS = Factor("positions", ("default positions", "positions_q given", "positions_k given",
                                       "positions given", "float positions given"))


def score_sizes(levels, rng):
    """(B, H, dh, Lq, Lk) of a score call at a row with LENGTHS and "size 1" levels: small sizes from ``rng``, and
    for "a size of 1" one sequence, one head, one query or one key."""
    batch, heads, head_dim = rng.randint(2, 3), rng.randint(2, 3), 2 * rng.randint(2, 8)
    short, long = sorted(rng.sample(range(2, 13), 2))
    length_q, length_k = lengths_of(levels["lengths"], short, long, short)
    if levels["size 1"] == "a size of 1":
        which = rng.choice(["B", "H", "query" if levels["lengths"] != "Lq > Lk" else "key"])
        if which == "B":
            batch = 1
        elif which == "H":
            heads = 1
        elif levels["lengths"] == "Lq == Lk":
            length_q = length_k = 1
        elif which == "query":
            length_q = 1
        else:
            length_k = 1
    return batch, heads, head_dim, length_q, length_k


def score_positions(level, rng, length_q, length_k):
    """(positions_q, positions_k) for a level of SCORE_POSITIONS: None where left out, else positions from a start
    in 1..2000, as int64 or int32, or for "float positions given" fractional, as float32 or float64."""

    def positions(length, fractional):
        start = rng.randint(1, 2000)
        if fractional:
            return ((start + torch.arange(length, dtype=torch.float64) / rng.choice([2, 4, 8]))
                    .to(rng.choice([torch.float32, torch.float64])))
        return (start + torch.arange(length)).to(rng.choice([torch.int64, torch.int32]))

    fractional = level == "float positions given"
    both = ("positions given", "float positions given")
    positions_q = positions(length_q, fractional) if level in ("positions_q given",) + both else None
    positions_k = positions(length_k, fractional) if level in ("positions_k given",) + both else None
    return positions_q, positions_k


def _forbidden(contract):
    return {frozenset((first, second)) for first, second, _ in contract.excluded}


def required_pairs(contract):
    """Every pair of levels of two factors that some case must hold: ``{frozenset({(name, level), ...})}``."""
    forbidden = _forbidden(contract)
    pairs = set()
    for one, two in itertools.combinations(contract.factors, 2):
        for a, b in itertools.product(one.levels, two.levels):
            pair = frozenset(((one.name, a), (two.name, b)))
            if pair not in forbidden:
                pairs.add(pair)
    return pairs


def pairs_of(row):
    """The pairs of levels one case holds (``row``: {factor: level})."""
    return {frozenset(pair) for pair in itertools.combinations(row.items(), 2)}


def design(contract, rng):
    """Rows ({factor: level}) that cover every required pair and every level, none holding an excluded pair.

    Raises ValueError where the exclusions leave some level or pair impossible to place.
    """
    forbidden = _forbidden(contract)
    factors = contract.factors
    uncovered = required_pairs(contract)
    unseen = {(factor.name, level) for factor in factors for level in factor.levels}
    banned = _partners(forbidden)
    rows = []
    while uncovered or unseen:
        best, best_gain = None, -1
        # What is left, in a fixed order, sorted once for all the candidates of this row (the draws are the same),
        # and each level's partners in a pair still to cover.
        left = sorted(uncovered, key=sorted) if uncovered else sorted(unseen)
        wanted = _partners(uncovered)
        for _ in range(CANDIDATES):
            row = _candidate(factors, wanted, unseen, banned, rng, left)
            if row is None:
                continue
            gain = len(pairs_of(row) & uncovered) * 1000 + len(set(row.items()) & unseen)
            if gain > best_gain:
                best, best_gain = row, gain
        if best is None or best_gain <= 0:
            left = sorted(map(sorted, uncovered)) or sorted(unseen)
            raise ValueError(f"contract of {contract.function}: no call can hold {left[0]} given its exclusions")
        rows.append(best)
        uncovered -= pairs_of(best)
        unseen -= set(best.items())
    return rows


def _partners(pairs):
    """{(name, level): the set of (name, level) it makes one of ``pairs`` with}."""
    found = {}
    for pair in pairs:
        if len(pair) == 2:
            one, two = pair
            found.setdefault(one, set()).add(two)
            found.setdefault(two, set()).add(one)
    return found


def _candidate(factors, wanted, unseen, banned, rng, left):
    """One row: seeded with a pair (or a level) still to cover (``left``: the uncovered pairs sorted, else the
    unseen levels), the other factors filled greedily: by the pairs each level would cover (``wanted``: each
    level's partners in an uncovered pair), never with a level that makes an excluded pair (``banned``: the same
    for the excluded pairs)."""
    row = {}
    if wanted:
        for name, level in sorted(rng.choice(left)):
            row[name] = level
    elif unseen:
        name, level = rng.choice(left)
        row[name] = level
    rest = [factor for factor in factors if factor.name not in row]
    rng.shuffle(rest)
    for factor in rest:
        scored = []
        for level in factor.levels:
            item = (factor.name, level)
            # The row so far holds no excluded pair (its seed is a required pair, each level added was checked):
            # only the pairs the new level makes can be excluded.
            if item in banned and not banned[item].isdisjoint(row.items()):
                continue
            partners = wanted.get(item)
            gain = sum(other in partners for other in row.items()) if partners else 0
            scored.append((gain + (item in unseen) * 0.5, rng.random(), level))
        if not scored:
            return None
        row[factor.name] = max(scored)[2]
    return {factor.name: row[factor.name] for factor in factors}


def uncovered_pairs(contract, rows):
    """The required pairs no row holds, and the levels no row has: what a design misses."""
    held = set().union(*map(pairs_of, rows)) if rows else set()
    seen = {item for row in rows for item in row.items()}
    levels = {(factor.name, level) for factor in contract.factors for level in factor.levels}
    return sorted(map(sorted, required_pairs(contract) - held)), sorted(levels - seen)


def confounded(rows, names=None):
    """Where a level appears only together with one level of another factor: ``[(name, level, other, its level)]``.

    ``rows``: the features of the cases ({name: level}); only factors every row names are read (``names``, or
    all such). A factor that never varies confounds nothing: it tells nothing apart.
    """
    if not rows:
        return []
    if names is None:
        names = [name for name in rows[0] if all(name in row for row in rows)]
    varying = [name for name in names if len({_key(row[name]) for row in rows}) > 1]
    found = []
    for name in varying:
        for level in dict.fromkeys(_key(row[name]) for row in rows):
            with_it = [row for row in rows if _key(row[name]) == level]
            for other in varying:
                if other == name:
                    continue
                together = {_key(row[other]) for row in with_it}
                if len(together) == 1:
                    found.append((name, level, other, next(iter(together))))
    return found


def _key(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


# The designs contract_cases uses, by contract, within a ``same_designs`` block: None outside one.
_DESIGNS = contextvars.ContextVar("contract designs", default=None)


@contextlib.contextmanager
def same_designs(store):
    """Within the block, ``contract_cases`` takes each contract's design from ``store`` ({contract: rows}) where it
    holds one, and otherwise draws it as it would outside and puts it there: the cases built in blocks with one
    store, at any seeds, hold the same rows. ``store`` is filled by the first build in it."""
    token = _DESIGNS.set(store)
    try:
        yield store
    finally:
        _DESIGNS.reset(token)


def contract_cases(contract, rng, generator):
    """The task's scored cases drawn from its contract: one per row of the design, made by ``contract.make``.

    The design is drawn from ``rng``, or inside a ``same_designs`` block taken from its store where it holds the
    contract's; either way one draw of ``rng`` is taken for it, so the draws after it do not depend on where it
    came from.
    Each case's features must hold its row's levels (checked: a ``make`` that forgets one would hide it from
    the diagnosis, and from the check that no level is confounded).
    """
    seed = rng.random()
    store = _DESIGNS.get()
    rows = store.get(contract) if store is not None else None
    if rows is None:
        rows = tuple(design(contract, random.Random(seed)))
        if store is not None:
            store[contract] = rows
    cases = []
    for row in rows:
        case = contract.make(dict(row), rng, generator)
        wrong = {name: level for name, level in row.items() if case.features.get(name) != level}
        if wrong:
            raise ValueError(f"contract of {contract.function}: the case made for {row} says {case.features}")
        cases.append(case)
    return cases
