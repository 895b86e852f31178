"""One mistake, one charge (DESIGN.md, invariant 10), the timing tier included: every known mistake of every unit
costs what the rubric says, and nothing more.

The known mistakes: each unit's sample class (``samples.py``, applied to the reference) and its blind set
(``tests/submissions/blind/<unit>/mistakes/<task>__<name>.py``, appended after the reference). The expected loss
is derived from the rubric alone:

* the correctness tests it loses are all of the mistake's own task;
* the timing tests it loses are exactly those of the paths whose ``requires`` hold that task, when the mistake
  fails one of the task's value tests (the tests without ``needs``: a missing ValueError says nothing of the
  timed call). That is the rubric's rule: a path is timed only when it computes the right thing, and its points
  are lost once, in the timing row, which says so. A helper's task (``helpers``) costs nothing there: the path
  is timed with the grader's stand-in;
* the total loss is the sum of those tests' points.

The timing tier runs with ``timing_mode="give"`` on a machine without a GPU: a path that is timed gets its points
without being measured (its speed has tests of its own), so only the rule is seen here.
"""

from pathlib import Path

import pytest

from autograder.core import units
from autograder.core.grade import Grader
from autograder.course.build import strip_markers
from autograder.ways_in.demo import apply, mistakes_of

UNITS = ("positional_encodings", "rotary_alibi")
BLIND = Path(__file__).parents[1] / "submissions" / "blind"


def known_mistakes(unit_name):
    """[(name, task, text)] of the unit's known mistakes: its sample class, then its blind set."""
    unit = units.get(unit_name)
    reference = strip_markers(unit.reference_path.read_text(encoding="utf-8"))
    found = [(f"sample_{mistake.name}", mistake.task, apply(mistake, reference)) for mistake in mistakes_of(unit)]
    for path in sorted((BLIND / unit_name / "mistakes").glob("*.py")):
        found.append((path.stem, path.stem.split("__")[0], reference + "\n\n" + path.read_text(encoding="utf-8")))
    return found


MISTAKES = [(unit_name, name, task) for unit_name in UNITS for name, task, _ in known_mistakes(unit_name)]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    results = {}
    for unit_name in UNITS:
        folder = tmp_path_factory.mktemp(unit_name)
        paths = []
        for name, _, text in known_mistakes(unit_name):
            path = folder / f"{name}.py"
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        grader = Grader(unit_name, sandbox="auto", timing_mode="give")
        try:
            for path, result in zip(paths, grader.grade_many(paths, jobs=2)):
                results[(unit_name, path.stem)] = result
        finally:
            grader.close()
    return results


def expected_timing(rubric, task, lost):
    """The timing tests the rubric's rule withholds for a mistake in ``task`` that lost the tests ``lost``."""
    value_tests = {test.id for test in rubric.TESTS if test.task == task and not test.needs}
    if not value_tests & lost:
        return set()
    return {path.test for path in rubric.TIMED_PATHS if task in path.requires}


def test_every_unit_has_known_mistakes_of_every_task():
    for unit_name in UNITS:
        tasks = {task for name, task, _ in known_mistakes(unit_name)}
        assert tasks == set(units.get(unit_name).rubric.TASK_NAMES), unit_name


def test_a_timed_path_requires_tasks_and_a_helper_is_not_required():
    for unit_name in UNITS:
        rubric = units.get(unit_name).rubric
        for path in rubric.TIMED_PATHS:
            assert path.requires and set(path.requires) <= set(rubric.TASK_NAMES), path.name
            assert not {helper for helper, _, _ in path.helpers} & set(path.requires), path.name


@pytest.mark.parametrize("unit_name, name, task", MISTAKES, ids=[f"{u}:{n}" for u, n, _ in MISTAKES])
def test_a_known_mistake_costs_what_the_rubric_says_and_nothing_more(graded, unit_name, name, task):
    rubric = units.get(unit_name).rubric
    result = graded[(unit_name, name)]
    lost = {test.id for test in result.tests if test.score < test.max_score}
    correctness = {test_id for test_id in lost if rubric.TEST_BY_ID[test_id].task != rubric.TIMING.name}
    timing = lost - correctness
    assert correctness, "the mistake went unseen"
    assert {rubric.TEST_BY_ID[test_id].task for test_id in correctness} == {task}, sorted(correctness)
    assert timing == expected_timing(rubric, task, correctness), {
        test.id: test.output for test in result.tests if test.id in timing}
    charged = correctness | timing
    assert result.max_score - result.score == sum(rubric.TEST_BY_ID[test_id].points for test_id in charged)
    for test in result.tests:
        if test.id in timing:  # the row says the loss in plain words, with its figure
            assert "you lose them once, here" in test.output and f"({test.max_score:g} points)" in test.output, \
                test.output
