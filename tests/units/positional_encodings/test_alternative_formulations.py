"""Every correct formulation scores full marks: each file in submissions/alternatives/ replaces one task's code.

The one exception is the timing tier, by design: a vectorized path that builds the (Lq, Lk, dh) relative
keys is correct, and earns only part of the tier for its time.

The tier's verdict assumes the grader has the machine; the suite runs in two workers, and what the other one
runs (a notebook, a container) can take memory bandwidth from a path that needs much of it (take_along_dim with
an expanded index: 2.6-2.8x the reference alone, 5.7x once beside the other worker). A path that loses only
timing points is therefore graded twice more, and must keep them in one of the three.
"""

from pathlib import Path

import re

import pytest

from autograder.core.timing import band_verdict

from autograder.units.positional_encodings import rubric
from conftest import task_scores

ALTERNATIVES = sorted((Path(__file__).parents[2] / "submissions" / "alternatives").glob("*.py"))
MEMORY_NAIVE = {"shaw__materialised_einsum": "shaw_speed"}


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
def test_alternative_formulation_scores_full_marks(alternative_results, grader, path):
    result = alternative_results[path.stem]
    slow = MEMORY_NAIVE.get(path.stem)
    failed = {test.id: test.output for test in result.tests if not test.passed and test.id != slow}
    for _ in range(2):  # timing points lost alone: the other worker's load, or the path's (see above)
        if not failed or any(rubric.TEST_BY_ID[test].task != "timing" for test in failed):
            break
        again = grader.grade(Path(result.path))
        failed = {test.id: test.output for test in again.tests if not test.passed and test.id != slow}
    assert failed == {}
    if slow:
        timed = next(test for test in result.tests if test.id == slow)
        # Its real ratio sits near the 4x limit for full points (CI read 3.94x once): decide nothing there. It is
        # timed, keeps points, and scores the band of the ratio it printed (the bands and their noise: test_timing_tier, test_timing_noise_band).
        ratios = [float(r) for r in re.findall(r"^Time \([^)]*\): ([0-9.]+)x the reference", timed.output, re.M)]
        assert ratios and timed.score > 0, timed.output
        bands = {min(band_verdict(ratio + rounding)[0] for ratio in ratios) for rounding in (-0.005, 0.005)}
        assert timed.score in {timed.max_score * fraction for fraction in bands}, timed.output


def test_a_shaw_scores_that_builds_its_own_index_is_graded_against_the_reference(alternative_results):
    # materialised_einsum never calls clipped_relative_positions, so the grader's stand-in does not reach it.
    assert task_scores(alternative_results["shaw__materialised_einsum"])["shaw"] == rubric.task_points("shaw")
