"""The grader's core knows no unit by name: what is a unit's own lives in its folder, autograder/units/<unit>/.

Every identifier and every string of the core's code (docstrings and comments aside) is read from its syntax
tree, and none may be a unit's name, one of its tasks' names or one of the functions its students write.
"""

import ast
import pytest

from autograder.core import units
from autograder.course.build import ROOT

# Every module of the grader but the units' own packages.
CORE = sorted(str(path.relative_to(ROOT / "autograder").with_suffix("")) for path in (ROOT / "autograder").rglob("*.py")
              if "units" not in path.relative_to(ROOT / "autograder").parts[:1])


def _words(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id, node.lineno
        elif isinstance(node, ast.Attribute):
            yield node.attr, node.lineno
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield node.name, node.lineno
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for part in ((getattr(node, "module", None) or "").split(".") + [n for alias in node.names for n in alias.name.split(".")]):
                yield part, node.lineno
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for word in node.value.replace(".", " ").replace("/", " ").split():
                yield word.strip("'\"`(),:;"), node.lineno


def _unit_words():
    found = {}
    for unit in units.all_units():
        found[unit.name] = unit.name
        for task in unit.rubric.TASKS:
            found[task.name] = unit.name
            found.update({function: unit.name for function in task.functions})
    return found


@pytest.mark.parametrize("module", CORE)
def test_the_core_module_names_no_unit_task_or_function_of_a_unit(module):
    own = _unit_words()
    named = [(word, line, own[word]) for word, line in _words(ROOT / "autograder" / f"{module}.py") if word in own]
    assert len(CORE) >= 30
    assert named == [], f"autograder/{module}.py names what belongs to a unit: {named}"


def test_every_unit_is_a_folder_with_its_rubric_cases_job_reference_and_student_folder():
    assert len(units.names()) >= 2
    for unit in units.all_units():
        assert (unit.folder / "rubric.py").is_file() and (unit.folder / "job.py").is_file()
        assert {path.stem for path in (unit.folder / "cases").glob("*.py")} - {"__init__"} == set(unit.rubric.TASK_NAMES)
        assert unit.reference_path.is_file() and (ROOT / "assignments" / "student" / unit.name).is_dir()
        assert unit.rubric.MAX_SCORE == 100
    ids = [test.id for unit in units.all_units() for test in unit.rubric.TESTS]
    assert len(ids) == len(set(ids))  # grade ids of one nbgrader course
