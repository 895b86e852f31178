"""The Gradescope autograder zip: what it holds, and run_autograder grading a simulated /autograder tree.

The runs use the real sandbox (bubblewrap) and the package unpacked from the zip, never this checkout's.
"""

import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.core import grade
from autograder.ways_in import gradescope, platform
from autograder.units.positional_encodings import rubric
from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES
from autograder.sandbox.server import SandboxMissing, bubblewrap
from conftest import notebook

ROOT = Path(__file__).resolve().parents[2]
STATUSES = {"passed", "failed"}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
needs_bubblewrap = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap (bwrap) is not installed")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return gradescope.main_bundle(tmp_path_factory.mktemp("bundle") / "ag.zip", unit="positional_encodings")


def unpack(bundle, root, files):
    """A Gradescope tree at ``root``: the zip in source/, ``files`` ({relative path: text}) in submission/."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    for name in ("run_autograder", "setup.sh"):  # zipfile drops the mode bits; Gradescope's unzip keeps them
        (root / "source" / name).chmod(0o755)
    (root / "submission").mkdir()
    for name, text in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_text(text, encoding="utf-8")
    return root


def run_autograder(root, **env):
    """run_autograder as Gradescope starts it, with the root and the Python overridden; returns (results, stdout)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("PYTHONPATH", gradescope.UNSANDBOXED_VARIABLE)}
    environment.update({"AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable, **env})
    run = subprocess.run([str(root / "source" / "run_autograder")], cwd=root, env=environment, capture_output=True,
                         text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads((root / "results" / "results.json").read_text()), run.stdout


def assert_gradescope_schema(results):
    """What Gradescope accepts: numbers for scores and time, unique test names, known status and visibility."""
    assert isinstance(results["score"], (int, float)) and not isinstance(results["score"], bool)
    assert isinstance(results["execution_time"], (int, float)) and results["execution_time"] >= 0
    assert isinstance(results["output"], str) and results["output"].strip()
    assert results["stdout_visibility"] in VISIBILITIES
    names = [test["name"] for test in results["tests"]]
    assert len(names) == len(set(names)), names
    numbers = [test["number"] for test in results["tests"]]
    assert len(numbers) == len(set(numbers)), numbers
    for test in results["tests"]:
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert isinstance(test["score"], (int, float)) and isinstance(test["max_score"], (int, float))
        assert 0 <= test["score"] <= test["max_score"], test
        assert test["status"] in STATUSES and test["visibility"] in VISIBILITIES
    assert results["score"] == pytest.approx(sum(test["score"] for test in results["tests"]))
    assert results["max_score"] == sum(test.points for test in rubric.TESTS)


def by_name(results):
    return {test["name"]: test for test in results["tests"]}


def test_the_zip_holds_the_two_scripts_and_the_kit_and_nothing_else(bundle):
    with zipfile.ZipFile(bundle) as archive:
        infos = {info.filename: info for info in archive.infolist()}
        setup = archive.read("setup.sh").decode()
    for name in ("setup.sh", "run_autograder", "autograder/core/grade.py", "autograder/ways_in/gradescope.py",
                 "autograder/sandbox/worker.py", "autograder/units/positional_encodings/cases/shaw.py", "solutions/positional_encodings.py",
                 "pyproject.toml", "README.md"):
        assert name in infos, name
    assert infos["run_autograder"].external_attr >> 16 & stat.S_IXUSR
    assert not [name for name in infos if name.startswith(("tests/", "benchmarks/", "dist/", "assignments/", ".git"))
                or "__pycache__" in name or name.endswith(".pyc")]
    # The CPU build of the pinned torch, the kit's other dependencies, and never the kit in the venv the sandbox mounts.
    assert "'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu" in setup and "bubblewrap" in setup
    assert "--no-index --dest /tmp/kit-torch 'torch==2.13.0'" in setup  # first from a wheel folder pip knows
    for requirement in platform.dependencies((ROOT / "pyproject.toml").read_text()):
        assert f"'{requirement}'" in setup or requirement.startswith("torch")  # torch: the pinned CPU build
    assert "/autograder/source" not in " ".join(line for line in setup.splitlines() if "pip install" in line)


def test_the_scripts_are_valid_bash(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(tmp_path)
    for name in ("setup.sh", "run_autograder"):
        check = subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True, text=True)
        assert check.returncode == 0, f"{name}: {check.stderr}"


def test_bundle_packages_are_the_ones_pyproject_installs():
    import setuptools

    tomllib = pytest.importorskip("tomllib")
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    installed = setuptools.find_packages(str(ROOT), include=include)
    assert sorted(platform._packages(ROOT)) == sorted(package.replace(".", "/") for package in installed)


@needs_bubblewrap
def test_run_autograder_gives_the_reference_full_marks_with_the_unpacked_kit(bundle, tmp_path, reference_text):
    root = unpack(bundle, tmp_path / "autograder", {"positional_encodings.py": reference_text})
    results, stdout = run_autograder(root)
    assert f"Kit: {root / 'source' / 'autograder'}" in stdout  # not this checkout's copy
    assert_gradescope_schema(results)
    assert results["score"] == rubric.MAX_SCORE == sum(test.points for test in rubric.TESTS)
    assert all(test["status"] == "passed" for test in results["tests"])
    assert "Graded file: positional_encodings.py" in results["output"] and "sandbox" in results["output"]
    assert not stat.S_IMODE((root / "source" / "solutions" / "positional_encodings.py").stat().st_mode) & 0o077


@needs_bubblewrap
def test_run_autograder_names_the_mistake_in_a_nested_notebook_and_the_sandbox_hides_the_source(
        bundle, tmp_path, reference_text):
    mistake = next(mistake for mistake in MISTAKES if mistake.name == "sin_cos_swapped")
    root = tmp_path / "autograder"
    probe = (f"import os\nraise RuntimeError('source readable: ' + str(os.path.exists({str(root / 'source')!r}) "
             "or os.path.exists('/autograder/source')))")
    submission = notebook([apply(mistake, reference_text), probe])
    unpack(bundle, root, {"hw1/positional_encodings.ipynb": submission})
    results, _ = run_autograder(root)
    assert_gradescope_schema(results)
    assert 0 < results["score"] < rubric.MAX_SCORE
    failed = [test for test in results["tests"] if test["status"] == "failed"]
    assert failed and {test["name"].split("_")[0] for test in failed} == {"sinusoidal"}
    assert mistake.says in by_name(results)["sinusoidal_values"]["output"]
    assert "Graded file: hw1/positional_encodings.ipynb" in results["output"]
    assert "source readable: False" in results["output"]  # the probe cell's error, in the notes on the file


def test_an_empty_upload_scores_0_naming_the_files_expected(bundle, tmp_path):
    root = unpack(bundle, tmp_path / "autograder", {})
    results, stdout = run_autograder(root)
    assert f"Kit: {root / 'source' / 'autograder'}" in stdout
    assert_gradescope_schema(results)
    assert results["score"] == 0 and all(test["status"] == "failed" for test in results["tests"])
    assert "positional_encodings.ipynb" in results["output"] and "positional_encodings.py" in results["output"]
    assert "You uploaded: nothing" in results["output"]


def test_run_autograder_writes_results_even_when_python_cannot_start(bundle, tmp_path):
    root = unpack(bundle, tmp_path / "autograder", {})
    results, _ = run_autograder(root, AUTOGRADER_PYTHON=str(tmp_path / "no-python"))
    assert results["score"] == 0 and "tell your instructor" in results["output"]


def grade_in_process(root, files, unit="positional_encodings"):
    """gradescope.run on a tree at ``root``, run_autograder's AUTOGRADER_UNIT set as a bundle for ``unit`` sets it."""
    root.mkdir()
    (root / "submission").mkdir()
    for name, text in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_text(text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(gradescope.UNIT_VARIABLE, unit)
        assert gradescope.run(root) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    assert_gradescope_schema(results)
    return results


def test_several_candidate_files_score_0_and_say_which_names_to_use(tmp_path):
    results = grade_in_process(tmp_path / "autograder", {"mine.py": "x = 1\n", "other/attempt.ipynb": "{}"})
    assert results["score"] == 0
    assert "several files" in results["output"] and "mine.py" in results["output"]
    assert "positional_encodings.py or positional_encodings.ipynb" in results["output"]


def test_a_notebook_that_is_not_json_scores_0_saying_where_it_breaks(tmp_path):
    results = grade_in_process(tmp_path / "autograder", {"positional_encodings.ipynb": '{"cells": [\n'})
    assert results["score"] == 0
    assert "is not a valid notebook" in results["output"] and "line 2" in results["output"]


class FakeGrader:
    """Stands in for Grader: records how it was made, scores every test in full; refuses to start with a
    sandbox while ``refuse`` says why none can run."""

    made = []
    refuse = ""
    tier = "fake"

    def __init__(self, unit, sandbox="required", **_):
        self.made.append(sandbox)
        if sandbox != "off" and self.refuse:
            raise SandboxMissing(self.refuse)

    def grade(self, path, **_):
        tests = [grade.TestResult(test.id, test.task, test.points, test.points, "ok") for test in rubric.TESTS]
        return grade.Result("x", str(path), tests, unit="positional_encodings")

    def close(self):
        pass


class BrokenGrader(FakeGrader):
    def grade(self, path, **_):
        raise KeyError("a bug in the grader")


def test_a_grader_crash_still_writes_results_telling_the_student_to_tell_the_instructor(
        tmp_path, monkeypatch, reference_text, capsys):
    monkeypatch.setattr("autograder.core.grade.Grader", BrokenGrader)
    results = grade_in_process(tmp_path / "autograder", {"positional_encodings.py": reference_text})
    assert results["score"] == 0 and "tell your instructor" in results["output"]
    assert results["stdout_visibility"] == "hidden"  # the traceback is for the instructor
    assert "a bug in the grader" not in results["output"] and "incident " in results["output"]
    said = capsys.readouterr()
    assert "a bug in the grader" in said.out + said.err


def test_without_a_working_sandbox_nothing_is_graded_unless_the_instructor_allows_it(
        tmp_path, monkeypatch, reference_text):
    FakeGrader.made.clear()
    monkeypatch.setattr("autograder.core.grade.Grader", FakeGrader)
    monkeypatch.setattr(FakeGrader, "refuse", "bubblewrap cannot make its namespaces here (EPERM)")
    monkeypatch.delenv(gradescope.UNSANDBOXED_VARIABLE, raising=False)
    refused = grade_in_process(tmp_path / "refused", {"positional_encodings.py": reference_text})
    assert refused["score"] == 0 and FakeGrader.made == ["required"]
    assert "sandbox does not work" in refused["output"] and "tell your instructor" in refused["output"]
    assert "EPERM" in refused["output"] and gradescope.UNSANDBOXED_VARIABLE in refused["output"]

    monkeypatch.setenv(gradescope.UNSANDBOXED_VARIABLE, "1")
    allowed = grade_in_process(tmp_path / "allowed", {"positional_encodings.py": reference_text})
    assert FakeGrader.made == ["required", "required", "off"] and allowed["score"] == rubric.MAX_SCORE
    assert allowed["output"].startswith("WARNING: graded WITHOUT the sandbox")


def test_the_instructor_allows_unsandboxed_grading_in_the_zip_itself(tmp_path):
    with zipfile.ZipFile(gradescope.main_bundle(tmp_path / "ag.zip", unit="positional_encodings",
                                                unsandboxed=True)) as archive:
        script = archive.read("run_autograder").decode()
    assert f"\nexport {gradescope.UNSANDBOXED_VARIABLE}=1\n" in script


@needs_bubblewrap
def test_the_bubblewrap_probe_passes_here_and_reports_what_bubblewrap_says_when_it_fails(monkeypatch, tmp_path):
    from autograder.sandbox import server as sandbox

    monkeypatch.setattr(sandbox, "_BUBBLEWRAP_PROBLEM", {})
    assert sandbox.bubblewrap_problem() is None
    failing = tmp_path / "bwrap"
    failing.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(sandbox, "_BUBBLEWRAP_PROBLEM", {})
    monkeypatch.setattr(sandbox, "bubblewrap", lambda: str(failing))
    problem = sandbox.bubblewrap_problem()
    assert problem.startswith("bubblewrap cannot make its namespaces here") and "No permissions" in problem
