"""The demo says its unit, and its table fits the terminal with each row's named mistake whole (issue 34, point 6).

On a 120-column terminal the third unit's rows wrapped and the named mistake, the demo's point, was cut to 20
characters. Now the table takes the terminal's width: task names that do not fit
as headings become numbered columns with a key, and a first problem that does not fit beside its row is written
under it, wrapped, never cut. Read here from a real run of `python -m autograder demo` on a pseudo-terminal 100
columns wide, and over generated names and messages.
"""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.grade import Result
from autograder.core.grade import TestResult as Row  # not "Test...": pytest would try to collect it
from autograder.core.report import PROBLEM_INDENT, headline, table
from autograder.intake.inert import inert_line, is_inert
from autograder.ways_in.demo import mistakes_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNITS = [unit for unit in units.all_units() if mistakes_of(unit)]


def _demo(unit, columns):
    """(what the demo printed on a terminal ``columns`` wide, what it wrote to stderr): a real pseudo-terminal,
    its size set as a terminal emulator sets it, so that the demo finds its width as it does for a person."""
    environment = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    with subprocess.Popen([sys.executable, "-m", "autograder", "demo", "--unit", unit.name, "--feedback"], cwd=ROOT,
                          env=environment, stdin=subprocess.DEVNULL, stdout=terminal,
                          stderr=subprocess.PIPE) as process:
        os.close(terminal)
        errors = []
        reader = threading.Thread(target=lambda: errors.append(process.stderr.read()), daemon=True)
        reader.start()
        shown = bytearray()
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal is closed: the demo is done
                break
            if not chunk:
                break
            shown += chunk
        os.close(main)
        assert process.wait(timeout=500) == 0
        reader.join(timeout=60)
    return shown.decode("utf-8").replace("\r\n", "\n"), errors[0].decode("utf-8")


def _named(feedback, name):
    """What submission ``name``'s feedback (never cut) names as its mistake, whole: the words after "Likely
    mistake:", or where no test names one, the first line of the first failed test's message."""
    block = re.search(rf"^{re.escape(name)}: \d+ / \d+\n(.*?)(?=^\S+: \d+ / \d+$|\Z)", feedback,
                      re.MULTILINE | re.DOTALL).group(1)
    likely = re.search(r"Likely mistake: (.*)", block)
    return (likely or re.search(r"FAIL \S+ \([\d.]+/[\d.]+\): (.*)", block)).group(1).strip()


def _demo_in_a_file(unit, columns):
    """(stdout, stderr) of the demo written to a pipe, as a log or ``| less`` takes it, with COLUMNS set."""
    environment = {**{key: value for key, value in os.environ.items() if key != "LINES"}, "COLUMNS": str(columns)}
    run = subprocess.run([sys.executable, "-m", "autograder", "demo", "--unit", unit.name, "--feedback"], cwd=ROOT,
                         env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=500)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, run.stderr


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_the_demo_on_100_columns_says_its_unit_and_shows_every_named_mistake_whole(unit):
    _shows_every_named_mistake_whole_in_100_columns(unit, *_demo(unit, 100))


def test_the_demo_with_columns_100_fits_them_in_a_file_too():
    """COLUMNS is a person's choice of width, also where the output goes to a file or a pipe (the third unit: the
    longest task names and mistakes)."""
    _shows_every_named_mistake_whole_in_100_columns(units.get("long_context"),
                                                    *_demo_in_a_file(units.get("long_context"), 100))


def _shows_every_named_mistake_whole_in_100_columns(unit, stdout, stderr):
    assert f"sample class of the unit {unit.name} ({unit.title})" in " ".join(stderr.split())
    assert all(len(line) <= 100 for line in stderr.split("\n")[:4])
    lines = stdout.rstrip("\n").split("\n")
    start = next(at for at, line in enumerate(lines) if line.startswith(("#1 ", "submission ")))
    feedback, shown = "\n".join(lines[:start]), lines[start:]
    assert all(len(line) <= 100 for line in shown), [line for line in shown if len(line) > 100]
    for task in unit.rubric.TASKS:  # every task is named, in a heading or the key
        assert re.search(rf"(^|\s){task.name}(\s|$)", "\n".join(shown[:4]), re.MULTILINE), task.name
    for mistake in mistakes_of(unit):
        row = next(at for at, line in enumerate(shown) if line.startswith(mistake.name + " "))
        under = []
        for line in shown[row + 1:]:
            if not line.startswith(PROBLEM_INDENT):
                break
            under.append(line[len(PROBLEM_INDENT):])
        said = " ".join(under) or shown[row].split("  ")[-1]
        whole = f"{mistake.task}: {_named(feedback, mistake.name)}"
        assert " ".join(said.split()) == " ".join(whole.split()), (said, whole)
        assert mistake.says in said


# --- the table over generated names and messages ---------------------------------------------------------------

RUBRIC = units.get("long_context").rubric
# Words as messages hold them, hostile characters, wide scripts and words longer than any line.
words = st.one_of(st.from_regex(r"[a-z_()*/.:,'0-9]{1,14}", fullmatch=True), st.text(min_size=1, max_size=12),
                  st.sampled_from(["\x1b[2K", "\u202e", "日本語の名前", "e\u0301", "x" * 130]))
messages = st.lists(words, min_size=1, max_size=40).map(" ".join)


@st.composite
def results(draw):
    """A Result of the third unit: a name, and a named mistake in one task (or every test passing)."""
    failing = draw(st.sampled_from([None] + [task.name for task in RUBRIC.TASKS]))
    tests = [Row(test.id, test.task, 0 if test.task == failing else test.points, test.points,
                 f"wrong.\nLikely mistake: {draw(messages)}" if test.task == failing else "Passed.")
             for test in RUBRIC.TESTS]
    name = draw(st.one_of(st.from_regex(r"[a-z_0-9]{1,30}", fullmatch=True), messages))
    return Result(name, "/class/x.py", tests, unit="long_context")


def _columns(text):
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _upto(line, column):
    """The head of ``line`` that takes ``column`` columns on a terminal."""
    for at in range(len(line) + 1):
        if _columns(line[:at]) >= column:
            return line[:at]
    return line


@settings(max_examples=80, deadline=None)
@given(st.lists(results(), min_size=1, max_size=5), st.integers(90, 220))
def test_a_table_fits_its_width_and_keeps_each_first_problem_whole(the_class, width):
    text = table(the_class, width=width)
    lines = text.split("\n")
    assert len(text.splitlines()) == len(lines) and all(is_inert(line, one_line=True) for line in lines)
    assert all(_columns(line) <= width for line in lines), [line for line in lines if _columns(line) > width]
    # Each submission alone: its problem whole, beside its row or under it, and its total under "total".
    for result in the_class:
        alone = table([result], width=width).split("\n")
        header = next(at for at, line in enumerate(alone) if line.startswith("submission"))
        end = alone[header].index("total") + len("total")
        total = f"{result.score:g}/{result.max_score:g}"
        row = next(at for at, line in enumerate(alone) if at > header + 1 and _upto(line, end).endswith(total))
        problem = " ".join(headline(result).split())
        under = [line[len(PROBLEM_INDENT):] for line in alone[row + 1:]]
        said = "".join(under) if under else alone[row][len(_upto(alone[row], end)) + 2:]
        assert said.replace(" ", "") == problem.replace(" ", ""), (said, problem)
        assert inert_line(result.name).replace(" ", "") in "".join(alone[header + 2:row + 1]).replace(" ", "")


def test_with_no_width_each_submission_is_one_line_as_in_a_file():
    result = Result("alice", "/class/alice.py", [Row(test.id, test.task, 0, test.points, "Likely mistake: " + "w " * 90)
                                                 for test in RUBRIC.TESTS], unit="long_context")
    lines = table([result], width=None).split("\n")
    assert len(lines) == 3 and lines[2].startswith("alice ") and lines[2].endswith("w " * 89 + "w")
