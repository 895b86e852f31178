"""The rubric's types: a unit's ``rubric.py`` declares its tasks, tests and timed paths with these.

Where points are set: each unit's ``rubric.py`` (``TASKS``, ``TESTS``, ``TIMED_PATHS``), ended by
``complete(globals())``, which adds the core's limits and the tables derived from them.
"""

from dataclasses import dataclass

from autograder.sandbox import limits


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    functions: tuple  # the names the student defines for this task


@dataclass(frozen=True)
class Test:
    id: str
    task: str
    points: int
    checks: str  # one line, shown to the student beside the result
    # Points come from working code: a test of what a function refuses (invalid arguments) gives its points
    # only when the function also works on valid ones, that is when the test named here passes, or fails
    # with a known mistake that explains its whole output (charged there, once). Raising ValueError for
    # everything is not a working function.
    needs: str = ""
    # On a platform that shows results by date (Gradescope's ``visibility``: "visible", "after_due_date",
    # "after_published", "hidden"): when the student sees the test's score and what it checks, and when the
    # feedback that quotes a hidden case (its call, expected against got). See autograder/ways_in/gradescope.py.
    visibility: str = "visible"
    details: str = "after_due_date"


@dataclass(frozen=True)
class TimedPath:
    name: str  # the path's name in the unit's job.py (``score_path`` builds it by this name)
    test: str  # the rubric test its points go to
    functions: tuple  # the student's functions on the path, checked for loops over positions
    requires: tuple  # tasks whose correctness tests must all pass first
    # (helper task, helper function, the grader's stand-in for it): a helper that is wrong has cost its own
    # task's points already, so the path is timed then with the stand-in in its place (vectorized index
    # arithmetic of the same cost as the helper), in both jobs; the helper's loop check still applies.
    helpers: tuple = ()
    settings: tuple = ()  # (name, value) pairs passed to the job's score_path and timing_inputs in the spec
    # The student's functions on the path whose inputs hold no position (a number of heads, say): a loop there
    # runs once per head, not per position, and is allowed (the ALiBi authors build their slopes in a list); the
    # bindings the loop check cannot follow are still refused there.
    per_head: tuple = ()
    describe: str = ""  # the call timed, as the feedback names it
    # The shortest length from which the path's own code runs the same steps at every length, by its declared
    # settings: Shaw's scores handle the rows within 2k + 1 of a corner apart below 2k + 2 (their count settles
    # there). Its steps are counted at lengths from here on (timing.count_lengths); 0: from the first of them.
    count_from: int = 0


TIMING = Task("timing", "Speed of the score path (timing tier)", ())
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")  # from most to least shown


def complete(namespace):
    """Finish a unit's rubric module: the core's limits where it sets none, the tables derived from its
    tasks and tests, and the checks that its tests are well formed. Call it last, with ``globals()``."""
    for name in dir(limits):
        if name.isupper():
            namespace.setdefault(name, getattr(limits, name))
    namespace.setdefault("TIMED_PATHS", ())
    namespace.setdefault("TIMING", TIMING)
    tasks, tests = namespace["TASKS"], namespace["TESTS"]
    namespace["TASK_NAMES"] = tuple(task.name for task in tasks)  # the correctness tasks, each with its cases
    namespace["TASK_BY_NAME"] = {task.name: task for task in tasks + (namespace["TIMING"],)}
    namespace["TEST_BY_ID"] = by_id = {test.id: test for test in tests}
    namespace["TASK_OF_FUNCTION"] = {function: task.name for task in tasks for function in task.functions}
    namespace["MAX_SCORE"] = sum(test.points for test in tests)
    namespace["VISIBILITIES"] = VISIBILITIES
    namespace["tests_of"] = lambda task_name: tuple(test for test in tests if test.task == task_name)
    namespace["task_points"] = lambda task_name: sum(test.points for test in tests if test.task == task_name)
    for test in tests:
        assert test.task in namespace["TASK_BY_NAME"], test.id
        assert test.visibility in VISIBILITIES and test.details in VISIBILITIES, test.id
        # the details never show before the score does
        assert VISIBILITIES.index(test.details) >= VISIBILITIES.index(test.visibility), test.id
        # a test's ``needs`` is scored before it, in its own task
        assert not test.needs or (by_id[test.needs].task == test.task
                                  and tests.index(by_id[test.needs]) < tests.index(test)), test.id
    for path in namespace["TIMED_PATHS"]:
        assert path.test in by_id and by_id[path.test].task == namespace["TIMING"].name, path.name


@dataclass(frozen=True)
class SampleMistake:
    """One submission of a unit's sample class (its ``samples.py``): the reference with one line changed."""

    name: str  # the file name of the sample submission
    task: str  # the one task it should lose points on
    says: str  # words the grader's feedback must contain for this mistake
    old: str  # a line (or part of one) of the reference...
    new: str  # ...and what the student wrote instead
