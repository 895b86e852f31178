"""Turn Results into what people read: a table, feedback, Gradescope JSON, grades.csv.

Every piece of text a Result carries (its name, the tests' outputs, the notes)
may come from a student, so each is shown through ``autograder.intake.inert``: on one
line in the table and the headline, escaped but multi-line in the feedback, and
never as a formula in grades.csv. The grader makes a job's text inert already;
doing it again here keeps a report safe for a Result built any other way.
"""

import csv
import io
import os
import shutil
import sys
import threading
import unicodedata
from pathlib import Path

from autograder.core import voice
from autograder.core.units import rubric_of
from autograder.intake.inert import csv_cell, inert, inert_line


def _points(value):
    return f"{value:g}"


def _first_line(text):
    return inert_line(str(text).split("\n", 1)[0])


def headline(result):
    """The one thing to tell about a submission in a class table, on one line and inert.

    The grader's parts are read from each test's typed fields (autograder/core/voice.py), never from its text: a
    line of the student's inside a test's output ("Likely mistake: ...") is never taken for a named mistake."""
    failed = [test for test in result.tests if not test.passed]
    if not failed:
        return "all tests pass"
    if all(test.output == failed[0].output for test in failed) and len(failed) == len(result.tests):
        return _first_line(failed[0].output)
    for test in failed:
        if test.diagnosis.mistakes:
            return f"{inert_line(test.task)}: {inert_line(test.diagnosis.mistakes[0])}"
    # A timing test waiting for its path to be correct says nothing new about the submission.
    own = [test for test in failed if not (test.task == "timing"
                                            and str(test.output).startswith("Not timed: every correctness test"))]
    if own and all(test.kind == voice.NOT_IMPLEMENTED for test in own):
        return "not implemented: " + ", ".join(dict.fromkeys(inert_line(test.task) for test in own))
    first = failed[0]
    return f"{inert_line(first.task)}: {_first_line(first.output)}"


def _cells(text):
    """The columns ``text`` takes on a terminal: a wide (East Asian) character two, a combining mark none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _fit(word, width):
    """The longest head of ``word`` that fits ``width`` columns (one character at least), and the rest."""
    used = 0
    for at, character in enumerate(word):
        used += _cells(character)
        if used > width and at:
            return word[:at], word[at:]
    return word, ""


def wrap(text, width):
    """``text`` on lines of at most ``width`` columns, broken at spaces; a word longer than a line is cut, never
    left out, so the lines hold every word of ``text`` in order."""
    lines, line = [], ""
    for word in filter(None, text.split(" ")):  # at spaces only: a name's other characters are kept as they are
        joined = f"{line} {word}" if line else word
        if _cells(joined) <= width:
            line = joined
            continue
        if line:
            lines.append(line)
        while _cells(word) > width:
            head, word = _fit(word, width)
            lines.append(head)
        line = word
    return lines + [line] if line or not lines else lines


def _pack(entries, width):
    """``entries`` side by side, two spaces apart, on lines of at most ``width`` columns; one too long is wrapped."""
    lines = []
    for entry in entries:
        if lines and _cells(lines[-1]) + 2 + _cells(entry) <= width:
            lines[-1] += "  " + entry
        else:
            lines.extend(wrap(entry, width))
    return lines


PROBLEM_INDENT = "    "  # a row's first problem, under the row, where it does not fit beside it


def output_width():
    """The columns the output may take: COLUMNS where it is set to a number (a person's own choice, also for a
    file or a pipe), else the terminal's width where the output is a terminal, else None (no limit)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isascii() and columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def table(results, width=None):
    """A grade table: a row per submission, a column per task, the total, and what went wrong first, whole.

    ``width``: the columns the table may take. By default COLUMNS where it is set, else the terminal's width where
    the output is a terminal, else none: in a file or a pipe each submission is one line, for grep and scripts.
    Where the task names do not fit as column headings, the columns are numbered and a key above names each; where
    the first problems do not fit beside their rows, each is written under its row, wrapped, never cut (it names
    the mistake); a name too long for its column goes on a line of its own above its row.
    """
    results = list(results)
    rubric = rubric_of(results)
    if width is None:
        width = output_width()
    names = [task.name for task in rubric.TASKS + (rubric.TIMING,)]
    shown = [inert_line(result.name) for result in results]  # a name cannot move the cursor or end the row
    points = [[f"{_points(result.task_score(n))}/{_points(rubric.task_points(n))}" for n in names]
              for result in results]
    totals = [f"{_points(result.score)}/{_points(result.max_score)}" for result in results]
    problems = [" ".join(headline(result).split()) for result in results]

    def columns(headings):
        return [max([5, _cells(heading)] + [len(row[i]) for row in points]) for i, heading in enumerate(headings)]

    def row_width(widths):
        return sum(widths) + 2 * len(widths) + 9  # each column with the two spaces before it, then the total's 9

    longest = max([10] + [_cells(name) for name in shown])
    headings, key = names, []
    # Numbered columns where the names do not fit beside the submissions' names (those up to 30 columns wide).
    if width is not None and min(longest, 30) + 2 + row_width(columns(names)) > width:
        headings = [f"#{number}" for number in range(1, len(names) + 1)]
        key = _pack([f"{heading} {name}" for heading, name in zip(headings, names)], width)
    widths = columns(headings)
    name_width = longest if width is None else max(10, min(longest, width - 2 - row_width(widths)))
    prefix_width = name_width + 2 + row_width(widths) + 2
    beside = width is None or all(prefix_width + _cells(problem) <= width for problem in problems)

    def pad(text, size):
        return text + " " * max(0, size - _cells(text))

    header = (pad("submission", name_width) + "  " + "  ".join(f"{h:>{w}}" for h, w in zip(headings, widths))
              + "    total" + ("  first problem" if beside else ""))
    lines = key + [header] + ([] if beside else [PROBLEM_INDENT + "first problem, under each row"])
    lines.append("-" * (_cells(header) if width is None else min(width, _cells(header))))
    for name, row, total, problem in zip(shown, points, totals, problems):
        if _cells(name) > name_width:  # on a line of its own, whole, and the row under it
            lines.extend(wrap(name, width) if width else [name])
            name = ""
        cells = "  ".join(f"{cell:>{w}}" for cell, w in zip(row, widths))
        row_text = f"{pad(name, name_width)}  {cells}  {total:>7}"
        if beside:
            lines.append(f"{row_text}  {problem}")
        else:
            lines.append(row_text)
            lines.extend(PROBLEM_INDENT + line for line in wrap(problem, max(20, width - len(PROBLEM_INDENT))))
    return "\n".join(lines)


def feedback(result):
    """Everything a student should read about one submission, test by test, its text inert.

    A note or a test's output keeps its lines, each indented under its own heading, so none of them can pass
    for a heading or a score line of its own.
    """
    rubric = rubric_of([result])
    lines = [f"{inert_line(result.name)}: {_points(result.score)} / {_points(result.max_score)}"]
    for note in result.notes:
        lines.append("  note: " + inert(note).replace("\n", "\n        "))
    if getattr(result, "cases_from", ""):
        lines.append("  " + inert(result.cases_from).replace("\n", "\n  "))
    current = None
    for test in result.tests:
        if test.task != current:
            current = test.task
            task = rubric.TASK_BY_NAME[current]
            lines.append(f"\n[{inert_line(current)}] {task.title}: {_points(result.task_score(current))}/"
                         f"{_points(rubric.task_points(current))}")
        mark = "PASS" if test.passed else "FAIL"
        body = inert(test.output).replace("\n", "\n         ")
        lines.append(f"  {mark} {inert_line(test.id)} ({_points(test.score)}/{_points(test.max_score)}): {body}")
    return "\n".join(lines)


def write_atomically(path, text):
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def grades_csv(results):
    """grades.csv: a row per submission, its total and each rubric test's points; names can never be formulas."""
    results = list(results)
    rubric = rubric_of(results)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([csv_cell(name) for name in ["submission", "total", "max_score"] + [t.id for t in rubric.TESTS]])
    for result in results:
        scores = {test.id: _points(test.score) for test in result.tests}
        # The numbers are written by _points (never text of a student's), so only the name needs csv_cell.
        writer.writerow([csv_cell(result.name), _points(result.score), _points(result.max_score)]
                        + [scores.get(test.id, "0") for test in rubric.TESTS])
    return buffer.getvalue()
