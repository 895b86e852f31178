"""Which unit an nbgrader assignment grades: the one it is named after, else the one whose tests its grade cells
are. Before, an assignment the instructor renamed ("hw3") was graded as the first unit whatever its notebook held:
the second unit's notebook scored 0 against the first unit's hidden tests."""

import nbformat
import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.ways_in.nbgrader_bridge import _unit_of

UNITS = units.all_units()


def _notebook(grade_ids):
    cells = [nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {"grade": True, "grade_id": grade_id}})
             for grade_id in grade_ids]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# a lesson"), *cells])


renamed = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12).filter(
    lambda name: name not in units.names())


@settings(max_examples=60, deadline=None)
@given(data=st.data(), assignment=renamed)
def test_a_renamed_assignment_grades_the_unit_its_grade_cells_belong_to(data, assignment):
    unit = data.draw(st.sampled_from(UNITS))
    ids = data.draw(st.lists(st.sampled_from([test.id for test in unit.rubric.TESTS]), min_size=1, unique=True))
    others = data.draw(st.lists(st.sampled_from(["cell-1", "lesson-check", "answer"]), unique=True))
    chosen = _unit_of(_notebook(ids + others), {"assignment": assignment, "notebook": assignment})
    assert chosen.name == unit.name


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_an_assignment_named_after_a_unit_grades_that_unit(data):
    unit = data.draw(st.sampled_from(UNITS))
    other = data.draw(st.sampled_from(UNITS))
    ids = [test.id for test in other.rubric.TESTS][:2]
    assert _unit_of(_notebook(ids), {"assignment": unit.name}).name == unit.name


@pytest.mark.parametrize("ids", [[], ["cell-1"], [UNITS[0].rubric.TESTS[0].id, UNITS[1].rubric.TESTS[0].id]],
                         ids=["no grade cells", "no test of any unit", "tests of two units"])
def test_a_notebook_that_names_no_single_unit_is_refused_with_what_to_do(ids):
    with pytest.raises(ValueError, match="Name the assignment after its unit"):
        _unit_of(_notebook(ids), {"assignment": "hw3"})
