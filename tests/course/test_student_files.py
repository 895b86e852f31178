"""The student's files are derived from the one copy of each source in git, reproducibly, and never committed."""

import ast
import hashlib
import subprocess
import sys
from pathlib import Path

from autograder.units.positional_encodings import rubric
from autograder.core import units
from autograder.course.build import ROOT, build, generated_files, make_stub, solution_regions
from conftest import REFERENCE, STUDENT_DIR, UNIT


def _signatures(source):
    tree = ast.parse(source)
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found[node.name] = (ast.dump(node.args) if isinstance(node, ast.FunctionDef) else "class",
                                ast.get_docstring(node))
    return found


def _tree(root):
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(Path(root).rglob("*")) if path.is_file()}


def test_the_build_is_reproducible_and_writes_nothing_the_second_time(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    written = build(root=first)
    assert len(written) == len(generated_files()) >= 2 * len(units.names())
    build(root=second)
    assert _tree(first) == _tree(second)
    assert build(root=first) == [], "a second build into the same folder rewrote files whose bytes were right"
    # the suite's own build (tests/conftest.py) made the same bytes in the repository
    assert {name: (ROOT / name).read_bytes() for name in _tree(first)} == _tree(first)


def _tracked():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def test_no_generated_file_is_committed_and_git_ignores_every_one():
    generated = sorted(generated_files())
    assert not set(generated) & set(_tracked()), "a generated file is committed: git rm --cached it"
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, capture_output=True,
                             input="\n".join(generated), text=True).stdout.split()
    assert sorted(ignored) == generated, f"not ignored: {sorted(set(generated) - set(ignored))}"


def test_git_holds_no_two_source_files_with_the_same_bytes():
    """One copy of every file: the self-check module, the capstone and the self-checks live once, in their unit."""
    seen = {}
    for name in _tracked():
        path = ROOT / name
        if path.suffix in (".py", ".ipynb", ".ini") and path.is_file() and len(path.read_bytes().strip()) > 0:
            seen.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), []).append(name)
    copies = [names for names in seen.values() if len(names) > 1]
    assert copies == [], f"files committed more than once: {copies}"


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
