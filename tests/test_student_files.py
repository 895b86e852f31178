"""The student's files are derived from the reference and do not drift from it."""

import ast
import subprocess
import sys

from autograder.units.positional_encodings import rubric
from autograder.course.build import ROOT, generated_files, make_stub, solution_regions
from conftest import REFERENCE, STUDENT_DIR, UNIT


def _signatures(source):
    tree = ast.parse(source)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (ast.dump(node.args) if isinstance(node, ast.FunctionDef) else "class",
                                ast.get_docstring(node))
    return found


def test_committed_generated_files_match_a_fresh_build():
    for name, text in generated_files().items():
        committed = (ROOT / name).read_text(encoding="utf-8")
        assert committed == text, f"{name} drifted from its source: run python -m autograder build"


def test_stubs_keep_every_signature_and_docstring_of_the_reference():
    reference = REFERENCE.read_text(encoding="utf-8")
    assert _signatures(make_stub(reference, UNIT)) == _signatures(reference)


def test_each_stub_raises_not_implemented_naming_its_task():
    stub = make_stub(REFERENCE.read_text(encoding="utf-8"), UNIT)
    for task in rubric.TASK_NAMES:
        assert f'raise NotImplementedError("Task {task}: not implemented yet")' in stub


def test_no_solution_line_reaches_the_stub():
    reference = REFERENCE.read_text(encoding="utf-8")
    lines = reference.splitlines()
    stub = make_stub(reference, UNIT)
    for begin, end in solution_regions(reference):
        for line in lines[begin + 1:end]:
            if len(line.strip()) > 25:  # distinctive enough not to appear by chance
                assert line not in stub.splitlines(), line


def test_the_stub_module_imports_and_defines_every_name():
    # An unfinished task must never break the import of another.
    code = ("import positional_encodings as p; "
            f"missing = [n for n in {sorted(rubric.TASK_OF_FUNCTION)!r} if not hasattr(p, n)]; "
            "assert not missing, missing")
    subprocess.run([sys.executable, "-c", code], cwd=STUDENT_DIR, check=True)
