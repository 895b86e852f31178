"""The instructor's cycle as docs/instructors.md writes it works for both units (issue 25, point 3).

Once a course's ``submitted/`` holds both units' notebooks, each student's folder holds two; the kit's ``grade`` is
told which unit with ``--unit``, and without it stops with a message that names ``--unit`` and both units, never a
guess. The guide's own command line is read from the page and run on such a folder, for each unit in turn.
"""

import csv
import re
import shlex

import pytest

from autograder.core import units
from autograder.course.build import ROOT
from autograder.ways_in import cli

GUIDE = ROOT / "docs" / "instructors.md"


def _class_of_both_units(folder):
    """nbgrader's layout, submitted/<student>/<unit>/<unit>.py: each student turned in both units, the reference."""
    for student in ("ana", "ben"):
        for unit in units.all_units():
            path = folder / "submitted" / student / unit.name / f"{unit.module_name}.py"
            path.parent.mkdir(parents=True)
            path.write_text(unit.finished_reference)  # the borrowed code of another unit written in


def _guide_grade_command():
    """The kit's grade command in the guide's cycle (the block after ``nbgrader export``)."""
    text = GUIDE.read_text(encoding="utf-8")
    found = re.findall(r"^python -m autograder grade submitted .*$", text, flags=re.MULTILINE)
    assert len(found) == 1, found
    return shlex.split(found[0].split("#")[0])[3:]  # after "python -m autograder"


def test_a_folder_of_both_units_without_unit_is_refused_naming_unit(tmp_path, capsys):
    _class_of_both_units(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["grade", str(tmp_path / "submitted"), "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2
    told = capsys.readouterr().err
    assert "--unit" in told and all(unit.name in told for unit in units.all_units()), told
    assert not (tmp_path / "out").exists()  # nothing graded as a guess


def test_the_guides_grade_command_grades_each_unit_of_such_a_folder(tmp_path, monkeypatch):
    _class_of_both_units(tmp_path)
    arguments = _guide_grade_command()
    assert "--unit" in arguments, arguments
    monkeypatch.chdir(tmp_path)
    for unit in units.all_units():
        given = list(arguments)
        given[given.index("--unit") + 1] = unit.name
        out = tmp_path / "results" / unit.name
        given[given.index("--out") + 1] = str(out)
        assert cli.main(given + ["--without-gpu", "give"]) == 0
        with open(out / "grades.csv", newline="") as file:
            rows = list(csv.DictReader(file))
        assert {row["submission"] for row in rows} == {"ana", "ben"}
        # each student graded on this unit's tests alone, full marks for the reference
        assert all(float(row["total"]) == float(row["max_score"]) == unit.rubric.MAX_SCORE for row in rows), rows
        assert list(rows[0])[3:] == [test.id for test in unit.rubric.TESTS]
