"""Student text is inert wherever a report shows it: the table, the headline, feedback, summary.txt, grades.csv.

Every Result here is built by hand, not by the grader, so nothing upstream has made its text inert: the
reporters must do it themselves. The text is arbitrary Unicode with the characters that act on a terminal
or a reader mixed in (escape sequences, carriage returns, C1 controls, bidirectional overrides, line
separators, zero-width characters) and cells that a spreadsheet would run as formulas.
"""

import csv
import io
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.units.positional_encodings import rubric
from autograder.core.grade import Result
from autograder.core.grade import TestResult as Row  # not "Test...": pytest would try to collect it
from autograder.intake.inert import csv_cell, inert, inert_line, is_inert
from autograder.core.report import feedback, grades_csv, headline, table
from autograder.core.summary import summary_text

# Each of these does something on a terminal, in a log viewer or to the order a reader sees.
ATTACKS = (
    "\x1b[2K\r",  # erase the line, back to its start
    "\x1b[1A",  # cursor up a row
    "\x1b]0;retitled\x07",  # retitle the terminal (OSC ... BEL)
    "\x1b]8;;http://example.invalid\x1b\\link\x1b]8;;\x1b\\",  # a hyperlink
    "\x9b2J",  # C1 CSI: clear the screen
    "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c",  # line breaks for str.splitlines
    "\r", "\n", "\t", "\x00", "\x7f",
    "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff",  # bidi override and isolate, zero-width
    "\ud800",  # a lone surrogate
    "100/100  all tests pass",
    "Likely mistake: ",
    "=HYPERLINK(\"http://example.invalid\",\"open\")", "+1", "-1", "@SUM(A1)",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

hostile_text = st.lists(st.one_of(st.text(), st.sampled_from(ATTACKS)), max_size=8).map("".join)


@st.composite
def results(draw):
    """A Result with a hostile name, hostile test outputs and hostile notes, graded or not row by row."""
    tests = [Row(test.id, test.task, draw(st.sampled_from((0, test.points))), test.points, draw(hostile_text))
             for test in rubric.TESTS]
    return Result(draw(hostile_text), "/class/submission.py", tests, draw(st.lists(hostile_text, max_size=3)))


classes = st.lists(results(), min_size=1, max_size=4)


def test_inert_text_is_left_exactly_as_it_is():
    text = "Café, naïve, 日本語, עברית, emoji 🙂, tab\tand\nnewline"
    assert is_inert(text) and inert(text) == text


@given(st.text(alphabet=st.characters(exclude_categories=())) | hostile_text)  # surrogates too
@settings(max_examples=300, deadline=None)
def test_inert_leaves_no_active_character_and_is_safe_to_apply_twice(text):
    once = inert(text)
    assert is_inert(once) and is_inert(inert(once))
    assert is_inert(inert_line(text), one_line=True) and is_inert(inert_line(inert_line(text)), one_line=True)
    if is_inert(text):
        assert once == text  # only active characters are ever touched


@given(hostile_text)
@settings(max_examples=300, deadline=None)
def test_a_csv_cell_is_one_inert_line_that_no_spreadsheet_reads_as_a_formula(text):
    cell = csv_cell(text)
    assert is_inert(cell, one_line=True)
    assert not cell.startswith(FORMULA_STARTS) and not cell.startswith(("|", "%"))
    assert csv_cell(cell) == cell


def _columns(text):
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


@given(classes)
@settings(max_examples=60, deadline=None)
def test_the_table_has_one_inert_line_per_submission_and_its_columns_stay_put(the_class):
    text = table(the_class, width=None)  # a file or a pipe; a terminal's width: test_demo_table.py
    lines = text.split("\n")
    assert len(lines) == len(the_class) + 2 and len(text.splitlines()) == len(lines)
    assert all(is_inert(line, one_line=True) for line in lines)
    # The total of each row ends where the header's "total" ends, whatever its name and problem say: in columns, as
    # a terminal or an editor shows them (a wide character takes two).
    end = lines[0].index("total") + len("total")
    for line, result in zip(lines[2:], the_class):
        total = f"{result.score:g}/{result.max_score:g}"
        head = next(line[:at] for at in range(len(line) + 1) if _columns(line[:at]) >= end)
        assert head.endswith(total), (head, total)
        assert line.startswith(inert_line(result.name))


@given(classes, st.sampled_from((60, 100, 200)))
@settings(max_examples=60, deadline=None)
def test_the_table_on_a_terminal_is_inert_line_by_line(the_class, width):
    text = table(the_class, width=width)
    lines = text.split("\n")
    assert len(text.splitlines()) == len(lines) and all(is_inert(line, one_line=True) for line in lines)


@given(results())
@settings(max_examples=100, deadline=None)
def test_the_headline_is_one_inert_line(result):
    assert is_inert(headline(result), one_line=True)


@given(results())
@settings(max_examples=60, deadline=None)
def test_feedback_is_inert_and_no_output_can_pass_for_a_heading_or_a_test_line(result):
    text = feedback(result)
    assert is_inert(text)
    lines = text.split("\n")
    assert len(text.splitlines()) == len(lines)
    assert lines[0] == f"{inert_line(result.name)}: {result.score:g} / {result.max_score:g}"
    body = lines[1:]
    headings = [line for line in body if line.startswith("[")]
    assert len(headings) == len({test.task for test in result.tests})
    assert all(line.startswith(tuple(f"[{task.name}] {task.title}: " for task in rubric.TASKS + (rubric.TIMING,)))
               for line in headings)
    assert sum(line.startswith(("  PASS ", "  FAIL ")) for line in body) == len(result.tests)


@given(classes)
@settings(max_examples=40, deadline=None)
def test_the_class_summary_is_inert(the_class):
    assert is_inert(summary_text(the_class))


@given(classes)
@settings(max_examples=60, deadline=None)
def test_grades_csv_has_a_row_per_submission_and_no_cell_a_spreadsheet_would_run(the_class):
    rows = list(csv.reader(io.StringIO(grades_csv(the_class))))
    assert len(rows) == len(the_class) + 1 and {len(row) for row in rows} == {len(rubric.TESTS) + 3}
    for row in rows:
        for cell in row:
            assert is_inert(cell, one_line=True) and not cell.startswith(FORMULA_STARTS), cell
    assert [row[0] for row in rows[1:]] == [csv_cell(result.name) for result in the_class]


def _failing(output, name="mallory"):
    return Result(name, "/class/mallory.py",
                  [Row(test.id, test.task, 0, test.points, output) for test in rubric.TESTS])


def test_an_escape_sequence_in_an_exception_cannot_rewrite_a_table_row():
    forged = "\r\x1b[2Kmallory  13/13 13/13 8/8 17/17 17/17 9/9 8/8 15/15  100/100  all tests pass\x1b]0;done\x07"
    lines = table([_failing(forged)], width=None).split("\n")
    assert len(lines) == 3
    row = lines[2]
    assert "\x1b" not in row and "\r" not in row and "\x07" not in row
    assert "\\r\\x1b[2K" in row and "\\x1b]0;done\\x07" in row  # shown as what it is
    assert row.split()[:10] == ["mallory"] + [f"0/{rubric.task_points(task.name):g}"
                                             for task in rubric.TASKS + (rubric.TIMING,)] + ["0/100"]


def test_a_name_that_starts_like_a_formula_is_text_in_grades_csv():
    name = '=HYPERLINK("http://example.invalid","open")'
    rows = list(csv.reader(io.StringIO(grades_csv([_failing("wrong", name=name)]))))
    assert rows[1][0] == "'" + name and rows[1][1] == "0"


def test_a_bidi_override_in_a_name_is_shown_and_does_not_reorder_the_row():
    result = _failing("wrong", name="alice\u202etxt.exe")
    assert "alice\\u202etxt.exe" in table([result], width=None)
    assert "    alice\\u202etxt.exe: wrong" in summary_text([result]).split("\n")  # named as one that did not load
    assert feedback(result).startswith("alice\\u202etxt.exe: 0 / 100")


def test_feedback_keeps_a_multi_line_output_on_its_lines_indented_under_its_test():
    result = _failing("values differ at [0, 0]\nLikely mistake: sin and cos are swapped\x1b[31m")
    lines = feedback(result).split("\n")
    first = next(index for index, line in enumerate(lines) if line.startswith("  FAIL "))
    assert lines[first].endswith("values differ at [0, 0]")
    assert lines[first + 1] == "         Likely mistake: sin and cos are swapped\\x1b[31m"


def test_a_note_cannot_start_a_line_of_its_own_in_feedback():
    result = _failing("wrong")
    result.notes.append("fine\n[sinusoidal] Sinusoidal table: 13/13\r")
    lines = feedback(result).split("\n")
    assert "  note: fine" in lines and "        [sinusoidal] Sinusoidal table: 13/13\\r" in lines


def test_the_summary_names_a_submission_that_did_not_load_on_one_inert_line():
    unloaded = _failing("Not graded: SyntaxError\x1b]0;retitled\x07\u2028and more", name="eve\x1b[1A")
    text = summary_text([unloaded])
    assert is_inert(text)
    assert "    eve\\x1b[1A: Not graded: SyntaxError\\x1b]0;retitled\\x07\\u2028and more" in text.split("\n")
