"""Under the real `nbgrader autograde`, a notebook of another unit handed in to an assignment scores nothing and
the grading says what it looks like (autograder/core/recognize.py, through TrustedGrades' Grader).

Every ordered pair of units: each unit's released notebook, blank and filled with its reference, handed in to
each other unit's assignment under that assignment's notebook name. One release of each unit and one autograde
run per assignment (the three at once, each in a course folder of its own), with a short kernel budget: the
kernel's run does not decide the grade.
"""

import json
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from autograder.core import units
from autograder.course.notebook import COURSE, filled_notebook, notebook_name
from autograder.course.release import release, run_nbgrader
from nbgrader_class import GradedClass

NAMES = list(units.names())
CELL_SECONDS, NOTEBOOK_SECONDS, WALL_SECONDS, TASK_SECONDS = 5, 15, 20, 5

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the course's kernel runs under bubblewrap")


def _filled(released, unit):
    """The released notebook with each solution cell holding its function from the unit's reference."""
    return filled_notebook(released, unit.rubric.TASK_OF_FUNCTION, unit.finished_reference)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader-wrong-unit")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    notebooks = {}
    for name in NAMES:
        unit = units.get(name)
        release(unit, root / "dist", course=course)
        released = json.loads((course / "release" / name / notebook_name(unit)).read_text())
        notebooks[name] = {"blank": released, "reference": _filled(released, unit)}
    homes, students = {}, {}
    for graded_as in NAMES:  # a course folder of its own for each assignment, graded at the same time
        home = root / f"course-{graded_as}"
        shutil.copytree(course, home, symlinks=True)
        homes[graded_as] = home
        students[graded_as] = []
        for other in NAMES:
            if other == graded_as:
                continue
            for kind, notebook in notebooks[other].items():
                student = f"{other}_{kind}"
                target = home / "submitted" / student / graded_as
                target.mkdir(parents=True)
                (target / notebook_name(units.get(graded_as))).write_text(json.dumps(notebook, indent=1))
                students[graded_as].append(student)

    def autograde(graded_as):
        home = homes[graded_as]
        done = run_nbgrader(["autograde", graded_as, "--force", f"--Execute.timeout={CELL_SECONDS}",
                             f"--BoundedExecute.notebook_seconds={NOTEBOOK_SECONDS}",
                             f"--TrustedGrades.wall_seconds={WALL_SECONDS}",
                             f"--TrustedGrades.task_seconds={TASK_SECONDS}"], course=home)
        run_nbgrader(["export", "--to", str(home / "grades.csv")], course=home)
        import csv

        with open(home / "grades.csv", newline="") as handle:
            totals = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                      if row["assignment"] == graded_as}
        found = GradedClass(graded_as, notebook_name(units.get(graded_as)), {s: home for s in students[graded_as]},
                            done.stdout, totals)
        return graded_as, found

    with ThreadPoolExecutor(max_workers=len(NAMES)) as pool:
        return dict(pool.map(autograde, NAMES)), students


@pytest.mark.parametrize("graded_as", NAMES)
def test_another_unit_s_notebook_scores_nothing_in_an_assignment_and_the_grading_says_what_it_looks_like(graded,
                                                                                                         graded_as):
    classes, students = graded
    graded_class = classes[graded_as]
    assert set(graded_class.totals) == set(students[graded_as])  # every notebook has its row
    for student in students[graded_as]:
        assert graded_class.totals[student] == 0, (student, graded_class.totals)
        assert all(not score for score in graded_class.scores(student).values()), student
        whose = student.rsplit("_", 1)[0]
        said = f"this looks like a {whose} submission"
        assert said in graded_class.log, (student, graded_class.log[-3000:])
    assert f"this is the {graded_as} assignment" in graded_class.log
