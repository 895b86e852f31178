"""The rubric of the unit vision_positions, in one place: its tasks, their tests and points, and its seed.

TODO: replace the toy task vision_positions_ramp with the unit's tasks. A test id is ``<task>_<what>``, unique across every
unit (the ids are the nbgrader grade ids of one course); a test is all or nothing, and the unit's points come
to 100. Each task's hidden cases are in ``cases/<task>.py``. To time a score path, add a TimedPath, its test
(task "timing") and what job.py needs for it (docs/writing-a-unit.md walks through a worked example).
"""

from autograder.core.rubric import Task, Test, complete

TITLE = "Vision positions"  # TODO: the unit's title, as the course, the table and the feedback show it
ORDER = 4  # its place in the course: after the units before it
SEED = 23937628  # the seed its hidden cases are drawn from (each unit its own)

# In the lesson's order: the feedback, the table and grades.csv follow it.
TASKS = (
    Task("vision_positions_ramp", "A toy position ramp (a placeholder)", ("vision_positions_ramp",)),
)

TESTS = (
    Test("vision_positions_ramp_values", "vision_positions_ramp", 80, "x + scale * t for several shapes, scales and dtypes"),
    # Points for refusing bad arguments only go to a function that also works on good ones (``needs``).
    Test("vision_positions_ramp_invalid_args", "vision_positions_ramp", 20, "ValueError for an x that is not (B, L, d)",
         needs="vision_positions_ramp_values"),
)

complete(globals())
