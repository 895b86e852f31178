"""Each bundled one-mistake submission loses the points of its own task and no other, and is named in feedback.

The one exception is the timing tier: a path is timed only once its own tasks are correct, so a mistake in
one of them also costs that path's timing points (and only that path's); a mistake in a helper the path
calls does not (the path is timed with the grader's stand-in for it).
"""

import pytest

from autograder.units.positional_encodings import rubric
from autograder.course.build import strip_markers
from autograder.ways_in.demo import apply, write_class
from autograder.units.positional_encodings.samples import MISTAKES
from conftest import REFERENCE, UNIT, task_scores


@pytest.fixture(scope="module")
def sample_results(grader, tmp_path_factory):
    paths = write_class(tmp_path_factory.mktemp("class"), UNIT)
    return {result.name: result for result in grader.grade_many(paths, jobs=2)}


def test_every_sample_change_applies_to_the_reference_exactly_once():
    text = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    for mistake in MISTAKES:
        assert apply(mistake, text) != text


def test_the_sample_class_has_a_dozen_mistakes_over_every_task():
    assert len(MISTAKES) >= 12
    assert {mistake.task for mistake in MISTAKES} == set(rubric.TASK_NAMES)


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_sample_mistake_loses_only_its_own_task_and_is_named(sample_results, mistake):
    result = sample_results[mistake.name]
    scores = task_scores(result)
    tests = {test.id: test for test in result.tests}
    for path in rubric.TIMED_PATHS:
        timed = tests[path.test]
        if mistake.task in path.requires:
            assert timed.score == 0 and "Not timed" in timed.output, (mistake.name, timed.output)
        else:
            assert timed.passed, (mistake.name, timed.output)
    for task, score in scores.items():
        if task == mistake.task:
            assert score < rubric.task_points(task), f"{mistake.name} kept all of {task}"
        else:
            assert score == rubric.task_points(task), f"{mistake.name} lost points on {task}: " + "\n".join(
                t.output for t in result.tests if t.task == task and not t.passed)
    feedback = "\n".join(test.output for test in result.tests if not test.passed)
    assert mistake.says in feedback, feedback


def test_demo_class_reference_and_stubs(sample_results):
    assert sample_results["reference"].score == 100
    assert sample_results["blank_stubs"].score == 0
