"""Every correct formulation scores full marks: each file in submissions/alternatives/ replaces one task's code."""

from pathlib import Path

import pytest

from autograder import rubric
from conftest import task_scores

ALTERNATIVES = sorted((Path(__file__).parent / "submissions" / "alternatives").glob("*.py"))


@pytest.fixture(scope="module")
def alternative_results(grader, tmp_path_factory, reference_text):
    folder = tmp_path_factory.mktemp("alternatives")
    paths = []
    for alternative in ALTERNATIVES:
        path = folder / alternative.name
        # The alternative's definitions come after the reference's, so they replace them.
        path.write_text(reference_text + "\n\n" + alternative.read_text(encoding="utf-8"))
        paths.append(path)
    return {result.name: result for result in grader.grade_many(paths, jobs=2)}


def test_there_is_an_alternative_for_every_task():
    assert {path.name.split("__")[0] for path in ALTERNATIVES} == set(rubric.TASK_NAMES)


@pytest.mark.parametrize("path", ALTERNATIVES, ids=[path.stem for path in ALTERNATIVES])
def test_alternative_formulation_scores_full_marks(alternative_results, path):
    result = alternative_results[path.stem]
    assert result.score == 100, "\n".join(t.output for t in result.tests if not t.passed)


def test_a_shaw_scores_that_builds_its_own_index_is_graded_against_the_reference(alternative_results):
    # materialised_einsum never calls clipped_relative_positions, so the grader's stand-in does not reach it.
    assert task_scores(alternative_results["shaw__materialised_einsum"])["shaw"] == 20
