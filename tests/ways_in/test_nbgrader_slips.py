"""A slip costs what its cell defines through ``nbgrader autograde`` itself (DESIGN.md, invariant 10; issue 34,
point 2): the real nbgrader, the course's config (the kernel under bubblewrap, the kit's grades out of the kernel).

One class per unit, one nbgrader run each: the finished notebook, and for every helper of the unit
(tests/helpers/slips.py) one notebook per kind of slip in its cell: the release's stub, code that does not compile, a raise
before the def, no definition. In the gradebook every grade cell but the helper's own task's scores as with the stub,
and the callers' cells score full. (A wrong function, one that compiles and is defined, reaches the grader as the
stub does, a function of the cell's that runs; the command line's tests draw many of them,
tests/core/test_a_slip_costs_its_cell.py.) Before the fix, the long_context notebook whose
ntk_inverse_frequencies cell did not compile scored 71 here, as on the command line; with the stub, 87.
"""

import json
import shutil

import pytest

import slips
from autograder.core import units
from autograder.course.notebook import COURSE, notebook_name
from autograder.course.release import release
from nbgrader_class import autograde_class, shard_courses, submit_class

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the course's kernel runs under bubblewrap")

KINDS = ("stub", "syntax", "raises_before", "never_defined")  # the slips that leave a cell without its function
UNITS = sorted({helper.unit for helper in slips.helpers()})


def _slip(helper, kind):
    """A fixed slip of ``kind``: one gradebook run cannot draw many, the command line's tests draw the rest."""
    reference = slips.function_source(slips.finished(helper.unit), helper.name)
    return {
        "stub": slips.stub_of(helper.unit, helper.name),
        "syntax": reference.replace("):", ")", 1),
        "raises_before": f"raise RuntimeError('not yet')\n\n\n{reference}",
        "never_defined": "",
    }[kind]


@pytest.fixture(scope="module", params=UNITS)
def gradebook(request, tmp_path_factory):
    unit = units.get(request.param)
    notebook = notebook_name(unit)
    root = tmp_path_factory.mktemp(f"nbgrader-slips-{unit.name}")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    release(unit, root / "dist", course=course)
    released = json.loads((course / "release" / unit.name / notebook).read_text())
    students = {"finished": slips.filled_notebook(unit.name, released)}
    for helper in (helper for helper in slips.helpers() if helper.unit == unit.name):
        for kind in KINDS:
            students[f"{helper.name}__{kind}"] = slips.filled_notebook(unit.name, released, _slip(helper, kind),
                                                                       helper.name)
    homes = submit_class(shard_courses(course, 2), unit.name, notebook, students)
    # The kernel's run gives no grade (the kit's grader does, out of it): a short budget there is enough.
    return unit, autograde_class(homes, unit.name, notebook, ["--BoundedExecute.notebook_seconds=5"])


def test_in_the_gradebook_a_helper_that_cannot_be_used_costs_its_own_task_only(gradebook):
    unit, book = gradebook
    rubric = unit.rubric
    assert book.totals["finished"] == rubric.MAX_SCORE
    for helper in (helper for helper in slips.helpers() if helper.unit == unit.name):
        stub = book.scores(f"{helper.name}__stub")
        for kind in KINDS:
            scores = book.scores(f"{helper.name}__{kind}")
            for test_id, score in scores.items():
                test = rubric.TEST_BY_ID[test_id]
                said = (helper.name, kind, test_id)
                if test.task == helper.task:
                    assert score == 0, said
                elif test.task == rubric.TIMING.name:
                    # Timed in nbgrader's run against the clock: a ratio, not the same number twice; timed or not is.
                    assert (score > 0) == (stub[test_id] > 0), said
                else:
                    assert score == stub[test_id], said
                    if test.task in helper.callers:
                        assert score == test.points, said


def test_the_issue_s_notebook_is_graded_as_with_the_stub_in_the_gradebook(gradebook):
    unit, book = gradebook
    if unit.name != "long_context":
        pytest.skip("the issue's notebook is the third unit's")
    scores = book.scores("ntk_inverse_frequencies__syntax")
    correctness = {test_id: score for test_id, score in scores.items()
                   if unit.rubric.TEST_BY_ID[test_id].task != unit.rubric.TIMING.name}
    assert sum(score for test_id, score in correctness.items()
               if unit.rubric.TEST_BY_ID[test_id].task == "dynamic_ntk_inverse_frequencies") == \
        unit.rubric.task_points("dynamic_ntk_inverse_frequencies")
    # 87 of 100 on the command line: all but NTK's own 13; here the same, with the timing tier's 10 on nbgrader's clock
    assert sum(correctness.values()) == unit.rubric.MAX_SCORE - unit.rubric.task_points(unit.rubric.TIMING.name) - \
        unit.rubric.task_points("ntk_inverse_frequencies") == 77
