"""`check-unit` names a tool it runs that is missing, and the extra that brings it; a failing self-check is shown
with pytest's own lines; the unit author's install line installs what `check-unit` runs.

Without pytest, `check-unit` on a fresh skeleton said "the self-checks fail on the reference (pytest exit 1): ."
and nothing else. Here pytest is made unimportable by a package on PYTHONPATH that raises as a missing module does,
and the skeleton is checked in a copy of the repository (as tests/course/test_scaffold.py does).
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.core import units
from autograder.course.check_unit import Check
from test_scaffold import copy_repository, edit, environment

ROOT = Path(__file__).resolve().parents[2]
INSTALL = 'pip install -e ".[unit]"'


def _extras():
    toml = pytest.importorskip("tomllib", reason="Python 3.10 has no tomllib")
    return toml.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]


def _requirements(extra, extras, seen=()):
    """The distributions an extra installs, the kit's own extras it names unfolded."""
    found = set()
    for requirement in extras[extra]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()
        inner = re.search(r"\[(.+)\]", requirement)
        if name == "positional-encodings-kit" and inner:
            for other in inner.group(1).split(","):
                if other.strip() not in seen:
                    found |= _requirements(other.strip(), extras, (*seen, extra))
        else:
            found.add(name)
    return found


def test_the_unit_extra_installs_what_check_unit_runs():
    assert {"pytest", "nbgrader"} <= _requirements("unit", _extras())


def test_the_unit_authors_install_line_installs_the_unit_extra():
    page = (ROOT / "docs" / "writing-a-unit.md").read_text(encoding="utf-8")
    start = page.index("## Start one")
    lines = [line for line in page[start:page.index("\n## ", start + 1)].splitlines() if "pip install" in line]
    assert lines and all('-e ".[unit]"' in line or "-e '.[unit]'" in line for line in lines), lines


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """{unit: (exit status, stdout)} of check-unit --without-nbgrader, in a copy of the kit with two fresh skeletons:
    ``bare``, checked with pytest unimportable, and ``slipped``, whose worked-example self-check expects a wrong
    value (its last row 1.5 where scale * t gives 1.0)."""
    copy = copy_repository(tmp_path_factory.mktemp("kit"))
    shim = tmp_path_factory.mktemp("no-pytest") / "pytest"
    shim.mkdir()
    (shim / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'pytest\'", name="pytest")\n')
    done = {}
    for name in ("bare", "slipped"):
        made = subprocess.run([sys.executable, "-m", "autograder", "new-unit", name], cwd=copy, env=environment(copy),
                              capture_output=True, text=True, timeout=300)
        assert made.returncode == 0, made.stderr
    edit(copy / "autograder" / "units" / "slipped" / "self_checks" / "test_slipped_ramp.py",
         "[0.5, 0.5], [1.0, 1.0]]]", "[0.5, 0.5], [1.5, 1.0]]]")
    for name, extra_path in (("bare", [str(shim.parent)]), ("slipped", [])):
        env = environment(copy)
        env["PYTHONPATH"] = ":".join([*extra_path, str(copy)])
        run = subprocess.run([sys.executable, "-m", "autograder", "check-unit", name, "--without-nbgrader"], cwd=copy,
                             env=env, capture_output=True, text=True, timeout=600)
        assert "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
        done[name] = run.returncode, run.stdout
    return done


def test_check_unit_without_pytest_names_pytest_and_the_extra_that_brings_it(checked):
    status, out = checked["bare"]
    problems = [line for line in out.splitlines() if line.startswith("PROBLEM:")]
    assert status == 1 and len(problems) == 1, out
    assert "pytest" in problems[0] and "does not import" in problems[0] and INSTALL in problems[0], out
    assert "No module named 'pytest'" in problems[0], out  # why, in Python's words
    assert "exit 1): ." not in out


def test_a_failing_self_check_keeps_pytests_lines_in_the_problem(checked):
    status, out = checked["slipped"]
    assert status == 1, out
    said = out[out.index("PROBLEM: the self-checks fail on the reference"):]
    assert "FAILED test_slipped_ramp.py::test_slipped_ramp_matches_the_worked_example" in said.splitlines()[0], said
    # pytest's own words for the failure: the check's line and its E lines, expected against got
    assert "test_slipped_ramp.py:" in said and "E   AssertionError" in said and "expected 1.5, got 1" in said, said
    assert INSTALL not in said  # pytest ran: nothing to install


def test_check_unit_without_nbgrader_names_it_and_the_extra(monkeypatch):
    """nbgrader's absence, as shutil.which sees it on the PATH the release runs with (the kit's environment has it
    installed, and its bin folder always comes first on that PATH, so only this stands in for a machine without)."""
    check = Check(units.names()[0])
    check.unit = units.get(check.name)
    monkeypatch.setattr("shutil.which", lambda program, *args, **kwargs: None)
    check.release()
    assert len(check.problems) == 1 and "nbgrader" in check.problems[0] and INSTALL in check.problems[0], \
        check.problems
    assert "--without-nbgrader" in check.problems[0]
