"""The nbgrader course: its source notebook, built from the lesson text and the reference.

``autograder/units/<unit>/lesson.py`` holds a unit's prose, demonstrations, pictures and
visible checks, in jupytext's percent format; ``solutions/<unit>.py`` holds every
answer. ``course_files()`` joins them into nbgrader's source notebook, each
solution cell filled with the reference function (its ``### BEGIN SOLUTION``
region intact, for ``nbgrader generate_assignment`` to clear) and each test
cell given the rubric's points and a hidden region that runs the kit's hidden
cases (``autograder.ways_in.nbgrader_bridge.hidden_check``). A ``[given: UNIT]`` cell,
left empty in the lesson, becomes a plain code cell holding the code the unit borrows
from UNIT (its rubric's ``BORROWS``, ``Unit.given_code``).
"""

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.core import parsing

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "assignments"


def source_folder(unit):
    """nbgrader's source folder of the unit's assignment (the assignment is named after the unit)."""
    return COURSE / "source" / unit.name


def notebook_name(unit):
    return f"{unit.name}.ipynb"

_HEADER = re.compile(r"^# %%(?:\s+\[(?P<kind>\w+)(?::\s*(?P<name>\w+))?\])?\s*$")
KINDS = ("code", "markdown", "demo", "solution", "tests", "given")
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


class LessonError(ValueError):
    """The lesson text does not fit the rubric or the reference; the message says where."""


@dataclass
class LessonCell:
    kind: str  # one of KINDS
    name: str  # the function of a solution cell, the test of a tests cell, the demo's name, the unit a given cell
    # holds the borrowed code of
    body: str
    line: int  # where its header is in the lesson, for messages


def parse_lesson(text):
    """The cells of a percent-format lesson; text before the first ``# %%`` is a comment for editors."""
    cells, current = [], None
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            kind = header.group("kind") or "code"
            if kind not in KINDS:
                raise LessonError(f"lesson line {number}: unknown cell kind [{kind}]")
            if kind in ("demo", "solution", "tests", "given") and not header.group("name"):
                raise LessonError(f"lesson line {number}: a [{kind}] cell needs a name: [{kind}: NAME]")
            current = LessonCell(kind, header.group("name") or "", "", number)
            cells.append(current)
        elif current is not None:
            current.body += line + "\n"
    for cell in cells:
        body = cell.body.strip("\n")
        if cell.kind == "markdown":
            body = "\n".join(re.sub(r"^# ?", "", line) for line in body.splitlines())
        cell.body = body
    return cells


def grade_id(cell):
    """nbgrader's id of a notebook cell (its JSON), or None: a solution cell's id is its function's name."""
    return ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")


def filled_notebook(notebook, functions, code_text, *, cells=None, skip=()):
    """A copy of ``notebook`` (a released or source notebook's JSON) as a student hands it in: the solution cell of
    each name in ``functions`` holding that function from ``code_text`` (a whole file of them, the reference or a
    submission), or the text ``cells`` gives for it; the cells of ``skip`` left as they are."""
    filled, cells = json.loads(json.dumps(notebook)), cells or {}
    for cell in filled["cells"]:
        name = grade_id(cell)
        if name in functions and name not in skip:
            cell["source"] = cells[name] if name in cells else function_source(code_text, name)
    return filled


def function_source(reference, name):
    """The source of the top-level function or class ``name`` in ``reference``."""
    lines = reference.splitlines()
    for node in parsing.parse(reference).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            end = node.end_lineno
            # The AST ends at the last statement; an indented comment after it (### END SOLUTION) belongs too.
            while end < len(lines) and lines[end].startswith((" ", "\t")):
                end += 1
            return "\n".join(lines[node.lineno - 1:end])
    raise LessonError(f"solutions/ defines no function or class {name}")


def test_cell_source(test, visible):
    """A graded cell: what it checks, the visible checks, then the hidden region."""
    lines = [f'"""{test.id} ({test.points} points): {test.checks}."""', visible,
             f'print("The visible checks of {test.id} pass; the grader runs more cases.")',
             BEGIN_HIDDEN,
             "from autograder.ways_in.nbgrader_bridge import hidden_check",
             "",
             f'hidden_check("{test.id}")',
             END_HIDDEN]
    return "\n".join(line for line in lines if line is not None)


def _nbgrader(grade_id, *, grade=False, solution=False, locked=False, points=None):
    metadata = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                "solution": solution, "task": False}
    if points is not None:
        metadata["points"] = points
    return {"nbgrader": metadata}


def _check_against_rubric(rubric, cells):
    solutions = [cell.name for cell in cells if cell.kind == "solution"]
    given = [cell for cell in cells if cell.kind == "given"]
    borrowed = getattr(rubric, "BORROWS", {})
    for missing in sorted(set(borrowed) - {cell.name for cell in given}):
        raise LessonError(f"the lesson has no [given: {missing}] cell, where the code it borrows from {missing} goes")
    for cell in given:
        if cell.name not in borrowed or [other.name for other in given].count(cell.name) > 1:
            raise LessonError(f"lesson line {cell.line}: [given: {cell.name}] names a unit the rubric's BORROWS does "
                              "not, or one named twice")
        first_solution = next((other.line for other in cells if other.kind == "solution"), None)
        if cell.body or first_solution is not None and cell.line > first_solution:
            raise LessonError(f"lesson line {cell.line}: a [given: {cell.name}] cell is left empty (the build writes "
                              "the borrowed code there), before the first solution cell that may call it")
    tests = [cell.name for cell in cells if cell.kind == "tests"]
    for missing in sorted(set(rubric.TASK_OF_FUNCTION) - set(solutions)):
        raise LessonError(f"the lesson has no [solution: {missing}] cell")
    for missing in sorted(set(rubric.TEST_BY_ID) - set(tests)):
        raise LessonError(f"the lesson has no [tests: {missing}] cell")
    for name in {name for name in solutions + tests if (solutions + tests).count(name) > 1}:
        raise LessonError(f"the lesson has {name} more than once")
    for name in tests:
        if name not in rubric.TEST_BY_ID:
            raise LessonError(f"[tests: {name}] is not a test of the rubric")
    timed = {path.test: set(path.requires) for path in rubric.TIMED_PATHS}
    seen_tasks = set()
    for cell in cells:
        if cell.kind == "solution":
            seen_tasks.add(rubric.TASK_OF_FUNCTION.get(cell.name))
        elif cell.kind == "tests":
            needed = timed.get(cell.name, {rubric.TEST_BY_ID[cell.name].task})
            if not needed <= seen_tasks:
                raise LessonError(f"lesson line {cell.line}: the tests of {cell.name} come before the solution "
                                  f"cells of {', '.join(sorted(needed - seen_tasks))}")


def _fill_rubric(rubric, text):
    """The lesson's prose with the rubric's figures put in: points, limits and the timing bands."""
    from autograder.core.timing import share_words

    bands = ", ".join(f"{share_words(share)} within {limit:g}x" for limit, share in rubric.TIMING_BANDS)
    text = text.replace("{timing_bands}", bands)
    text = re.sub(r"\{points:(\w+)\}", lambda match: f"{rubric.task_points(match.group(1)):g}", text)
    return re.sub(r"\{rubric:(\w+)\}", lambda match: f"{getattr(rubric, match.group(1)):g}", text)


def build_notebook(unit, lesson_text, reference_text):
    """nbgrader's source notebook (a dict in nbformat 4.5) for a unit's lesson and reference."""
    rubric = unit.rubric
    cells = parse_lesson(lesson_text)
    _check_against_rubric(rubric, cells)
    notebook_cells = []
    for number, cell in enumerate(cells):
        if cell.kind == "markdown":
            text = _fill_rubric(rubric, cell.body)
            notebook_cells.append({"cell_type": "markdown", "id": f"text-{number:02d}", "metadata": {},
                                   "source": text})
            continue
        if cell.kind == "solution":
            source, metadata = function_source(reference_text, cell.name), _nbgrader(cell.name, solution=True)
        elif cell.kind == "tests":
            test = rubric.TEST_BY_ID[cell.name]
            source = test_cell_source(test, cell.body or None)
            metadata = _nbgrader(test.id, grade=True, locked=True, points=test.points)
        elif cell.kind == "demo":
            source, metadata = cell.body, _nbgrader(f"demo_{cell.name}", locked=True)
        elif cell.kind == "given":
            # A plain code cell, the student's to run: their self-checks and every job read it as their own code
            # (the grader runs its own copy after it: units.Unit.given_chunks).
            source, metadata = unit.given_code(cell.name), {}
            cell_id = f"given-{cell.name}"
            notebook_cells.append({"cell_type": "code", "execution_count": None, "id": cell_id.replace("_", "-"),
                                   "metadata": metadata, "outputs": [], "source": source.rstrip("\n")})
            continue
        else:
            source, metadata = cell.body, {}
        cell_id = metadata["nbgrader"]["grade_id"] if metadata else f"code-{number:02d}"
        notebook_cells.append({"cell_type": "code", "execution_count": None, "id": cell_id.replace("_", "-"),
                               "metadata": metadata, "outputs": [], "source": source})
    return {
        "cells": notebook_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def notebook_text(notebook):
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def course_files(unit, reference_text, shipped):
    """{path relative to the repository: text} of the generated files of the unit's nbgrader source folder;
    ``shipped`` is {file name: text} of the kit files that go beside the notebook (checks.py, ...)."""
    notebook = build_notebook(unit, unit.lesson_path.read_text(encoding="utf-8"), reference_text)
    source = source_folder(unit).relative_to(ROOT)
    files = {str(source / notebook_name(unit)): notebook_text(notebook)}
    files.update({str(source / name): text for name, text in shipped.items()})
    return files
