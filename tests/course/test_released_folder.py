"""The folder a student receives stands alone (issue 25, point 4): a README that says how to install, open the
notebook and check a task; a requirements file with torch pinned that covers every library the shipped code
imports; and no instructor's word in any text a student reads.

Read from the generated files (``build.generated_files``), which ``python -m autograder release`` copies into the
release beside nbgrader's notebook (tests/ways_in/test_nbgrader_course.py checks that the zip holds the same files).
"""

import ast
import json
import re
import sys

import pytest

from autograder.core import units
from autograder.course.build import generated_files, student_folder
from autograder.course.build import ROOT
from autograder.course.notebook import notebook_name, source_folder
from autograder.course.release import SELF_CHECK_FILES

UNITS = units.all_units()
FILES = generated_files()
# Words of the instructor's side: how a class is graded and what only the instructor holds.
INSTRUCTOR_WORDS = ("course secret", "course-secret", "COURSE_SECRET", "grades.csv", "generate_feedback",
                    "nbgrader autograde", "autograder grade", "solutions/", "rubric.py", "instructor", "hidden_check")


def _student_files(unit):
    folder = student_folder(unit).relative_to(ROOT)
    return {name.split("/")[-1]: text for name, text in FILES.items() if name.startswith(f"{folder}/")}


def _visible_notebook_text(unit):
    """The lesson notebook as students see it: nbgrader removes the hidden tests and clears the solutions."""
    name = str((source_folder(unit) / notebook_name(unit)).relative_to(ROOT))
    cells = json.loads(FILES[name])["cells"]
    text = "\n".join("".join(cell["source"]) for cell in cells)
    text = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", text, flags=re.S)
    return re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", text, flags=re.S)


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_the_folder_has_a_readme_and_requirements_and_release_ships_them(unit):
    files = _student_files(unit)
    assert {"README.md", "requirements.txt"} <= set(files)
    assert {"README.md", "requirements.txt"} <= set(SELF_CHECK_FILES)  # copied into the release and its zip


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_the_readme_says_how_to_install_open_and_check_each_task(unit):
    readme = _student_files(unit)["README.md"]
    assert "pip install -r requirements.txt" in readme and f"{unit.module_name}.ipynb" in readme
    assert "pytest -k" in readme
    for task in unit.rubric.TASK_NAMES:  # each task by the name pytest -k takes, with its points from the rubric
        assert re.search(rf"\| `{task}` \| .* \| {unit.rubric.task_points(task):g} \|", readme), task
    timed = sum(test.points for test in unit.rubric.TESTS if test.task == unit.rubric.TIMING.name)
    assert f"{timed:g} points go to the speed" in readme
    total = sum(unit.rubric.task_points(task) for task in unit.rubric.TASK_NAMES) + timed
    assert total == unit.rubric.MAX_SCORE  # the table and the speed line add up to the grade


def _imported_modules(text):
    """The top-level modules ``text`` imports, but for those it imports in a ``try`` that catches ImportError (what
    it does without them is its own business: the notebook loader checks with nbformat's schema where it is)."""
    tree, optional = ast.parse(text), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
                "ImportError" in ast.unparse(handler.type or ast.Name("BaseException")) for handler in node.handlers):
            optional |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    modules = set()
    for node in ast.walk(tree):
        if id(node) in optional:
            continue
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    return modules


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_the_requirements_pin_torch_and_cover_every_library_the_folder_imports(unit):
    files = _student_files(unit)
    required = {re.split(r"[<>=!~ ]", line)[0].lower() for line in files["requirements.txt"].splitlines()
                if line.strip() and not line.startswith("#")}
    assert "torch==2.13.0" in files["requirements.txt"].splitlines()
    own = {name[:-3] for name in files if name.endswith(".py")}  # the folder's own modules
    imported = set()
    for name, text in files.items():
        if name.endswith(".py"):
            imported |= _imported_modules(text)
    cells = json.loads(FILES[str((source_folder(unit) / notebook_name(unit)).relative_to(ROOT))])["cells"]
    for cell in cells:
        if cell["cell_type"] == "code":
            source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", "".join(cell["source"]), flags=re.S)
            imported |= _imported_modules("\n".join(line for line in source.splitlines()
                                                    if not line.lstrip().startswith(("%", "!"))))
    third_party = {module for module in imported - own if module not in sys.stdlib_module_names}
    assert third_party and third_party <= required, third_party - required
    assert "jupyterlab" in required  # to open the notebook


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_no_text_a_student_reads_holds_an_instructors_word(unit):
    texts = {name: text for name, text in _student_files(unit).items()}
    texts["the notebook"] = _visible_notebook_text(unit)
    found = [(name, word) for name, text in texts.items() for word in INSTRUCTOR_WORDS
             if word.lower() in text.lower()]
    assert not found, found
