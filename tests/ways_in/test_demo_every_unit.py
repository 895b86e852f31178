"""`python -m autograder demo --unit UNIT` for every unit: its sample class is written as students' files would read,
so the reference scores full marks and each sample mistake loses points in its own task only. (The third unit's
demo once graded its reference 0: the file still imported the second unit's reference, which a submission may
not; the code a unit borrows is written in, as in a student's file.)"""

import pytest

from autograder.core import units
from autograder.core.grade import Grader
from autograder.ways_in.demo import mistakes_of, write_class

UNITS = [unit for unit in units.all_units() if mistakes_of(unit)]


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_the_demo_class_of_every_unit_grades_the_reference_full_and_each_mistake_in_its_task(unit, tmp_path):
    paths = write_class(tmp_path / unit.name, unit)
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        results = {result.name: result for result in grader.grade_many(paths, jobs=2)}
    finally:
        grader.close()
    assert results["reference"].score == unit.rubric.MAX_SCORE, results["reference"].tests
    assert results["blank_stubs"].score == 0
    for mistake in mistakes_of(unit):
        result = results[mistake.name]
        lost = {test.task for test in result.tests if test.score < test.max_score} - {"timing"}
        assert lost == {mistake.task}, (mistake.name, lost)
