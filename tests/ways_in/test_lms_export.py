"""The LMS export: grades.csv and a roster in, a CSV that Canvas's or Moodle's gradebook imports out.

Generated classes (hypothesis) check what must hold for every class: each roster student appears once, in roster
order, with their total to 2 decimals; Canvas's Points Possible row holds max_score; a student in grades.csv but
not in the roster, and one in the roster with no grade, are both listed; formula-looking text is neutralised.
Examples check the rules that raise ExportProblem and the headers against each LMS's documentation.
"""

import csv
import io
import re

import pytest
from hypothesis import given, settings, strategies as st

from autograder.ways_in import lms_export
from autograder.ways_in.lms_export import ExportProblem, canvas_csv, format_points, moodle_csv

# Canvas's gradebook import (the guide "How do I import grades in the Gradebook?",
# https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807, and the
# importer it describes, instructure/canvas-lms lib/gradebook_importer.rb; Ohio State's Carmen guide lists the same
# columns: https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/
# import-csv-file-carmen-grades): the student columns as Canvas's own export writes them, then one column per
# assignment, "<name> (<assignment id>)" for an existing one; a row starting "Points Possible" gives the points.
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# Moodle's "Import grades: CSV file" (https://docs.moodle.org/311/en/Grade_import, "CSV grade import" and
# "Grade mapping"): any header row; in the import form one column is mapped to the user by email address, username
# or ID number, and each other column to a grade item. Moodle's own grade export names the email column this way.
MOODLE_IDENTIFIER = "Email address"
FORMULA_START = "=+-@"
TWO_DECIMALS = re.compile(r"(0|[1-9]\d*)(\.\d?[1-9])?\Z")  # at most 2 decimals, no trailing zero, no exponent


def parse(text):
    """The rows of a CSV text, read back as the csv module reads a file opened with newline=''."""
    return list(csv.reader(io.StringIO(text, newline="")))


def grades_row(name, total, max_score=10):
    return {"submission": name, "total": total, "max_score": str(max_score), "sinusoidal": "1"}


def canvas_student(name, number, student=None, section="S1", sis_user="", sis_login=""):
    return {"submission": name, "Student": student or f"Student {number}", "ID": str(number),
            "SIS User ID": sis_user, "SIS Login ID": sis_login, "Section": section}


def moodle_student(name, email):
    return {"submission": name, MOODLE_IDENTIFIER: email}


# Names as students choose them: any printable text, commas, quotes, newlines and formula starts included.
names = st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\n,\"'=+-@ "),
                min_size=1, max_size=12).filter(lambda name: name.strip() and "Points Possible" not in name)


def totals(max_score):
    """A total as grades.csv may write it (the kit's :g, a whole number, a float's repr), from 0 to max_score."""
    points = st.floats(0, max_score, allow_nan=False, allow_infinity=False)
    return st.one_of(st.integers(0, int(max_score)).map(str), points.map(lambda x: f"{x:g}"), points.map(repr))


@st.composite
def classes(draw):
    """(grades rows, submissions in the roster in roster order, {submission: total text}, max_score)."""
    # distinct as readers see names (a name twice is left out and said: test_row_names.py)
    everyone = draw(st.lists(names, min_size=1, max_size=12, unique_by=lms_export.as_readers_see))
    graded = [name for name in everyone if draw(st.booleans())] or everyone[:1]
    in_roster = draw(st.permutations([name for name in everyone if draw(st.booleans())])) or [everyone[0]]
    max_score = draw(st.sampled_from(["10", "40", "100", "37.5"]))  # Moodle's default limit is 100: tested apart
    grade_of = {name: draw(totals(float(max_score))) for name in graded}
    return [grades_row(name, grade_of[name], max_score) for name in graded], list(in_roster), grade_of, max_score


def assert_total_written(cell, total_text, who):
    assert TWO_DECIMALS.match(cell), f"{who}: grade cell {cell!r} is not a number with at most 2 decimals"
    assert abs(float(cell) - float(total_text)) <= 0.005 + 1e-9, \
        f"{who}: grades.csv total {total_text}, exported {cell}: they differ by {abs(float(cell) - float(total_text))}"


@settings(max_examples=150, deadline=None)
@given(classes())
def test_canvas_has_each_roster_student_once_in_roster_order_with_their_total(a_class):
    grades, roster_names, grade_of, max_score = a_class
    roster = [canvas_student(name, 1000 + at) for at, name in enumerate(roster_names)]
    text, problems = canvas_csv(grades, roster, "Positional encodings", 77)
    rows = parse(text)
    assert rows[0] == CANVAS_HEADER + ["Positional encodings (77)"]
    assert rows[1][0] == "Points Possible" and rows[1][-1] == format_points(float(max_score))
    students = rows[2:]
    assert [row[1] for row in students] == [str(1000 + at) for at in range(len(roster_names))], \
        "each roster student once, in roster order, by Canvas ID"
    for name, row in zip(roster_names, students):
        assert len(row) == len(CANVAS_HEADER) + 1
        if name in grade_of:
            assert_total_written(row[-1], grade_of[name], name)
        else:
            assert row[-1] == "", f"{name!r} has no grade in grades.csv: the cell must be empty, not {row[-1]!r}"


@settings(max_examples=150, deadline=None)
@given(classes())
def test_moodle_has_each_roster_student_once_in_roster_order_with_their_total(a_class):
    grades, roster_names, grade_of, _ = a_class
    roster = [moodle_student(name, f"student{at}@example.org") for at, name in enumerate(roster_names)]
    text, problems = moodle_csv(grades, roster, grade_column="Positional encodings")
    rows = parse(text)
    assert rows[0] == [MOODLE_IDENTIFIER, "Positional encodings"]
    assert [row[0] for row in rows[1:]] == [f"student{at}@example.org" for at in range(len(roster_names))]
    for name, row in zip(roster_names, rows[1:]):
        if name in grade_of:
            assert_total_written(row[1], grade_of[name], name)
        else:
            assert row[1] == "-", f"{name!r} has no grade: Moodle's 'no grade' is '-', got {row[1]!r}"


@settings(max_examples=150, deadline=None)
@given(classes(), st.sampled_from(["canvas", "moodle"]))
def test_unknown_and_ungraded_students_are_each_named_in_problems(a_class, lms):
    grades, roster_names, grade_of, _ = a_class
    if lms == "canvas":
        roster = [canvas_student(name, 1000 + at) for at, name in enumerate(roster_names)]
        _, problems = canvas_csv(grades, roster, "Lab")
    else:
        roster = [moodle_student(name, f"student{at}@example.org") for at, name in enumerate(roster_names)]
        _, problems = moodle_csv(grades, roster)
    not_in_roster = [name for name in grade_of if name not in roster_names]
    ungraded = [name for name in roster_names if name not in grade_of]
    for name in not_in_roster:
        assert sum(f"submission {name!r} " in line and "not in the roster" in line for line in problems) == 1, \
            f"{name!r} is in grades.csv only: one problem line must name it; got {problems}"
    for name in ungraded:
        assert sum(f"submission {name!r}, has no row in grades.csv" in line for line in problems) == 1, \
            f"{name!r} is in the roster only: one problem line must name it; got {problems}"
    if not not_in_roster and not ungraded:
        assert problems == [], f"every student matched, yet problems: {problems}"


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(FORMULA_START), names, names)
def test_formula_looking_text_is_written_with_a_leading_apostrophe(start, student, section):
    student, section = start + student, start + section
    grades = [grades_row("a", "7.5")]
    text, problems = canvas_csv(grades, [canvas_student("a", 5, student=student, section=section,
                                                         sis_login=start + "x")], start + "Lab")
    header, points, row = parse(text)
    assert header[-1] == "'" + start + "Lab"
    assert row == ["'" + student, "5", "", "'" + start + "x", "'" + section, "7.5"]
    assert points[0] == "Points Possible"
    assert len([line for line in problems if "apostrophe" in line or "written as" in line]) == 4, problems
    text, problems = moodle_csv(grades, [moodle_student("a", "a@example.org")], grade_column=start + "Lab")
    assert parse(text) == [[MOODLE_IDENTIFIER, "'" + start + "Lab"], ["a@example.org", "7.5"]]


def test_grades_are_numbers_and_never_neutralised():
    text, _ = canvas_csv([grades_row("a", "0"), grades_row("b", "10")],
                         [canvas_student("a", 1), canvas_student("b", 2)], "Lab")
    assert [row[-1] for row in parse(text)[2:]] == ["0", "10"]


@pytest.mark.parametrize("value, written", [(7.5, "7.5"), (10, "10"), (10.0, "10"), (1 / 3, "0.33"), (2 / 3, "0.67"),
                                            (12.10, "12.1"), (1e6, "1000000"), (0.001, "0"), (-0.0, "0"),
                                            (99.999, "100")])
def test_format_points_writes_at_most_two_decimals_without_exponent(value, written):
    assert format_points(value) == written


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_duplicate_submission_in_roster_is_said_and_the_rest_exported(lms):
    grades = [grades_row("alice", "5"), grades_row("bob", "6")]
    if lms == "canvas":
        roster = [canvas_student("alice", 1), canvas_student("alice", 2), canvas_student("bob", 3)]
        text, problems = canvas_csv(grades, roster, "Lab")
        grades_by_id = {row[1]: row[-1] for row in parse(text)[2:]}
        assert grades_by_id == {"1": "", "2": "", "3": "6"}
    else:
        roster = [moodle_student("alice", "a@x.org"), moodle_student("alice", "b@x.org"), moodle_student("bob", "c@x.org")]
        text, problems = moodle_csv(grades, roster)
        assert parse(text)[1:] == [["a@x.org", "-"], ["b@x.org", "-"], ["c@x.org", "6"]]
    assert any("one submission name ('alice' and 'alice'" in line and "none of them gets a grade" in line
               for line in problems), problems


def test_duplicate_identity_in_roster_raises():
    grades = [grades_row("a", "5"), grades_row("b", "6")]
    with pytest.raises(ExportProblem, match=r"same ID '1'"):
        canvas_csv(grades, [canvas_student("a", 1), canvas_student("b", 1)], "Lab")
    with pytest.raises(ExportProblem, match=r"same Email address 'x@y.org'.*second replacing the first"):
        moodle_csv(grades, [moodle_student("a", "x@y.org"), moodle_student("b", "x@y.org")])


def test_duplicate_submission_in_grades_is_said_and_the_rest_exported():
    text, problems = canvas_csv([grades_row("a", "5"), grades_row("a", "6"), grades_row("b", "7")],
                                [canvas_student("a", 1), canvas_student("b", 2)], "Lab")
    assert {row[1]: row[-1] for row in parse(text)[2:]} == {"1": "", "2": "7"}
    assert any("grades.csv has 2 rows for one submission name ('a' and 'a'" in line for line in problems), problems


@pytest.mark.parametrize("total", ["", "abc", "nan", "inf", "7,5", "1_000", "7.5 points"])
def test_a_total_that_is_not_a_number_raises(total):
    with pytest.raises(ExportProblem, match=r"total of 'a' is .*not a number"):
        canvas_csv([grades_row("a", total)], [canvas_student("a", 1)], "Lab")


def test_a_negative_total_raises():
    with pytest.raises(ExportProblem, match="below 0"):
        moodle_csv([grades_row("a", "-1")], [moodle_student("a", "a@x.org")])


def test_different_max_scores_raise():
    with pytest.raises(ExportProblem, match="more than one max_score.*one assignment at a time"):
        canvas_csv([grades_row("a", "5", 10), grades_row("b", "5", 20)], [canvas_student("a", 1)], "Lab")


def test_canvas_assignment_column_is_the_name_alone_without_an_id():
    text, _ = canvas_csv([grades_row("a", "5")], [canvas_student("a", 1)], "Positional encodings")
    assert parse(text)[0] == CANVAS_HEADER + ["Positional encodings"]


@pytest.mark.parametrize("name, assignment_id, message", [
    ("Lab (12)", None, "reads as an assignment id"),
    ("Final Score check", None, "ignores it on import"),
    ("Lab", "12a", "not a number"),
    ("  ", None, "assignment name is empty"),
])
def test_canvas_refuses_an_assignment_column_canvas_would_misread(name, assignment_id, message):
    with pytest.raises(ExportProblem, match=message):
        canvas_csv([grades_row("a", "5")], [canvas_student("a", 1)], name, assignment_id)


def test_canvas_refuses_a_non_numeric_id_and_a_points_possible_name():
    with pytest.raises(ExportProblem, match="Canvas ID '12x' is not a number"):
        canvas_csv([grades_row("a", "5")], [dict(canvas_student("a", 1), ID="12x")], "Lab")
    with pytest.raises(ExportProblem, match="points row"):
        canvas_csv([grades_row("a", "5")], [canvas_student("a", 1, student="Points Possible Jr")], "Lab")


def test_canvas_student_without_any_id_is_listed():
    _, problems = canvas_csv([grades_row("a", "5")], [dict(canvas_student("a", 1), ID="")], "Lab")
    assert any("by name alone" in line for line in problems), problems


def test_moodle_refuses_an_empty_or_formula_looking_identifier():
    with pytest.raises(ExportProblem, match="empty 'Email address'.*row before it"):
        moodle_csv([grades_row("a", "5")], [moodle_student("a", " ")])
    with pytest.raises(ExportProblem, match="--identifier-column"):
        moodle_csv([grades_row("a", "5")], [moodle_student("a", "-a@x.org")])


def test_moodle_identifier_column_is_the_callers_choice():
    text, _ = moodle_csv([grades_row("a", "5")], [{"submission": "a", "ID number": "s123"}],
                         identifier_column="ID number", grade_column="Lab")
    assert parse(text) == [["ID number", "Lab"], ["s123", "5"]]


def test_moodle_warns_of_grades_above_100():
    _, problems = moodle_csv([grades_row("a", "150", 200)], [moodle_student("a", "a@x.org")])
    assert any("unlimitedgrades" in line for line in problems), problems


def test_a_formula_name_in_grades_csv_points_to_the_roster_spelling():
    _, problems = canvas_csv([grades_row("'=evil", "5")], [canvas_student("=evil", 1)], "Lab")
    assert any("write the roster's submission as grades.csv does" in line for line in problems), problems


def write(path, rows, header=None, encoding="utf-8"):
    header = header or list(rows[0])
    with open(path, "w", encoding=encoding, newline="") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_read_roster_skips_canvas_markers_and_reads_a_spreadsheets_bom(tmp_path):
    rows = [dict(canvas_student("", ""), Student="    Points Possible", ID="", Section=""),
            canvas_student("a", 1, student="Émile")]
    path = write(tmp_path / "roster.csv", rows, encoding="utf-8-sig")
    assert lms_export.read_roster(path) == [canvas_student("a", 1, student="Émile")]


def test_read_roster_names_a_missing_column(tmp_path):
    path = write(tmp_path / "roster.csv", [{"submission": "a", "Email": "a@x.org"}])
    with pytest.raises(ExportProblem, match="no column 'Email address'.*its columns: 'submission', 'Email'"):
        lms_export.read_roster(path, ("Email address",))


def test_main_writes_canvas_file_and_prints_problems(tmp_path, capsys):
    grades = write(tmp_path / "grades.csv", [grades_row("alice", "7.25"), grades_row("zed", "3")])
    roster = write(tmp_path / "roster.csv", [canvas_student("alice", 11), canvas_student("bob", 12)])
    out = tmp_path / "canvas.csv"
    status = lms_export.main([str(grades), "--roster", str(roster), "--format", "canvas", "--assignment", "PE",
                              "--assignment-id", "9", "--out", str(out)])
    assert status == 0
    with open(out, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [CANVAS_HEADER + ["PE (9)"], ["Points Possible", "", "", "", "", "10"],
                    ["Student 11", "11", "", "", "S1", "7.25"], ["Student 12", "12", "", "", "S1", ""]]
    errors = capsys.readouterr().err
    assert "'zed'" in errors and "not in the roster" in errors and "'bob', has no row in grades.csv" in errors


def test_main_writes_moodle_file_with_the_chosen_identifier(tmp_path):
    grades = write(tmp_path / "grades.csv", [grades_row("alice", "7.25")])
    roster = write(tmp_path / "roster.csv", [{"submission": "alice", "Username": "alice01"}])
    out = tmp_path / "moodle.csv"
    assert lms_export.main([str(grades), "--roster", str(roster), "--format", "moodle", "--assignment", "PE",
                            "--identifier-column", "Username", "--out", str(out)]) == 0
    assert out.read_bytes() == b"Username,PE\r\nalice01,7.25\r\n"


def test_main_returns_2_with_a_message_and_writes_nothing_on_an_export_problem(tmp_path, capsys):
    grades = write(tmp_path / "grades.csv", [grades_row("alice", "7")])
    roster = write(tmp_path / "roster.csv", [moodle_student("alice", "a@x.org"), moodle_student("bob", "a@x.org")])
    out = tmp_path / "moodle.csv"
    status = lms_export.main([str(grades), "--roster", str(roster), "--format", "moodle", "--assignment", "PE",
                              "--out", str(out)])
    assert status == 2 and not out.exists()
    assert "the same Email address 'a@x.org'" in capsys.readouterr().err


def test_main_refuses_options_of_the_other_lms(tmp_path):
    with pytest.raises(SystemExit) as stop:
        lms_export.main(["g.csv", "--roster", "r.csv", "--format", "moodle", "--assignment", "PE",
                         "--assignment-id", "3", "--out", str(tmp_path / "o.csv")])
    assert stop.value.code == 2
