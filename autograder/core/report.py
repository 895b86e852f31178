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
import re
import shutil
import sys
import threading
from pathlib import Path

from autograder.core.units import rubric_of
from autograder.intake.inert import csv_cell, inert, inert_line


def _short(text, width):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _points(value):
    return f"{value:g}"


def _first_line(text):
    return inert_line(str(text).split("\n", 1)[0])


def headline(result):
    """The one thing to tell about a submission in a class table, on one line and inert."""
    failed = [test for test in result.tests if not test.passed]
    if not failed:
        return "all tests pass"
    if all(test.output == failed[0].output for test in failed) and len(failed) == len(result.tests):
        return _first_line(failed[0].output)
    for test in failed:
        match = re.search(r"Likely mistake: (.*)", str(test.output))
        if match:
            return f"{inert_line(test.task)}: {_first_line(match.group(1))}"
    # A timing test waiting for its path to be correct says nothing new about the submission.
    own = [test for test in failed if not str(test.output).startswith("Not timed: every correctness test")]
    if own and all("not implemented yet" in str(test.output) for test in own):
        return "not implemented: " + ", ".join(dict.fromkeys(inert_line(test.task) for test in own))
    first = failed[0]
    return f"{inert_line(first.task)}: {_first_line(first.output)}"


def table(results, width=None):
    """A grade table: a row per submission, a column per task, the total, and what went wrong first.

    On a terminal the last column is cut to the terminal's width; in a file or a pipe it is whole.
    """
    results = list(results)
    rubric = rubric_of(results)
    if width is None and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    names = [task.name for task in rubric.TASKS + (rubric.TIMING,)]
    widths = [max(5, len(n)) for n in names]
    shown = [inert_line(result.name) for result in results]  # a name cannot move the cursor or end the row
    name_width = max([10] + [len(name) for name in shown])
    header = (f"{'submission':<{name_width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths))
              + "    total  first problem")
    lines = [header, "-" * len(header)]
    for result, name in zip(results, shown):
        cells = "  ".join(f"{_points(result.task_score(n)) + '/' + _points(rubric.task_points(n)):>{w}}"
                          for n, w in zip(names, widths))
        total = f"{_points(result.score)}/{_points(result.max_score)}"
        prefix = f"{name:<{name_width}}  {cells}  {total:>7}  "
        problem = headline(result)
        lines.append(prefix + (_short(problem, max(20, width - len(prefix))) if width else " ".join(problem.split())))
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
