"""Grades for an LMS gradebook: grades.csv and a roster in, a CSV that Canvas or Moodle imports out.

``python -m autograder grade CLASS --out OUT`` writes ``OUT/grades.csv`` (``submission,total,max_score,<test id>,...``).
The roster maps each ``submission`` (the name grades.csv gives) to the student's identity in the LMS:

- Canvas: ``Student, ID, SIS User ID, SIS Login ID, Section``, the columns of Canvas's own gradebook export (the SIS
  columns may be empty). ``canvas_csv`` writes those five columns and one assignment column, ``"<name> (<id>)"`` for an
  existing assignment or ``"<name>"`` for Canvas to create; then a ``Points Possible`` row holding the max score; then
  a row per roster student, in roster order.
- Moodle: one identifier column (by default ``Email address``; Moodle's "Import grades: CSV file" maps a column to the
  user by email address, username, ID number or user id, in its import form). ``moodle_csv`` writes that column and one
  grade column, a row per roster student.

What each LMS does with the file, as read from its importer (so that this module never writes a file the LMS would
misread):

- Canvas (instructure/canvas-lms, lib/gradebook_importer.rb; the guide "How do I import grades in the Gradebook?",
  https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807): the header
  must start ``Student, ID`` and end its student columns at ``Section``; a row whose first cell holds
  ``Points Possible`` gives each assignment's points; a header ``"Title (123)"`` is assignment 123; a header that
  contains ``Current Score``, ``Final Grade`` and the like is dropped as a computed column. A student is found by
  ``ID``, then ``SIS User ID``, then ``SIS Login ID``, then by name. Its own export rounds scores to 2 decimals.
- Moodle (https://docs.moodle.org/311/en/Grade_import; moodle/moodle, grade/import/csv/classes/load_data.php): any
  header names, mapped by hand; a grade cell that is empty or ``-`` is "no grade", and ``-`` is the only one of the two
  it reads as no grade when the column is mapped to a new grade item; a decimal point ``.`` is read in every language;
  a grade above 100 is refused unless the site allows more (``unlimitedgrades``, ``gradepointmax``); a user it cannot
  find stops the whole import, and a row with an empty identifier is given to the user of the row before it.

Numbers are written with at most 2 decimals: ``format(value, ".2f")`` (the float rounded half to even on its binary
value), then trailing zeros and a bare point dropped, so 7.5 is ``7.5``, 10 is ``10`` and 1/3 is ``0.33``; never an
exponent (``:g`` would write 1e+06) and always a point, never a comma. It is the precision Canvas's own export uses.

Text cells that begin with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return are written with a leading
apostrophe, which spreadsheets show as text instead of running the cell as a formula (OWASP's advice on CSV
injection). Grade cells are numbers written by this module, so they never need it.

Every export returns ``(text, problems)``: the CSV text, and a line for each thing the instructor should know
(a student in grades.csv but not in the roster, a roster student with no grade, a cell written with an apostrophe,
a submission name that grades.csv or the roster holds twice). A name twice costs only its own rows: which grade is
whose cannot be told, so those students' grades are left empty and said, and every other student is exported.
Names are compared as readers see them (``autograder.intake.inert.as_readers_see``: a spreadsheet's apostrophe,
Unicode's normalisation and case aside), the rule the grader names grades.csv's rows apart by. What would make the
whole file wrong raises ``ExportProblem``, whose message says what to fix. Besides that rule, the module uses the
standard library only.
"""

import argparse
import csv
import io
import os
import re
import sys

from autograder.intake.inert import as_readers_see

SUBMISSION = "submission"
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_ROW = "Points Possible"
MOODLE_IDENTIFIER = "Email address"
MOODLE_NO_GRADE = "-"
GRADES_COLUMNS = (SUBMISSION, "total", "max_score")

# Canvas drops, as computed, an import column whose header contains one of these (lib/gradebook_importer.rb).
_CANVAS_COMPUTED = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points", "Final Grade",
                    "Override Score", "Override Grade", "Override Status")
_CANVAS_ID_SUFFIX = re.compile(r"\s\(\d+\)\Z")  # Canvas reads "Lab (12)" as assignment 12
# Canvas skips, as its own "muted" marker row, a row whose every cell is blank, "Muted" or "Manual Posting...".
_CANVAS_MARKER_CELL = re.compile(r"\s*(Muted|Manual Posting.*)?\s*\Z", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class ExportProblem(ValueError):
    """A grades file, roster or option that would give a wrong gradebook; the message says what to fix."""


def format_points(value):
    """``value`` (a number of points) with at most 2 decimals, no exponent, no trailing zeros: 7.50 is ``7.5``."""
    return format(value + 0.0, ".2f").rstrip("0").rstrip(".")  # + 0.0 makes -0.0 plain 0


def text_cell(value):
    """A text cell a spreadsheet shows as text: with a leading apostrophe where it would start a formula."""
    value = "" if value is None else str(value)
    return "'" + value if value.startswith(_FORMULA_START) else value


def _cell(row, column):
    """The text of ``row[column]``: "" where it is missing or None (a number given by a caller becomes text)."""
    value = row.get(column)
    return "" if value is None else str(value)


def read_csv(path, what):
    """(header, rows) of the CSV file at ``path``, each row a dict keyed by the header; ``what`` names the file.

    UTF-8, with or without the byte-order mark a spreadsheet adds. A missing cell reads as ""; a row with more
    cells than the header, a file that is not UTF-8 or has no header raise ExportProblem.
    """
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle, restkey=None, restval="")
            rows = list(reader)
            header = reader.fieldnames
    except OSError as error:
        raise ExportProblem(f"cannot read the {what} {str(path)!r}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ExportProblem(f"the {what} {str(path)!r} is not UTF-8 text: save it as 'CSV UTF-8'") from None
    except csv.Error as error:
        raise ExportProblem(f"the {what} {str(path)!r} is not a readable CSV file: {error}") from None
    if not header:
        raise ExportProblem(f"the {what} {str(path)!r} is empty: it needs a header row, then a row per student")
    for number, row in enumerate(rows, start=2):
        if None in row:
            raise ExportProblem(f"the {what} {str(path)!r}: row {number} has {len(header) + len(row[None])} cells "
                                f"but the header has {len(header)}: quote a cell that holds a comma")
    return header, rows


def _require_columns(header, columns, what):
    missing = [column for column in columns if column not in header]
    if missing:
        raise ExportProblem(f"the {what} has no column {', '.join(repr(c) for c in missing)} (its columns: "
                            f"{', '.join(repr(c) for c in header) or 'none'}); the header must name it exactly")


def read_grades(path):
    """The rows of grades.csv (``python -m autograder grade ... --out OUT`` writes it), as dicts of text."""
    header, rows = read_csv(path, "grades file")
    _require_columns(header, GRADES_COLUMNS, "grades file")
    return rows


def read_roster(path, identity_columns=CANVAS_COLUMNS):
    """The rows of the roster at ``path``, as dicts of text, in the file's order.

    Args:
        path: a CSV file with a header that names ``submission`` (the name in grades.csv) and every one of
            ``identity_columns``: ``CANVAS_COLUMNS`` for Canvas, ``(identifier_column,)`` for Moodle. Other
            columns are allowed and ignored, so a roster may be Canvas's gradebook export with a submission
            column added.
    Returns:
        the rows, except those that are Canvas's own markers and name no submission: its ``Points Possible`` row,
        and a row of blank, ``Muted`` or ``Manual Posting`` cells.
    """
    header, rows = read_csv(path, "roster")
    _require_columns(header, (SUBMISSION,) + tuple(identity_columns), "roster")
    kept = []
    for row in rows:
        marker = (CANVAS_POINTS_ROW in (row.get("Student") or "")
                  or all(_CANVAS_MARKER_CELL.match(cell or "") for cell in row.values()))
        if marker and not (row.get(SUBMISSION) or "").strip():
            continue
        kept.append(row)
    return kept


def _points(value, column, submission):
    """A number of points from grades.csv, or ExportProblem naming the row and what to fix."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = repr(value)
    else:
        text = ("" if value is None else str(value)).strip()
    if not _NUMBER.match(text):
        raise ExportProblem(f"grades.csv: {column} of {submission!r} is {text!r}, not a number (digits with a '.' "
                            "decimal point); write it again with `python -m autograder grade ... --out`")
    number = float(text)
    if number < 0:
        raise ExportProblem(f"grades.csv: {column} of {submission!r} is {text}, below 0, which the grader never "
                            "writes; check that this is the kit's grades.csv")
    return number


def _read_totals(grades_rows):
    """({submission: total} in grades.csv's order, the max score shared by every row, problems, the names twice).

    Rows whose names are one name to a reader (as_readers_see: the same but for a spreadsheet's apostrophe,
    Unicode's normalisation or case, as ``'=SUM(1)`` twice in a grades.csv of an earlier grader) are left out,
    each such name said in ``problems``: which of them is whose cannot be told, so none of their grades is
    exported. The names twice are returned as readers see them.
    """
    rows_of, maxima = {}, {}
    for row in grades_rows:
        missing = [column for column in GRADES_COLUMNS if column not in row]
        if missing:
            raise ExportProblem(f"grades.csv has no column {', '.join(repr(c) for c in missing)}: give the file "
                                "that `python -m autograder grade ... --out` writes")
        name = _cell(row, SUBMISSION)
        total = _points(row["total"], "total", name)
        maxima.setdefault(format_points(_points(row["max_score"], "max_score", name)), name)
        rows_of.setdefault(as_readers_see(name), []).append((name, total))
    if not rows_of:
        raise ExportProblem("grades.csv holds no student rows: there is nothing to export")
    if len(maxima) > 1:
        raise ExportProblem("grades.csv holds more than one max_score ("
                            + ", ".join(f"{points} for {name!r}" for points, name in maxima.items())
                            + "): export the grades of one assignment at a time")
    totals, problems, twice = {}, [], set()
    for view, same in rows_of.items():
        if len(same) == 1:
            totals[same[0][0]] = same[0][1]
            continue
        twice.add(view)
        problems.append(f"grades.csv has {len(same)} rows for one submission name ("
                        f"{' and '.join(repr(name) for name, _ in same)}, one name to a spreadsheet or an LMS): "
                        "none of them is exported. Grade the class again with this kit, which names every row "
                        "apart, or enter these grades by hand")
    return totals, float(next(iter(maxima))), problems, twice


def _match(grades_rows, roster_rows, identity_columns, who):
    """Pair each roster row with its total (None where grades.csv has none), and list the students unmatched.

    A submission name that grades.csv or the roster holds twice (as readers see names: as_readers_see) gets
    no grade, and the problems say so; every other student is exported.

    Args:
        who: a function of a roster row that names the student in a message.
    Returns:
        (pairs, max_score, problems): pairs is [(roster row, total or None)] in roster order.
    """
    totals, max_score, problems, twice_graded = _read_totals(grades_rows)
    roster_rows = list(roster_rows)
    if not roster_rows:
        raise ExportProblem("the roster holds no students: give a row per student, with their submission name")
    rows_of = {}
    for row in roster_rows:
        missing = [column for column in (SUBMISSION,) + tuple(identity_columns) if column not in row]
        if missing:
            raise ExportProblem(f"the roster has no column {', '.join(repr(c) for c in missing)}; the header must "
                                "name it exactly")
        name = _cell(row, SUBMISSION)
        if name.strip():
            rows_of.setdefault(as_readers_see(name), []).append(row)
    twice_listed = set()
    for view, same in rows_of.items():
        if len(same) > 1:
            twice_listed.add(view)
            problems.append(f"the roster gives {' and '.join(who(row) for row in same)} one submission name ("
                            f"{' and '.join(repr(_cell(row, SUBMISSION)) for row in same)}, one name to a "
                            "spreadsheet or an LMS): none of them gets a grade. A submission is one student's: "
                            "keep one row, or enter these grades by hand")
    pairs = []
    for row in roster_rows:
        name = _cell(row, SUBMISSION)
        view = as_readers_see(name)
        if not name.strip():
            problems.append(f"{who(row)} has no submission name in the roster: the grade is left empty")
            pairs.append((row, None))
        elif view in twice_listed:
            pairs.append((row, None))
        elif view in twice_graded:
            problems.append(f"{who(row)}, submission {name!r}: the grade is left empty, since grades.csv has more "
                            "than one row for this name")
            pairs.append((row, None))
        elif name in totals:
            pairs.append((row, totals[name]))
        else:
            problems.append(f"{who(row)}, submission {name!r}, has no row in grades.csv: the grade is left empty")
            pairs.append((row, None))
    listed = {_cell(row, SUBMISSION) for row in roster_rows}
    for name, total in totals.items():
        if name in listed or as_readers_see(name) in twice_listed:
            continue
        hint = ""
        spelled = [row for row in rows_of.get(as_readers_see(name), [])]
        if spelled:
            spelled = _cell(spelled[0], SUBMISSION)
            hint = f"; the roster has {spelled!r}: write the roster's submission as grades.csv does"
            if name.startswith("'") and name[1:] == spelled:
                hint = (f"; the roster has {spelled!r}: grades.csv writes a name that looks like a formula with a "
                        "leading apostrophe, so write the roster's submission as grades.csv does")
        problems.append(f"submission {name!r} (total {format_points(total)}) is in grades.csv but not in the roster, "
                        f"so it is not exported: add a roster row for it, or enter the grade by hand{hint}")
    return pairs, max_score, problems


def _neutralised(value, where, consequence, problems):
    """``text_cell(value)``, with a line in ``problems`` where the apostrophe had to be added."""
    cell = text_cell(value)
    if cell != (value or ""):
        problems.append(f"{where}: {value!r} begins with {value[0]!r}, so it is written as {cell!r}, which a "
                        f"spreadsheet shows as text instead of running it as a formula; {consequence}")
    return cell


def _no_duplicates(roster_rows, column, who, why):
    seen = {}
    for row in roster_rows:
        value = _cell(row, column).strip()
        if value and value in seen:
            raise ExportProblem(f"the roster gives {who(seen[value])} and {who(row)} the same {column} {value!r}: "
                                f"{why}")
        seen.setdefault(value, row)


def canvas_csv(grades_rows, roster_rows, assignment_name, assignment_id=None):
    """The text of a CSV that Canvas's gradebook import takes, and the problems to tell the instructor.

    Args:
        grades_rows: the rows of grades.csv, dicts with ``submission``, ``total`` and ``max_score`` (text or numbers);
            every row must have the same max_score.
        roster_rows: dicts with ``submission`` and Canvas's ``Student, ID, SIS User ID, SIS Login ID, Section``.
        assignment_name: the assignment's name as Canvas shows it.
        assignment_id: the Canvas assignment id (digits, in the assignment's address ``.../assignments/<id>``), or None
            for Canvas to create a new assignment of that name on import.
    Returns:
        (text, problems): the CSV text (header; ``Points Possible`` row with the max score; a row per roster student in
        roster order, the total with at most 2 decimals, empty where grades.csv has none) and a list of lines.
    Raises:
        ExportProblem: a Canvas ID twice in the roster, an ID that is not digits, a total that is not a number,
        an assignment name Canvas would misread, a student name Canvas would take for its points row.

    Example: ``canvas_csv(rows, roster, "Positional encodings", 1234)`` writes the header
    ``Student,ID,SIS User ID,SIS Login ID,Section,Positional encodings (1234)``.
    """
    name = (assignment_name or "").strip()
    if not name:
        raise ExportProblem("the assignment name is empty: give the assignment's name as Canvas shows it")
    computed = [word for word in _CANVAS_COMPUTED if word in name]
    if computed:
        raise ExportProblem(f"the assignment name {name!r} contains {computed[0]!r}: Canvas takes such a column for "
                            "one it computes and ignores it on import; rename the assignment")
    if assignment_id is not None and not str(assignment_id).strip().isdigit():
        raise ExportProblem(f"the Canvas assignment id {assignment_id!r} is not a number: it is the digits at the end "
                            "of the assignment's address, .../assignments/<id>")
    if assignment_id is None and _CANVAS_ID_SUFFIX.search(name):
        raise ExportProblem(f"the assignment name {name!r} ends in a number in parentheses, which Canvas reads as an "
                            "assignment id: give the assignment id too, or rename the assignment")

    def who(row):
        return f"roster student {_cell(row, 'Student')!r} (ID {_cell(row, 'ID')!r})"

    pairs, max_score, problems = _match(grades_rows, roster_rows, CANVAS_COLUMNS, who)
    _no_duplicates([row for row, _ in pairs], "ID", who, "a Canvas ID is one student's; fix the roster")
    header_cell = f"{name} ({str(assignment_id).strip()})" if assignment_id is not None else name
    header_cell = _neutralised(header_cell, "the assignment column", "Canvas names a new assignment with it",
                               problems)
    rows = [list(CANVAS_COLUMNS) + [header_cell], [CANVAS_POINTS_ROW, "", "", "", "", format_points(max_score)]]
    for row, total in pairs:
        student, canvas_id = _cell(row, "Student"), _cell(row, "ID").strip()
        if canvas_id and not canvas_id.isdigit():
            raise ExportProblem(f"{who(row)}: the Canvas ID {canvas_id!r} is not a number; Canvas would read its "
                                "leading digits as another student's ID. Copy the ID column of Canvas's export")
        if CANVAS_POINTS_ROW in student:
            raise ExportProblem(f"{who(row)}: Canvas reads a row whose Student cell contains "
                                f"{CANVAS_POINTS_ROW!r} as its points row; change the name in the roster")
        if not (canvas_id or _cell(row, "SIS User ID").strip() or _cell(row, "SIS Login ID").strip()):
            problems.append(f"{who(row)} has no ID, SIS User ID or SIS Login ID: Canvas finds the student by name "
                            "alone, so check the import preview")
        cells = [_neutralised(student, f"{who(row)}, Student", "Canvas finds the student by ID first, so only a "
                              "row without IDs is affected", problems),
                 canvas_id]
        for column in ("SIS User ID", "SIS Login ID"):
            cells.append(_neutralised(_cell(row, column), f"{who(row)}, {column}",
                                      f"Canvas will not find the student by this {column}", problems))
        cells.append(_neutralised(_cell(row, "Section"), f"{who(row)}, Section", "Canvas does not use it to "
                                  "find the student", problems))
        cells.append("" if total is None else format_points(total))
        rows.append(cells)
    if any(total is None for _, total in pairs):
        problems.append("an empty grade cell is no score; where Canvas already holds a score for that student, the "
                        "import preview shows the change: keep or undo it there")
    return _csv_text(rows), problems


def moodle_csv(grades_rows, roster_rows, identifier_column=MOODLE_IDENTIFIER, grade_column="Grade"):
    """The text of a CSV for Moodle's "Import grades: CSV file", and the problems to tell the instructor.

    Args:
        grades_rows: the rows of grades.csv, dicts with ``submission``, ``total`` and ``max_score`` (text or numbers).
        roster_rows: dicts with ``submission`` and ``identifier_column``.
        identifier_column: the roster column that identifies the user in Moodle, written as the file's first column;
            in Moodle's import form map it ("Map from") to the matching user field ("Map to": email address,
            username, ID number or user id).
        grade_column: the header of the grade column; map it to the grade item in Moodle's form (a new grade item
            takes this name).
    Returns:
        (text, problems): the CSV text (header ``identifier_column,grade_column``, then a row per roster student in
        roster order: the total with at most 2 decimals and a '.' point, ``-`` (Moodle's "no grade") where grades.csv
        has none) and a list of lines.
    Raises:
        ExportProblem: an identifier twice in the roster, an empty identifier, an identifier a spreadsheet would
        run as a formula, a total that is not a number.

    Example: ``moodle_csv(rows, roster, grade_column="Positional encodings")`` writes the header
    ``Email address,Positional encodings``.
    """
    if not (identifier_column or "").strip():
        raise ExportProblem("the identifier column is empty: name the roster column Moodle finds users by, such as "
                            f"{MOODLE_IDENTIFIER!r}")
    if not (grade_column or "").strip():
        raise ExportProblem("the grade column's name is empty: give the assignment's name")
    if grade_column == identifier_column:
        raise ExportProblem(f"the grade column and the identifier column are both {grade_column!r}: Moodle's import "
                            "form could not tell them apart; give the grade column another name")

    def who(row):
        return f"roster student {_cell(row, identifier_column)!r}"

    pairs, max_score, problems = _match(grades_rows, roster_rows, (identifier_column,), who)
    _no_duplicates([row for row, _ in pairs], identifier_column, who,
                   "Moodle would give both grades to one user, the second replacing the first; fix the roster")
    rows = [[text_cell(identifier_column),
             _neutralised(grade_column, "the grade column", "a new grade item takes this name", problems)]]
    for row, total in pairs:
        identifier = _cell(row, identifier_column).strip()
        if not identifier:
            raise ExportProblem(f"the roster row of submission {_cell(row, SUBMISSION)!r} has an empty "
                                f"{identifier_column!r}: Moodle would give this row's grade to "
                                "the user of the row before it. Fill it in, or remove the row and enter the grade by "
                                "hand")
        if text_cell(identifier) != identifier:
            raise ExportProblem(f"{who(row)}: {identifier_column} {identifier!r} begins with {identifier[0]!r}, which "
                                "a spreadsheet runs as a formula, and with a leading apostrophe Moodle would find no "
                                "such user and stop the whole import; use another identifier column "
                                "(--identifier-column), or remove the row and enter the grade by hand")
        rows.append([identifier, MOODLE_NO_GRADE if total is None else format_points(total)])
    if max(total or 0 for _, total in pairs) > 100:
        problems.append("some grades are above 100: Moodle refuses them unless the site allows more (Site "
                        "administration > Grades > General settings: unlimitedgrades and gradepointmax)")
    elif max_score > 100:
        problems.append(f"the max score is {format_points(max_score)}: Moodle refuses a grade above 100 unless the "
                        "site allows more (Site administration > Grades > General settings: unlimitedgrades)")
    return _csv_text(rows), problems


def _csv_text(rows):
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)  # the csv module's dialect: ',' between cells, quotes where needed, CRLF
    return buffer.getvalue()


def _write(path, text):
    """Write ``text`` to ``path`` as UTF-8, whole or not at all (a temporary file, then a rename)."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    os.replace(temporary, path)


def build_parser(prog="python -m autograder lms-export"):
    """The command line of ``main``, for the kit's CLI to reuse as a subcommand's parser."""
    parser = argparse.ArgumentParser(prog=prog, description="Write the totals of grades.csv as a CSV that Canvas's "
                                     "or Moodle's gradebook imports, one row per roster student.")
    parser.add_argument("grades", metavar="GRADES_CSV", help="the grades.csv of a class run (grade ... --out OUT)")
    parser.add_argument("--roster", required=True, metavar="ROSTER_CSV",
                        help="a CSV with a 'submission' column (the name in grades.csv) and the student's LMS "
                             f"identity: Canvas's {', '.join(CANVAS_COLUMNS)}, or Moodle's identifier column")
    parser.add_argument("--format", required=True, choices=("canvas", "moodle"), help="the LMS to import into")
    parser.add_argument("--assignment", required=True, metavar="NAME",
                        help="the assignment's name (Canvas) or the grade column's name (Moodle)")
    parser.add_argument("--assignment-id", metavar="ID",
                        help="Canvas only: the existing assignment's id; without it Canvas creates a new assignment")
    parser.add_argument("--identifier-column", metavar="COL",
                        help=f"Moodle only: the roster column that identifies the user (default {MOODLE_IDENTIFIER!r})")
    parser.add_argument("--out", required=True, metavar="FILE", help="the CSV file to write")
    return parser


def main(argv=None):
    """``lms-export GRADES_CSV --roster ROSTER_CSV --format {canvas,moodle} --assignment NAME [--assignment-id ID]
    [--identifier-column COL] --out FILE``: write FILE, print the problems to stderr.

    Returns 0 once FILE is written (problems or not), 2 with a message where an ExportProblem stops the export
    (FILE is then not written). Bad options exit 2 through argparse.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.format == "canvas" and args.identifier_column is not None:
        parser.error("--identifier-column is for Moodle; Canvas's roster gives " + ", ".join(CANVAS_COLUMNS))
    if args.format == "moodle" and args.assignment_id is not None:
        parser.error("--assignment-id is for Canvas; in Moodle, map the grade column to the grade item on import")
    try:
        grades = read_grades(args.grades)
        if args.format == "canvas":
            roster = read_roster(args.roster, CANVAS_COLUMNS)
            text, problems = canvas_csv(grades, roster, args.assignment, args.assignment_id)
        else:
            identifier = args.identifier_column or MOODLE_IDENTIFIER
            roster = read_roster(args.roster, (identifier,))
            text, problems = moodle_csv(grades, roster, identifier, args.assignment)
        _write(args.out, text)
    except ExportProblem as problem:
        print(f"lms-export: {problem}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"lms-export: cannot write {args.out!r}: {error.strerror or error}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"lms-export: {line}", file=sys.stderr)
    students = len(roster)
    print(f"Wrote {args.out}: {students} student{'s' if students != 1 else ''} for {args.format}"
          + (f", {len(problems)} problem{'s' if len(problems) != 1 else ''} listed above" if problems else "")
          + ".", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
