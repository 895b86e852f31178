"""A cell is named as a student finds it, and a syntax error is told once, first (issue 34, point 6).

JupyterLab numbers no cell, so a label gives the code cell's place among the notebook's CODE cells (markdown and
raw cells are not counted) and its first line, short and inert: "code cell 5, `def ntk_inverse_frequencies(...)`,
line 41". The grader's note on a cell that did not load is said once, before the tests, with the line on a line of
its own; the student's self-checks put that line first, not pytest's hint about module names.
"""

import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.grade import Grader
from autograder.core.report import feedback
from autograder.course.build import ROOT, generated_files, student_folder
from autograder.course.notebook import function_source
from autograder.intake import load as intake
from autograder.intake.inert import is_inert

UNIT = units.get("long_context")
BROKEN_FROM = "scaled_base = base * factor ** (head_dim / (head_dim - 2))"
BROKEN_TO = "scaled_base = base * factor ** ((head_dim / (head_dim - 2))"  # a "(" never closed

# --- labels of generated notebooks ---------------------------------------------------------------------------------

# A first line as students write them: definitions with any arguments, comments, statements, odd characters
# (escapes, bidi controls, backticks, wide scripts); never a lone surrogate, which the loader refuses.
text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
               max_size=80)
identifier = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,40}", fullmatch=True)
first_lines = st.one_of(
    st.builds(lambda name, args: f"def {name}({args}):", identifier, text),
    st.builds(lambda name, args: f"async  def {name} ({args}):", identifier, text),
    st.builds(lambda name: f"class {name}(object):", identifier),
    text.map(lambda t: "# " + t), text.map(lambda t: "x = " + repr(t)), text,
)


@st.composite
def notebooks(draw):
    """A notebook of markdown, raw and code cells in any order; each code cell ends with a marker line naming
    its place among the code cells, so that its chunk can be found; some code cells are the course's test cells."""
    cells, code = [], 0
    for kind in draw(st.lists(st.sampled_from(["markdown", "raw", "code", "code", "test"]), min_size=1, max_size=12)):
        if kind in ("markdown", "raw"):
            cells.append({"cell_type": kind, "metadata": {}, "source": draw(text)})
            continue
        code += 1
        blank = "\n" * draw(st.integers(0, 2))
        first = draw(first_lines)
        cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                "source": f"{blank}{first}\n_code_cell_{code} = {code}\n"}
        if kind == "test":
            cell["metadata"]["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": f"t{code}",
                                            "points": 1, "schema_version": 3}
        cells.append(cell)
    for number, cell in enumerate(cells):
        cell["id"] = f"cell-{number}"
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}


def _first_line(source):
    return next(line.strip() for line in source.split("\n") if line.strip())


@settings(max_examples=60, deadline=None)
@given(notebooks())
def test_a_label_names_the_code_cell_by_its_place_among_code_cells_and_its_first_line(notebook):
    chunks, _ = intake._notebook_chunks(json.dumps(notebook).encode(), "work.ipynb")
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    students = [(place, cell) for place, cell in enumerate(code_cells, start=1) if "nbgrader" not in cell["metadata"]]
    assert len(chunks) == len(students)
    labels = [chunk["label"] for chunk in chunks]
    assert len(set(labels)) == len(labels)
    for chunk, (place, cell) in zip(chunks, students):
        assert f"_code_cell_{place} = {place}" in chunk["source"]  # the chunk of that cell
        label = chunk["label"]
        assert is_inert(label, one_line=True), label
        match = re.fullmatch(rf"work\.ipynb, code cell {place}, `([^`]*)`", label)
        assert match, label
        shown, first = match.group(1), _first_line(cell["source"])
        assert len(shown) <= 40
        definition = re.match(r"(async\s+def|def|class)\s+([^\W\d]\w*)\s*\(", first)
        if definition:
            whole = f"{' '.join(definition.group(1).split())} {definition.group(2)}(...)"
            # as written where it fits in 40 characters; else cut, and "..." says so
            assert shown == whole if len(whole) <= 40 else (
                shown.endswith("...") and definition.group(2).startswith(shown.split()[-1][:-3]))
        elif len(first) <= 40 and re.fullmatch(r"[ -_a-~]*", first):  # printable ASCII, no backtick: as written
            assert shown == first
        else:
            assert shown.endswith("...") or len(first) <= 40


def test_a_label_counts_code_cells_only_and_keeps_a_magic_cell_s_line_numbers():
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": "a", "metadata": {}, "source": "# Title"},
        {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import math"},
        {"cell_type": "markdown", "id": "c", "metadata": {}, "source": "Part 2"},
        {"cell_type": "code", "id": "d", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "%%time\ndef f(x, y=(1, 2)):\n    return x +\n"},
    ]}
    chunks, _ = intake._notebook_chunks(json.dumps(notebook).encode(), "n.ipynb")
    assert [chunk["label"] for chunk in chunks] == ["n.ipynb, code cell 1, `import math`",
                                                   "n.ipynb, code cell 2, `%%time`"]
    with pytest.raises(SyntaxError) as raised:
        compile(chunks[1]["source"], chunks[1]["label"], "exec")
    assert raised.value.lineno == 3  # line 3 of the cell as the student sees it, the magic's line counted


# --- the grader's note, and the self-checks, on a real syntax error --------------------------------------------------

def _released_notebook():
    """The third unit's notebook as a student hands it in, finished, with one "(" never closed in NTK's cell."""
    source = generated_files([UNIT.name])[f"assignments/source/{UNIT.name}/{UNIT.name}.ipynb"]
    notebook = json.loads(source)
    for cell in notebook["cells"]:
        grade_id = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
        if grade_id in UNIT.rubric.TASK_OF_FUNCTION:
            cell["source"] = function_source(UNIT.finished_reference, grade_id)
    return notebook


@pytest.fixture(scope="module")
def broken():
    """(the notebook, the code cell's place, the broken line's number in it)."""
    notebook = _released_notebook()
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    place = next(number for number, cell in enumerate(code_cells, start=1)
                 if "def ntk_inverse_frequencies(" in "".join(cell["source"]))
    cell = code_cells[place - 1]
    text = "".join(cell["source"])
    assert text.count(BROKEN_FROM) == 1
    cell["source"] = text.replace(BROKEN_FROM, BROKEN_TO)
    line = cell["source"].split("\n").index(next(l for l in cell["source"].split("\n") if BROKEN_TO in l)) + 1
    assert sum(c["cell_type"] != "code" for c in notebook["cells"][:notebook["cells"].index(cell)]) > 0
    return notebook, place, line


def test_the_grader_names_the_cell_as_a_student_finds_it_and_says_the_error_once_first(broken, tmp_path):
    notebook, place, line = broken
    path = tmp_path / f"{UNIT.name}.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    grader = Grader(UNIT, sandbox="auto", timing_mode="give")
    try:
        result = grader.grade(path)
    finally:
        grader.close()
    where = f"code cell {place}, `def ntk_inverse_frequencies(...)`, line {line}"
    said = [note for note in result.notes if "SyntaxError" in note]
    assert len(said) == 1 and where in said[0], result.notes
    assert result.notes[0] == said[0]  # first, before what was left out
    # the student's line on a line of its own: the note's own words close every parenthesis they open
    words = [re.sub(r"'[()]'", "", row) for row in said[0].split("\n") if BROKEN_TO not in row]  # Python's '(' aside
    assert any(row.strip() == BROKEN_TO for row in said[0].split("\n"))
    assert all(row.count("(") == row.count(")") for row in words), said[0]
    text = feedback(result)
    assert text.count(BROKEN_TO) == 1 and text.count("SyntaxError") == 1, text
    assert text.index(BROKEN_TO) < text.index("FAIL ")
    # every cell a test's output names (the callers' tracebacks) is named by its place among code cells
    named = [found for test in result.tests for found in re.findall(r"(\w+ )?cell (\d+)", test.output)]
    assert all(word == "code " for word, _ in named), named


def test_the_self_checks_show_the_broken_line_first(broken, tmp_path):
    folder = tmp_path / UNIT.name
    prefix = f"{student_folder(UNIT).relative_to(ROOT)}/"
    for name, content in generated_files([UNIT.name]).items():
        if name.startswith(prefix):
            (folder / name[len(prefix):]).parent.mkdir(parents=True, exist_ok=True)
            (folder / name[len(prefix):]).write_text(content, encoding="utf-8")
    notebook, place, line = broken
    (folder / f"{UNIT.name}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    # As on a student's machine: where CI is set, pytest's closing summary repeats each error's whole message
    # (running_on_ci), where a student's terminal shows its first line only.
    student = {key: value for key, value in os.environ.items() if key not in ("CI", "BUILD_NUMBER")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-k", "ntk_inverse_frequencies"],
                         cwd=folder, env=student, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "valid Python names" not in output, output
    where = f"code cell {place}, `def ntk_inverse_frequencies(...)`, line {line}"
    assert where in output and BROKEN_TO in output, output
    first = output.index(where)
    assert first < output.index("ntk_inverse_frequencies is not defined"), output
    assert output.count(BROKEN_TO) == 1, output  # said once
