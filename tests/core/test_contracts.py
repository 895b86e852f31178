"""Contracts as data (issue 24, item 1): each task's hidden cases cover its whole contract as a covering design.

* The generator (autograder/core/contracts.py), on factors hypothesis draws: every level and every pair of
  levels of two factors is in some row, no row holds an excluded pair, and no level comes only with one level
  of another factor (no confounding), or it says why it cannot.
* Every task that declares a contract, in every unit (a unit added later included): its design covers every pair
  and confounds nothing, its built cases hold one case per row with the row's levels as features, and its cases
  together confound no level of its factors. A declaration that confounds a pair is caught (checked here on a
  doctored copy of a real one).
* Mistakes that only the contract's corners show (a scale of 0.0 taken for "not given", a keyword argument the
  function does not accept, half precision returned as float32): each passed every case before the contract's
  cases existed, and now loses exactly the test those cases count in, with the condition named.
"""

import dataclasses
import random

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import contracts, units
from autograder.core.cases import build_cases, shared_designs
from autograder.core.contracts import Contract, Factor, confounded, design, uncovered_pairs
from conftest import UNIT, by_test


def _declared():
    found = []
    for unit in units.all_units():
        for task in unit.rubric.TASK_NAMES:
            contract = getattr(unit.cases_module(task), "CONTRACT", None)
            if contract is not None:
                found.append((unit, task, contract))
    return found


DECLARED = _declared()


# -- the generator, on drawn factors

@st.composite
def factor_sets(draw, with_exclusions=False):
    count = draw(st.integers(1, 6))
    factors = tuple(Factor(f"f{number}", tuple(f"f{number}={level}" for level in range(draw(st.integers(1, 4)))))
                    for number in range(count))
    excluded = ()
    if with_exclusions and count >= 2:
        pairs = [((one.name, a), (two.name, b)) for i, one in enumerate(factors) for two in factors[i + 1:]
                 for a in one.levels for b in two.levels]
        chosen = draw(st.lists(st.sampled_from(pairs), max_size=4, unique=True))
        excluded = tuple((first, second, "drawn") for first, second in chosen)
    return Contract("drawn", factors, make=None, excluded=excluded)


@settings(max_examples=150, deadline=None)
@given(contract=factor_sets(), seed=st.integers(0, 2**32))
def test_a_design_covers_every_pair_and_confounds_nothing(contract, seed):
    rows = design(contract, random.Random(seed))
    assert uncovered_pairs(contract, rows) == ([], [])
    assert confounded(rows) == []
    assert all(set(row) == {factor.name for factor in contract.factors} for row in rows)
    # no more rows than one per pair of the two largest factors' levels, give or take the greedy's slack
    sizes = sorted((len(factor.levels) for factor in contract.factors), reverse=True) + [1]
    assert len(rows) <= 2 * sizes[0] * sizes[1] + 2


@settings(max_examples=150, deadline=None)
@given(contract=factor_sets(with_exclusions=True), seed=st.integers(0, 2**32))
def test_a_design_with_exclusions_holds_none_of_them_or_says_what_cannot_be_placed(contract, seed):
    try:
        rows = design(contract, random.Random(seed))
    except ValueError as error:
        assert "no call can hold" in str(error)
        return
    forbidden = {frozenset((first, second)) for first, second, _ in contract.excluded}
    assert not any(pair in forbidden for row in rows for pair in contracts.pairs_of(row))
    assert uncovered_pairs(contract, rows) == ([], [])


def test_confounding_is_found_where_a_level_comes_only_with_one_other():
    rows = [{"dtype": "float16", "lengths": "Lq == Lk"}, {"dtype": "float32", "lengths": "Lq == Lk"},
            {"dtype": "float32", "lengths": "Lq > Lk"}]
    assert ("dtype", "float16", "lengths", "Lq == Lk") in confounded(rows)
    assert ("lengths", "Lq > Lk", "dtype", "float32") in confounded(rows)
    rows.append({"dtype": "float16", "lengths": "Lq > Lk"})
    assert confounded(rows) == []


def test_a_declaration_must_say_why_a_pair_is_excluded_and_name_real_levels():
    factors = (Factor("a", ("a1", "a2")), Factor("b", ("b1", "b2")))
    with pytest.raises(ValueError, match="say why"):
        Contract("f", factors, make=None, excluded=((("a", "a1"), ("b", "b1"), ""),))
    with pytest.raises(ValueError, match="which no factor has"):
        Contract("f", factors, make=None, excluded=((("a", "a3"), ("b", "b1"), "no such level"),))


# -- every declared contract

def test_every_task_of_every_unit_declares_its_contract():
    """A unit added later included: a task without a CONTRACT would be graded on hand-picked inputs only."""
    every = {(unit.name, task) for unit in units.all_units() for task in unit.rubric.TASK_NAMES}
    assert every - {(unit.name, task) for unit, task, _ in DECLARED} == set()
    assert {unit.name for unit in units.all_units()} >= {"positional_encodings", "rotary_alibi"}


@pytest.mark.parametrize("unit, task, contract", DECLARED, ids=[f"{u.name}.{t}" for u, t, _ in DECLARED])
def test_each_contract_s_cases_cover_every_pair_of_levels_and_confound_none(unit, task, contract):
    rows = shared_designs(unit)[contract]  # the rows of every seed's cases
    assert uncovered_pairs(contract, rows) == ([], [])
    assert confounded(rows) == []
    names = [factor.name for factor in contract.factors]
    cases = [case for case in build_cases(unit)[task] if case.scored]
    levels = {factor.name: set(factor.levels) for factor in contract.factors}
    # The cases inside the contract (a hand-written case may add a level of its own, such as settings left out).
    featured = [{name: case.features[name] for name in names} for case in cases
                if all(case.features.get(name) in levels[name] for name in names)]
    for factor in contract.factors:  # every level is sent
        assert {row[factor.name] for row in featured} == set(factor.levels), factor.name
    assert confounded(featured, names) == [], "a level of the contract comes only with one level of another"


@settings(max_examples=4, deadline=None)
@given(seeds=st.lists(st.integers(0, 2**31), min_size=2, max_size=2, unique=True))
def test_every_seed_sends_the_same_corners_with_its_own_values(seeds):
    """A course secret's seeds: each student's contract cases hold the same combinations of levels (no student
    gets a harder set of corners), with values of the seed's own."""
    for unit in units.all_units():
        one, two = (build_cases(unit, seed) for seed in seeds)
        for task, contract in ((task, contract) for u, task, contract in DECLARED if u.name == unit.name):
            names = [factor.name for factor in contract.factors]
            rows = [dict(row) for row in shared_designs(unit)[contract]]

            def corners(cases):
                return [{name: case.features.get(name) for name in names} for case in cases
                        if case.scored and all(name in case.features for name in names)]
            for cases in (one[task], two[task]):
                assert all(row in corners(cases) for row in rows), (unit.name, task)
        assert [repr(case.probe) for task in one for case in one[task]] != \
            [repr(case.probe) for task in two for case in two[task]], unit.name


@pytest.mark.parametrize("unit, task, contract", DECLARED, ids=[f"{u.name}.{t}" for u, t, _ in DECLARED])
def test_a_declaration_that_confounds_a_pair_is_caught(unit, task, contract):
    """Doctored: the first factor's last level is allowed only with the second factor's first level. The design
    then covers every allowed pair, yet that level always comes with that one: the check must say so."""
    first, second = contract.factors[0], contract.factors[1]
    excluded = tuple(((first.name, first.levels[-1]), (second.name, level), "doctored")
                     for level in second.levels[1:])
    doctored = dataclasses.replace(contract, excluded=contract.excluded + excluded)
    rows = design(doctored, random.Random(1))
    assert uncovered_pairs(doctored, rows) == ([], [])
    assert (first.name, first.levels[-1], second.name, second.levels[0]) in confounded(rows)


# -- mistakes only the contract's corners show (each passed every case before the contract's cases)

FIRST_UNIT_CORNERS = {
    # 0.0 taken for "not given": the default scale used instead.
    ("shaw", "scale 0.0"): ("import math as _math\n_shaw = shaw_scores\n\n\n"
                  "def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):\n"
                  "    return _shaw(q, k, rel_k, max_relative_position, scale=scale or 1 / _math.sqrt(q.shape[-1]))\n"),
    # The signature's parameter renamed: a call that names it fails.
    ("shaw", "max_relative_position by keyword"): ("_shaw = shaw_scores\n\n\n"
                                         "def shaw_scores(q, k, rel_k, m, *, scale=None):\n"
                                         "    return _shaw(q, k, rel_k, m, scale=scale)\n"),
    # Half precision computed, and returned, in float32.
    ("shaw", "dtype float16"): ("import torch as _torch\n_shaw = shaw_scores\n\n\n"
                      "def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):\n"
                      "    if q.dtype in (_torch.float16, _torch.bfloat16):\n"
                      "        q, k, rel_k = q.float(), k.float(), rel_k.float()\n"
                      "    return _shaw(q, k, rel_k, max_relative_position, scale=scale)\n"),
    # The signature's base renamed: a call that names base= fails.
    ("sinusoidal", "base by keyword"): (
        "import torch as _torch\n_table = sinusoidal_table\n\n\n"
        "def sinusoidal_table(num_positions, d_model, theta=10000.0, *, device=None, dtype=_torch.float32):\n"
        "    return _table(num_positions, d_model, theta, device=device, dtype=dtype)\n"),
    # The signature's max_relative_position renamed: a call that names it fails.
    ("relative_positions", "max_relative_position by keyword"): (
        "_relative = clipped_relative_positions\n\n\n"
        "def clipped_relative_positions(length_q, length_k, k, *, device=None):\n"
        "    return _relative(length_q, length_k, k, device=device)\n"),
    # The settings made keyword-only: a call that passes them by position fails.
    ("t5_bucket", "settings by position"): (
        "_buckets = t5_relative_position_bucket\n\n\n"
        "def t5_relative_position_bucket(relative_position, *, bidirectional=True, num_buckets=32, max_distance=128):\n"
        "    return _buckets(relative_position, bidirectional, num_buckets, max_distance)\n"),
    # float64 word vectors narrowed to the weight's float32: the output is float32.
    ("learned", "dtype float64"): (
        "_Learned = LearnedPositionalEmbedding\n\n\nclass LearnedPositionalEmbedding(_Learned):\n"
        "    def forward(self, x):\n        return super().forward(x.to(self.weight.dtype))\n"),
    # The signature's q and k renamed: a call that names q=, k=, bias= fails.
    ("biased_scores", "arguments by keyword"): (
        "_biased = biased_scores\n\n\ndef biased_scores(query, key, bias, *, scale=None):\n"
        "    return _biased(query, key, bias, scale=scale)\n"),
    # Half precision computed, and returned, in float32.
    ("biased_scores", "dtype float16"): (
        "import torch as _torch\n_biased = biased_scores\n\n\ndef biased_scores(q, k, bias, *, scale=None):\n"
        "    if q.dtype in (_torch.float16, _torch.bfloat16):\n        q, k, bias = q.float(), k.float(), bias.float()\n"
        "    return _biased(q, k, bias, scale=scale)\n"),
    # A half-precision table widened to float32: the bias comes back in float32.
    ("t5_bias", "dtype float16"): (
        "import torch as _torch\n_t5 = t5_bias\n\n\n"
        "def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):\n"
        "    if bias_table.dtype in (_torch.float16, _torch.bfloat16):\n        bias_table = bias_table.float()\n"
        "    return _t5(length_q, length_k, bias_table, bidirectional=bidirectional, num_buckets=num_buckets,\n"
        "               max_distance=max_distance)\n"),
}
# The test (or, where the contract's cases go to more than one, the tests) a task's contract cases count in.
CONTRACT_TESTS = {"shaw": "shaw_edge_cases", "sinusoidal": "sinusoidal_edge_cases",
                  "relative_positions": "relative_positions_edge_cases",
                  "t5_bucket": ("t5_bucket_bidirectional", "t5_bucket_causal"),
                  "learned": ("learned_add", "learned_concat"), "biased_scores": "biased_scores_values",
                  "t5_bias": "t5_bias_layout",
                  "scaled_positions": "scaled_positions_values", "rotary_angles": "rotary_angles_edge_cases",
                  "apply_rotary": "apply_rotary_positions",
                  "rope_scores": "rope_scores_positions",
                  "alibi_slopes": "alibi_slopes_other_counts", "alibi_bias": "alibi_bias_layout"}


def _contract_tests(task):
    tests = CONTRACT_TESTS[task]
    return (tests,) if isinstance(tests, str) else tests


def _expected_loss(unit, task):
    """What the rubric says a mistake in the contract's corners costs: the test the contract's cases count in, the
    tests that need it (invalid arguments need working values), and the timing of every path the task is part of."""
    tests = _contract_tests(task)
    needing = {other.id for other in unit.rubric.TESTS if getattr(other, "needs", None) in tests}
    return set(tests) | needing | {path.test for path in unit.rubric.TIMED_PATHS if task in path.requires}


@pytest.mark.parametrize("task, level", sorted(FIRST_UNIT_CORNERS))
def test_a_mistake_only_a_corner_of_the_contract_shows_costs_its_test(grader, tmp_path, reference_text, task, level):
    path = tmp_path / "corner.py"
    path.write_text(reference_text + "\n\n" + FIRST_UNIT_CORNERS[task, level])
    tests = by_test(grader.grade(path))
    lost = {test_id for test_id, test in tests.items() if test.score < test.max_score}
    assert lost == _expected_loss(UNIT, task), {test_id: tests[test_id].output for test_id in lost}
    if level != "dtype float16":  # a dtype is told by the dtype message (float32 against float16, bfloat16)
        said = [tests[test].output for test in _contract_tests(task)]
        assert any(level in output for output in said), said


ROTARY_CORNERS = {
    # A whole-number factor refused: the contract asks for a positive number, and 4 is one.
    ("scaled_positions", "an integer factor"): (
        "_scaled = scaled_positions\n\n\ndef scaled_positions(positions, *, factor):\n"
        "    if not isinstance(factor, float):\n        raise ValueError('factor must be a float')\n"
        "    return _scaled(positions, factor=factor)\n"),
    # The signature's base renamed: a call that names base= fails.
    ("rotary_angles", "base by keyword"): (
        "import torch as _torch\n_angles = rotary_angles\n\n\n"
        "def rotary_angles(positions, head_dim, theta=10000.0, *, dtype=_torch.float32):\n"
        "    return _angles(positions, head_dim, theta, dtype=dtype)\n"),
    # The signature's base renamed: a call that names base= fails.
    ("apply_rotary", "base by keyword"): (
        "_apply = apply_rotary\n\n\ndef apply_rotary(x, positions, theta=10000.0, *, interleaved=True):\n"
        "    return _apply(x, positions, theta, interleaved=interleaved)\n"),
    # Float positions refused (the docstring allows them: scaled_positions makes them).
    ("apply_rotary", "float positions"): (
        "_apply = apply_rotary\n\n\ndef apply_rotary(x, positions, base=10000.0, *, interleaved=True):\n"
        "    if positions.is_floating_point():\n        raise TypeError('positions must be integers')\n"
        "    return _apply(x, positions, base, interleaved=interleaved)\n"),
    # 0.0 taken for "not given": the default scale used instead.
    ("rope_scores", "scale 0.0"): (
        "import math as _math\n_rope = rope_scores\n\n\n"
        "def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):\n"
        "    return _rope(q, k, base=base, scale=scale or 1 / _math.sqrt(q.shape[-1]), positions_q=positions_q,\n"
        "                 positions_k=positions_k, interleaved=interleaved)\n"),
    # The base never reaches the rotation.
    ("rope_scores", "base passed"): (
        "_rope = rope_scores\n\n\n"
        "def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):\n"
        "    return _rope(q, k, scale=scale, positions_q=positions_q, positions_k=positions_k,\n"
        "                 interleaved=interleaved)\n"),
    # The signature's num_heads renamed: a call that names num_heads= fails.
    ("alibi_slopes", "num_heads by keyword"): (
        "_slopes = alibi_slopes\n\n\ndef alibi_slopes(n, *, device=None):\n    return _slopes(n, device=device)\n"),
    # The signature's parameters renamed: a call that names length_q=, length_k=, slopes= fails.
    ("alibi_bias", "arguments by keyword"): (
        "_bias = alibi_bias\n\n\ndef alibi_bias(lq, lk, slopes, *, causal=True):\n"
        "    return _bias(lq, lk, slopes, causal=causal)\n"),
    # bfloat16 slopes widened to float32, and the bias returned in float32.
    ("alibi_bias", "dtype bfloat16"): (
        "import torch as _torch\n_bias = alibi_bias\n\n\ndef alibi_bias(length_q, length_k, slopes, *, causal=True):\n"
        "    if slopes.dtype == _torch.bfloat16:\n        slopes = slopes.float()\n"
        "    return _bias(length_q, length_k, slopes, causal=causal)\n"),
}


@pytest.fixture(scope="module")
def rotary_grader():
    from autograder.core.grade import Grader

    grader = Grader(units.get("rotary_alibi"), sandbox="auto")
    yield grader
    grader.close()


@pytest.mark.parametrize("task, level", sorted(ROTARY_CORNERS))
def test_a_mistake_only_a_corner_of_the_second_unit_s_contract_shows_costs_its_test(rotary_grader, tmp_path, task,
                                                                                   level):
    unit = units.get("rotary_alibi")
    path = tmp_path / "corner.py"
    path.write_text(unit.reference_path.read_text() + "\n\n" + ROTARY_CORNERS[task, level])
    tests = by_test(rotary_grader.grade(path))
    lost = {test_id for test_id, test in tests.items() if test.score < test.max_score}
    assert lost == _expected_loss(unit, task), {test_id: tests[test_id].output for test_id in lost}
    said = [tests[test].output for test in _contract_tests(task)]
    assert any(level in output for output in said), said
