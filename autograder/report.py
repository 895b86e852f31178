"""Turn Results into what people read: a table, feedback, Gradescope JSON, grades.csv."""

import csv
import io
import os
import re
import shutil
import sys
import threading
from pathlib import Path

from autograder import rubric


def _short(text, width):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _points(value):
    return f"{value:g}"


def headline(result):
    """The one thing to tell about a submission in a class table."""
    failed = [test for test in result.tests if not test.passed]
    if not failed:
        return "all tests pass"
    if all(test.output == failed[0].output for test in failed) and len(failed) == len(result.tests):
        return failed[0].output.split("\n")[0]
    for test in failed:
        match = re.search(r"Likely mistake: (.*)", test.output)
        if match:
            return f"{test.task}: {match.group(1)}"
    # A timing test waiting for its path to be correct says nothing new about the submission.
    own = [test for test in failed if not test.output.startswith("Not timed: every correctness test")]
    if own and all("not implemented yet" in test.output for test in own):
        return "not implemented: " + ", ".join(dict.fromkeys(test.task for test in own))
    first = failed[0]
    return f"{first.task}: {first.output.splitlines()[0]}"


def table(results, width=None):
    """A grade table: a row per submission, a column per task, the total, and what went wrong first.

    On a terminal the last column is cut to the terminal's width; in a file or a pipe it is whole.
    """
    if width is None and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    names = [task.name for task in rubric.TASKS + (rubric.TIMING,)]
    widths = [max(5, len(n)) for n in names]
    name_width = max([10] + [len(result.name) for result in results])
    header = (f"{'submission':<{name_width}}  " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths))
              + "    total  first problem")
    lines = [header, "-" * len(header)]
    for result in results:
        cells = "  ".join(f"{_points(result.task_score(n)) + '/' + _points(rubric.task_points(n)):>{w}}"
                          for n, w in zip(names, widths))
        total = f"{_points(result.score)}/{_points(result.max_score)}"
        prefix = f"{result.name:<{name_width}}  {cells}  {total:>7}  "
        problem = headline(result)
        lines.append(prefix + (_short(problem, max(20, width - len(prefix))) if width else " ".join(problem.split())))
    return "\n".join(lines)


def feedback(result):
    """Everything a student should read about one submission, test by test."""
    lines = [f"{result.name}: {_points(result.score)} / {_points(result.max_score)}"]
    for note in result.notes:
        lines.append(f"  note: {note}")
    current = None
    for test in result.tests:
        if test.task != current:
            current = test.task
            task = rubric.TASK_BY_NAME[current]
            lines.append(f"\n[{current}] {task.title}: {_points(result.task_score(current))}/"
                         f"{_points(rubric.task_points(current))}")
        mark = "PASS" if test.passed else "FAIL"
        body = test.output.replace("\n", "\n         ")
        lines.append(f"  {mark} {test.id} ({_points(test.score)}/{_points(test.max_score)}): {body}")
    return "\n".join(lines)


def write_atomically(path, text):
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def grades_csv(results):
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["submission", "total", "max_score"] + [test.id for test in rubric.TESTS])
    for result in results:
        scores = {test.id: _points(test.score) for test in result.tests}
        writer.writerow([result.name, _points(result.score), _points(result.max_score)]
                        + [scores.get(test.id, "0") for test in rubric.TESTS])
    return buffer.getvalue()
