"""A class of notebooks through the real `nbgrader autograde`, in shards graded at the same time.

nbgrader grades one notebook after another, and most of a hostile notebook's time is spent waiting (a
kernel that hangs until its budget runs out, a job that runs into its time limit). So the class is split
into ``shards`` copies of the course folder, each made after the release, with the same gradebook, and
each copy's `nbgrader autograde`, `generate_feedback` and `export` run at once. Nothing of nbgrader is
changed: each copy is a course of its own, graded by the unchanged commands, and the class's rows are the
union of the copies' rows. (One course folder with two `autograde` runs would share one SQLite gradebook,
which nbgrader does not promise to take from two writers.)
"""

import csv
import json
import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course.release import run_nbgrader


@dataclass
class GradedClass:
    assignment: str
    notebook: str  # the notebook's file name
    homes: dict  # {student: the course folder that graded them}
    log: str = ""  # the autograde logs of every shard, one after the other
    totals: dict = field(default_factory=dict)  # {student: total score} from the shards' `nbgrader export`

    @property
    def path(self):
        """The first shard's course folder (the release, and the gradebook's assignment, are the same in all)."""
        return next(iter(self.homes.values()))

    def autograded(self, student):
        return json.loads((self.homes[student] / "autograded" / student / self.assignment / self.notebook).read_text())

    def feedback(self, student):
        return (self.homes[student] / "feedback" / student / self.assignment / f"{self.assignment}.html").read_text()

    def scores(self, student):
        """{grade cell: score} in the gradebook that graded ``student``."""
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{self.homes[student] / 'gradebook.db'}") as gradebook:
            notebook = gradebook.find_submission_notebook(self.assignment, Path(self.notebook).stem, student)
            return {grade.name: grade.score for grade in notebook.grades}

    def disagreements(self, student, result):
        """[(test id, the gradebook's score, the command line's)] where ``student``'s gradebook differs from ``result``
        (the kit's own grading of the same submission), the timing tier's tests aside: they are timed in nbgrader's
        own run, against its own clock, a ratio, not the same number."""
        scores = self.scores(student)
        return [(test.id, scores.get(test.id), test.score) for test in result.tests if test.task != "timing"
                and (scores.get(test.id) is None or not math.isclose(scores[test.id], test.score, rel_tol=1e-6,
                                                                     abs_tol=1e-12))]

    def grade_cells(self):
        """{grade cell: its points} of the assignment in the gradebook."""
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{self.path / 'gradebook.db'}") as gradebook:
            notebook = gradebook.find_notebook(Path(self.notebook).stem, self.assignment)
            return {cell.name: cell.max_score for cell in notebook.grade_cells}


def shard_courses(course, shards):
    """``course`` (released) and ``shards - 1`` copies of it beside it; call before anything is submitted."""
    course = Path(course)
    copies = [course]
    for number in range(1, shards):
        copy = course.with_name(f"{course.name}-shard{number}")
        shutil.copytree(course, copy, symlinks=True)
        copies.append(copy)
    return copies


def submit_class(courses, assignment, notebook, students, files=()):
    """Submit ``students`` ({name: notebook JSON}) round-robin to ``courses`` (from ``shard_courses``), with
    ``files`` (paths) beside each notebook; returns {name: its course folder}."""
    homes = {}
    for number, (name, content) in enumerate(students.items()):
        home = courses[number % len(courses)]
        target = home / "submitted" / name / assignment
        target.mkdir(parents=True)
        (target / notebook).write_text(json.dumps(content, indent=1))
        for path in files:
            shutil.copy(path, target)
        homes[name] = home
    return homes


def submitted(homes):
    """Each student's folder in submitted/ (named after the student), for `python -m autograder grade`."""
    return [home / "submitted" / name for name, home in homes.items()]


def autograde_class(homes, assignment, notebook, flags=()):
    """Grade every shard at once: autograde, generate_feedback, export. Returns a GradedClass.

    Raises CourseError (from run_nbgrader) when any shard's nbgrader fails or logs an ERROR.
    """
    def grade(home):
        done = run_nbgrader(["autograde", assignment, "--force", *flags], course=home)
        run_nbgrader(["generate_feedback", assignment, "--force"], course=home)
        run_nbgrader(["export", "--to", str(home / "grades.csv")], course=home)
        with open(home / "grades.csv", newline="") as handle:
            totals = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                      if row["assignment"] == assignment}
        return done.stdout, totals

    used = list(dict.fromkeys(homes.values()))
    with ThreadPoolExecutor(max_workers=len(used)) as pool:
        graded = list(pool.map(grade, used))
    result = GradedClass(assignment, notebook, dict(homes))
    for log, totals in graded:
        result.log += log
        result.totals.update(totals)
    return result


def trusted_grades(notebook, unit, student, monkeypatch):
    """TrustedGrades, the kit's step of `nbgrader autograde`, run in this process on ``notebook`` (nbformat's, its
    graded cells' outputs written in place) with graders of its own, closed afterwards. Returns the notebook."""
    from autograder.ways_in import nbgrader_bridge

    monkeypatch.setattr(nbgrader_bridge.TrustedGrades, "_graders", {})
    try:
        nbgrader_bridge.TrustedGrades().preprocess(notebook, {"nbgrader": {
            "student": student, "assignment": unit.name, "notebook": unit.name}})
    finally:
        for grader in nbgrader_bridge.TrustedGrades._graders.values():
            grader.close()
    return notebook
