"""One mistake, one charge, at every seed: a declared mistake costs the same points, test for test, whichever seed
the hidden cases come from.

With a course secret each student's hidden cases come from a seed of their own (autograder/core/seeds.py): the
same designs at every seed (contracts.same_designs), values of each seed's own. Two students who make the same
mistake must lose the same points in the same tests. Two ways broke that before this file:

* a setting drawn by the seed for a row of a contract made a slip of the settings show in another test at some
  seeds: T5's OTHER_SETTINGS, an integer division in the test of a direction (7 or 5 points) where the shared seed
  charges it in t5_bucket_settings (2 points); YaRN's base of 500, high clamped at dh/2 - 1 in
  yarn_inverse_frequencies_values (12 points) where the shared seed charges it in the options (4 points);
* a behaviour case (calls one after another, in an order the seed draws) read a declared mistake's output as a
  cache's stale answer where the two coincide, and charged it a second time, in the behaviour's test, at the seeds
  whose order put the coinciding call first: T5's buckets not halved at num_buckets=16 are the halved ones of
  num_buckets=32; a scale ignored gives the call without it. The case now names both, and the declared mistake,
  already charged by the task's value cases, is not charged again (a cache that gives the same output, where the
  value cases pass, still is: tests/core/test_behaviour_contracts.py).

The mistakes are every declared mistake (a ``Mistake`` of a task's cases module) that the shared seed's cases of a
function name, made by a submission that gives that mistake's output wherever it is declared
(tests/helpers/declared_mistakes.py). Each case below is graded at the shared seed and at the seed that showed
it, and every declared mistake at seeds drawn by hypothesis (derandomized: the same draws in every run); the timing
tier's points are given (``timing_mode="give"``): its rule is the same at every seed, and its speed has tests of its
own.

A third way showed in that search: a declared mistake whose output changed after its first call (YaRN's slips,
tests/core/test_declared_mistakes_are_pure.py). The bounds not rounded outwards then cost one thing in the first
grading of a process and another in the next, at any seed, the shared one included.
"""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import units
from autograder.core.cases import build_cases
from autograder.core.grade import Grader
from declared_mistakes import submission
from test_declared_mistakes_are_pure import impure

UNITS = [unit.name for unit in units.all_units()]


def declared(unit_name):
    """[(function, words)] of the declared mistakes that the shared seed's cases of a plain function name."""
    unit = units.get(unit_name)
    found = {}
    for case in (case for cases in build_cases(unit, unit.rubric.SEED).values() for case in cases):
        name = case.probe.get("name")
        if case.probe.get("op") == "sequence" or name not in unit.rubric.TASK_OF_FUNCTION or name[:1].isupper():
            continue
        for mistake in getattr(case.check, "mistakes", ()):
            found.setdefault((name, mistake.explain), None)
    return list(found)


DECLARED = [(unit_name, name, words) for unit_name in UNITS for name, words in declared(unit_name)]


@pytest.fixture(scope="module")
def charged(tmp_path_factory):
    """charged(unit_name, function, words, seed) -> {test id: points}, each submission written once and its grading
    at the shared seed kept. Unsandboxed: the submission imports the repository's helper, which no job may read."""
    graders, paths, shared = {}, {}, {}
    folder = tmp_path_factory.mktemp("declared")

    def charge(unit_name, name, words, seed):
        unit = units.get(unit_name)
        if unit_name not in graders:
            graders[unit_name] = Grader(unit, sandbox="off", timing_mode="give")
        key = (unit_name, name, words)
        if key not in paths:
            paths[key] = folder / f"{unit_name}_{len(paths)}.py"
            paths[key].write_text(submission(unit, name, words), encoding="utf-8")
        if seed == unit.rubric.SEED and key in shared:
            return shared[key]
        result = graders[unit_name].grade(paths[key], seed=seed)
        assert not result.grader_fault, [test.output for test in result.tests]
        points = {test.id: test.score for test in result.tests}
        if seed == unit.rubric.SEED:
            shared[key] = points
        return points

    yield charge
    for grader in graders.values():
        grader.close()


def _differences(charged, unit_name, name, words, seed):
    shared = charged(unit_name, name, words, units.get(unit_name).rubric.SEED)
    own = charged(unit_name, name, words, seed)
    return {test: (shared[test], own.get(test)) for test in shared if own.get(test) != shared[test]}


def test_every_unit_declares_mistakes_of_its_functions():
    assert {unit_name for unit_name, _, _ in DECLARED} == set(UNITS)
    assert len(DECLARED) >= 20 * len(UNITS)


# Seeds at which the ways above showed, before their fixes.
@pytest.mark.parametrize("unit_name, name, begins, seed", [
    ("positional_encodings", "t5_relative_position_bucket", "max_distance / max_exact is divided as integers", 1),
    ("positional_encodings", "t5_relative_position_bucket", "the buckets are not halved", 3),
    ("positional_encodings", "biased_scores", "the scale argument is ignored", 1),
    ("long_context", "yarn_inverse_frequencies", "high is clamped at dh/2 - 1", 1),
    ("long_context", "yarn_inverse_frequencies", "the bounds are not rounded outwards", 113934),
])
def test_a_mistake_once_charged_by_seed_costs_the_shared_seed_s_points(charged, unit_name, name, begins, seed):
    words = next(words for unit, function, words in DECLARED
                 if (unit, function) == (unit_name, name) and words.startswith(begins))
    assert _differences(charged, unit_name, name, words, seed) == {}, (words, seed)


@pytest.mark.parametrize("unit_name, name, begins", [
    ("long_context", "yarn_inverse_frequencies", "the bounds are not rounded outwards"),
])
def test_the_same_file_graded_twice_at_the_same_seed_loses_the_same_points(tmp_path, unit_name, name, begins):
    """In one grader, whose seed's cases are built once and kept: the second grading is the first one's."""
    unit = units.get(unit_name)
    words = next(words for unit, function, words in DECLARED
                 if (unit, function) == (unit_name, name) and words.startswith(begins))
    path = tmp_path / f"{unit_name}.py"
    path.write_text(submission(unit, name, words), encoding="utf-8")
    grader = Grader(unit, sandbox="off", timing_mode="give")
    try:
        first, again = ({test.id: test.score for test in grader.grade(path).tests} for _ in range(2))
    finally:
        grader.close()
    assert {test: (first[test], again[test]) for test in first if first[test] != again[test]} == {}
    assert sum(first.values()) < unit.rubric.MAX_SCORE  # the mistake is charged


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(mistake=st.sampled_from(DECLARED), seed=st.integers(0, 2**32 - 1))
def test_a_declared_mistake_costs_the_same_points_at_any_seed(charged, mistake, seed):
    """{test: (points at the shared seed, points at this seed)} where they differ: none."""
    assert _differences(charged, *mistake, seed) == {}, (mistake, seed)


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_every_declared_mistake_gives_the_same_output_each_time_it_is_asked_at_a_student_s_own_seed(seed):
    """tests/core/test_declared_mistakes_are_pure.py's invariant, at seeds of students' own."""
    assert {unit_name: impure(unit_name, seed)[1] for unit_name in UNITS} == {unit_name: [] for unit_name in UNITS}
