"""The second unit's reference is built to be a lesson: one solution region per task, stubs that still import and
keep every signature and docstring, no Python loop, and docstrings in the kit's order (formula, Args, Returns,
the grader's convention, a worked example, the paper)."""

import ast
import inspect
from pathlib import Path

import pytest

from autograder.course.build import BEGIN, END, solution_regions, strip_markers
from autograder.core.loop_check import loops_in

REFERENCE = Path(__file__).resolve().parents[3] / "solutions" / "rotary_alibi.py"
TASKS = ("rotary_angles", "apply_rotary", "rope_scores", "alibi_slopes", "alibi_bias", "scaled_positions")
SOURCE = REFERENCE.read_text(encoding="utf-8")
TREE = ast.parse(SOURCE)
FUNCTIONS = {node.name: node for node in TREE.body if isinstance(node, ast.FunctionDef)}


def stub(source):
    """Each solution region replaced by a NotImplementedError naming its task (what nbgrader gives a student)."""
    lines = source.splitlines()
    out, position = [], 0
    for begin, end in solution_regions(source):
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        task = next(name for name, node in FUNCTIONS.items() if node.lineno <= begin + 1 <= node.end_lineno)
        out += lines[position:begin] + [f'{indent}raise NotImplementedError("Task {task}: not implemented yet")']
        position = end + 1
    return "\n".join(out + lines[position:]) + "\n"


def test_the_module_defines_the_six_tasks_and_names_them_in_its_docstring():
    assert tuple(FUNCTIONS) == TASKS
    docstring = ast.get_docstring(TREE)
    assert all(f"{task}" in docstring for task in TASKS)


def test_each_task_has_one_solution_region_that_is_its_whole_body_after_the_docstring():
    regions = solution_regions(SOURCE)
    assert len(regions) == len(TASKS)
    for (begin, end), task in zip(regions, TASKS):
        node = FUNCTIONS[task]
        docstring_end = node.body[0].end_lineno  # 1-based
        assert begin + 1 == docstring_end + 1, f"{task}: the region should start right after the docstring"
        assert end == node.end_lineno, f"{task}: the region should end the function"  # END sits after the last line


def test_the_stub_imports_keeps_every_signature_and_docstring_and_raises_naming_the_task():
    reference, student = {}, {}
    exec(compile(strip_markers(SOURCE), "reference", "exec"), reference)
    exec(compile(stub(SOURCE), "stub", "exec"), student)
    for task in TASKS:
        signature = inspect.signature(student[task])
        assert signature == inspect.signature(reference[task])
        assert student[task].__doc__ == reference[task].__doc__
        required = [p for p in signature.parameters.values() if p.default is p.empty]
        positional = [None for p in required if p.kind == p.POSITIONAL_OR_KEYWORD]
        keywords = {p.name: None for p in required if p.kind == p.KEYWORD_ONLY}
        with pytest.raises(NotImplementedError, match=f"Task {task}"):
            student[task](*positional, **keywords)


def test_no_task_has_a_python_loop():
    assert loops_in(strip_markers(SOURCE), list(TASKS)) == []


@pytest.mark.parametrize("task", TASKS)
def test_each_docstring_reads_formula_args_returns_convention_example_paper(task):
    docstring = ast.get_docstring(FUNCTIONS[task])
    marks = ["Args:", "Returns:", "Convention the grader expects:", "Worked example", "Paper:"]
    places = [docstring.find(mark) for mark in marks]
    assert -1 not in places, f"{task}: missing {[m for m, p in zip(marks, places) if p == -1]}"
    assert places == sorted(places), f"{task}: the parts are out of order"


def test_every_line_that_changes_a_shape_says_the_shape():
    # Lines that build or reshape a tensor carry a "# (...)" comment, as in the first unit.
    shaping = ("arange(", "stack(", "flatten(", "chunk(", "cat(", "unsqueeze(", "[:, None", "[..., None", "@ ")
    missing = []
    for begin, end in solution_regions(SOURCE):
        for line in SOURCE.splitlines()[begin + 1:end]:
            code = line.split("#")[0]
            if any(word in code for word in shaping) and "# (" not in line:
                missing.append(line.strip())
    assert missing == []


def test_markers_are_the_ones_the_build_strips():
    assert SOURCE.count(BEGIN) == SOURCE.count(END) == len(TASKS)
