"""The per-student feedback chart shows every task's name whole (issue 34, point 6): the third unit's
``ntk_inverse_frequencies`` and ``dynamic_ntk_inverse_frequencies`` were both cut to ``tk_inverse_frequencies``
by a fixed left margin, so NTK and dynamic NTK looked the same. Checked on the drawn figure: each label is the
whole name, and lies inside the picture, for every unit, with points lost in any task."""

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.grade import Result
from autograder.core.grade import TestResult as Row  # not "Test...": pytest would try to collect it
from autograder.course.feedback import points_chart

pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402  (after the skip)
UNITS = units.all_units()


def _result(unit, lost):
    """A result of ``unit`` with every test passed but those of the tasks in ``lost``."""
    return Result("student", "/class/student.py",
                  [Row(test.id, test.task, 0 if test.task in lost else test.points, test.points, "")
                   for test in unit.rubric.TESTS], unit=unit.name)


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(UNITS), st.data())
def test_every_task_name_is_drawn_whole_inside_the_chart(unit, data):
    tasks = [task.name for task in unit.rubric.TASKS + (unit.rubric.TIMING,)]
    lost = data.draw(st.sets(st.sampled_from(tasks), min_size=1, max_size=len(tasks) - 1))
    figure = points_chart(_result(unit, lost))
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # drawn: the layout and every text's place are final
    renderer = canvas.get_renderer()
    labels = figure.axes[0].get_yticklabels()
    assert [label.get_text() for label in labels] == tasks
    box = figure.bbox
    for label in labels:
        extent = label.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1, (label.get_text(), extent, box)
