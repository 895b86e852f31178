"""`new-unit` writes a unit that grades from the start, and `check-unit` finds what is wrong with one.

Every unit written here is written in a copy of the repository (its tracked files and the untracked ones git does
not ignore, committed afresh so that `git status` shows what changed): the other tests of the suite iterate over
the units of this one, and run at the same time. The copy's commands run with the copy first on the path, so
that its own grader, with its new unit, is the one that runs.
"""

import ast
import functools
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from autograder.course.notebook import filled_notebook
from autograder.course.check_unit import check_unit
from autograder.course.scaffold import ScaffoldError, new_unit

ROOT = Path(__file__).resolve().parents[2]
TOY = "toy_unit"
NBGRADER = Path(sys.executable).with_name("nbgrader")


def copy_repository(target):
    """The repository as it stands (tracked files and untracked ones git does not ignore) in ``target``, committed
    there as one snapshot; returns ``target``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if not source.is_symlink() and not source.is_file():
            continue  # deleted in the working tree, not yet in git
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name, follow_symlinks=False)
    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=kit", "-c", "user.email=kit@example.invalid", "-c", "commit.gpgsign=false",
                     "commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *command], cwd=target, check=True, capture_output=True)
    return target


def environment(copy):
    """The copy's code first on the path, and the environment's bin folder first on PATH (nbgrader runs alembic)."""
    return dict(os.environ, PYTHONPATH=str(copy),
                PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def run(copy, *args, cwd=None, timeout=300):
    """Run ``args`` with the copy's code (in the copy, or in ``cwd``)."""
    return subprocess.run(args, cwd=cwd or copy, env=environment(copy), capture_output=True, text=True,
                          timeout=timeout)


def kit(copy, *args, timeout=300):
    return run(copy, sys.executable, "-m", "autograder", *args, timeout=timeout)


def edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not in {path} exactly once: the skeleton changed"
    path.write_text(text.replace(old, new), encoding="utf-8")


# --- new_unit's refusals (nothing written) -------------------------------------------------------------------

@pytest.fixture
def small_root(tmp_path):
    """A root with one unit's rubric, as new_unit reads it (as text: nothing of it is imported)."""
    rubric = tmp_path / "autograder" / "units" / "earlier" / "rubric.py"
    rubric.parent.mkdir(parents=True)
    rubric.write_text('from autograder.core.rubric import Task, Test, complete\nTITLE = "Earlier"\nORDER = 4\n'
                      'SHIPPED = ("helpers.py",)\nTESTS = (Test("taken_ramp_values", "taken_ramp", 100, "x"),)\n')
    (tmp_path / "solutions").mkdir()
    return tmp_path


@pytest.mark.parametrize("name, why", [
    ("Toy", "lower-case Python identifier"), ("2d_unit", "lower-case Python identifier"),
    ("toy-unit", "lower-case Python identifier"), ("", "lower-case Python identifier"),
    ("class", "keyword"), ("a" * 31, "longer than 30"), ("test_toy", "pytest would collect"),
    ("earlier", "exists already"), ("json", "a module the kit or Python uses"),
    ("checks", "a module the kit or Python uses"), ("helpers", "a module the kit or Python uses"),
    ("torch", "importable module"), ("taken", "test ids must differ"),
])
def test_new_unit_refuses_a_name_that_cannot_be_a_unit_and_writes_nothing(small_root, name, why):
    before = sorted(small_root.rglob("*"))
    with pytest.raises(ScaffoldError, match=why):
        new_unit(name, root=small_root)
    assert sorted(small_root.rglob("*")) == before


def test_new_unit_refuses_where_one_of_its_files_exists_already(small_root):
    (small_root / "solutions" / "fresh.py").write_text("# someone's work\n")
    with pytest.raises(ScaffoldError, match="solutions/fresh.py exist"):
        new_unit("fresh", root=small_root)
    assert (small_root / "solutions" / "fresh.py").read_text() == "# someone's work\n"


def test_new_unit_writes_a_skeleton_of_python_files_named_after_the_unit_and_its_toy_task(small_root):
    written = new_unit("fresh", root=small_root)
    relative = sorted(str(path.relative_to(small_root)) for path in written)
    assert relative == sorted(["solutions/fresh.py", "autograder/units/fresh/__init__.py",
                               "autograder/units/fresh/rubric.py", "autograder/units/fresh/cases/__init__.py",
                               "autograder/units/fresh/cases/fresh_ramp.py", "autograder/units/fresh/job.py",
                               "autograder/units/fresh/lesson.py", "autograder/units/fresh/samples.py",
                               "autograder/units/fresh/self_checks/test_fresh_ramp.py"])
    for path in written:
        text = path.read_text(encoding="utf-8")
        ast.parse(text)  # every file is Python (the lesson too: jupytext's percent format)
        assert "TODO" in text[:1500], f"{path} does not start by saying what to replace"
        assert "__UNIT__" not in text and "__TASK__" not in text
    rubric = (small_root / "autograder/units/fresh/rubric.py").read_text()
    assert "ORDER = 5" in rubric  # after the units there are
    with pytest.raises(ScaffoldError, match="exists already"):
        new_unit("fresh", root=small_root)


def test_check_unit_refuses_a_name_that_is_no_unit():
    with pytest.raises(ScaffoldError, match="no unit called 'no_such_unit'"):
        check_unit("no_such_unit", nbgrader=False)


# --- check_unit finds each kind of problem, in units broken on purpose ------------------------------------------

BROKEN = ("lossy", "uncaught", "caseless", "untimed", "unrun")


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """{unit: the problems check_unit finds}, for five skeletons in a copy of the kit, each broken in one way."""
    copy = copy_repository(tmp_path_factory.mktemp("broken-kit"))
    for name in BROKEN:
        new_unit(name, root=copy)
    units = copy / "autograder" / "units"
    # A reference that loses points: it no longer refuses an x of the wrong shape.
    edit(copy / "solutions" / "lossy.py", '    if x.dim() != 3:\n        raise ValueError(f"x must be (B, L, d), got '
                                          'a tensor of shape {tuple(x.shape)}")\n', "")
    # A mistake no case can catch: the same sum in the other order is no mistake at all.
    edit(units / "uncaught" / "cases" / "uncaught_ramp.py", "    return [\n",
         '    return [\n        Mistake("the ramp comes first: scale * t + x.", lambda: scale * ramp[:, None] + x),\n')
    # A task without cases.
    (units / "caseless" / "cases" / "caseless_ramp.py").unlink()
    # A timed path that names a function the reference does not define (the rest of it declared as it should be).
    edit(units / "untimed" / "rubric.py", "from autograder.core.rubric import Task, Test, complete",
         "from autograder.core.rubric import Task, Test, TimedPath, complete")
    edit(units / "untimed" / "rubric.py", '"untimed_ramp", 80,', '"untimed_ramp", 70,')
    edit(units / "untimed" / "rubric.py", "\ncomplete(globals())",
         '\nTESTS += (Test("untimed_speed", "timing", 10, "the ramp timed"),)\n'
         'TIMED_PATHS = (TimedPath("ramp", "untimed_speed", ("untimed_ramp", "untimed_helper"), ("untimed_ramp",)),)\n'
         "\ncomplete(globals())")
    edit(units / "untimed" / "job.py", "VIEWS = {}\n",
         "VIEWS = {}\n\n\ndef timing_inputs(spec, generator):\n    import torch\n\n"
         "    return (torch.randn(spec['batch'], spec['length'], spec['head_dim'], generator=generator),)\n\n\n"
         "def score_path(namespace, spec):\n    return namespace['untimed_ramp']\n")
    # An experiment (CAPSTONE, for `python -m autograder capstone --unit`) in a module that is not there.
    edit(units / "unrun" / "rubric.py", "\ncomplete(globals())", '\nCAPSTONE = ("unrun.experiment", "--quick")\n'
         "\ncomplete(globals())")
    # Two processes, not threads: CPython 3.11 before 3.11.8 can fail ast.parse in two threads at once ("AST
    # constructor recursion depth mismatch", python/cpython#106905), and check_unit parses the unit's files.
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = dict(zip(BROKEN, pool.map(functools.partial(check_unit, nbgrader=False, root=copy), BROKEN)))
    return found


def test_check_unit_finds_a_reference_that_loses_points(broken):
    problems = broken["lossy"]
    lost = "the reference (solutions/lossy.py, markers removed) scores 0/20 on lossy_ramp_invalid_args"
    assert any(problem.startswith(lost) and "ValueError" in problem for problem in problems), problems
    # its self-checks say so too, and nothing else is wrong
    assert any("self-checks fail on the reference" in problem for problem in problems), problems
    assert len(problems) == 2, problems


def test_check_unit_finds_a_mistake_that_the_tasks_cases_cannot_catch(broken):
    problems = broken["uncaught"]
    assert len(problems) == 1, problems
    said = re.fullmatch(
        r"the mistake 'the ramp comes first: scale \* t \+ x\.' of task uncaught_ramp is never caught: on each of the "
        r"(\d+) scored case\(s\) that declare it, its output passes the check, so no student who makes it loses a "
        r"point\. Add a case where its output differs from the reference's to "
        r"autograder/units/uncaught/cases/uncaught_ramp\.py, or drop the mistake", problems[0])
    assert said, problems[0]
    # Every scored case of the template declares its mistakes: its five written cases and its contract's, one or more
    assert int(said.group(1)) > 5, problems[0]


def test_check_unit_finds_a_task_without_cases_and_stops_there(broken):
    problems = broken["caseless"]
    assert problems[0] == ("task caseless_ramp has no cases: autograder/units/caseless/cases/caseless_ramp.py is "
                           "missing (write build(rng, generator) there, returning the task's cases)")
    assert len(problems) == 2 and problems[1].startswith("(not checked until the problems above are fixed: timed "
                                                         "paths, mistakes, build, grading"), problems


def test_check_unit_finds_a_timed_path_naming_a_function_the_reference_lacks(broken):
    problems = broken["untimed"]
    assert problems[0] == ("the timed path 'ramp' in autograder/units/untimed/rubric.py names the function "
                           "untimed_helper, which solutions/untimed.py does not define"), problems
    assert len(problems) == 2, problems


def test_check_unit_finds_an_experiment_that_does_not_import(broken):
    problems = broken["unrun"]
    assert len(problems) == 1 and problems[0].startswith(
        "CAPSTONE in autograder/units/unrun/rubric.py names autograder.units.unrun.experiment, which does not "
        "import (ModuleNotFoundError"), problems


# --- the whole way: a new unit, checked, graded by the command line and by nbgrader -------------------------------

# Run in the copy: the finished reference and the stub of a unit as submissions, and what the test needs of it.
WRITE_SUBMISSIONS = """
import json, sys
from pathlib import Path
from autograder.core import units
from autograder.course.build import make_stub
unit, folder = units.get(sys.argv[1]), Path(sys.argv[2])
(folder / "finished.py").write_text(unit.finished_reference)
(folder / "stub.py").write_text(make_stub(unit.reference_path.read_text(), unit))
print(json.dumps({"max_score": unit.rubric.MAX_SCORE, "functions": sorted(unit.rubric.TASK_OF_FUNCTION),
                  "grader": units.__file__}))
"""


def _fill(released, reference, functions):
    """The released notebook with each solution cell holding its function from ``reference``."""
    return filled_notebook(released, functions, reference)


@pytest.mark.skipif(not NBGRADER.is_file() or shutil.which("bwrap") is None,
                    reason="nbgrader's kernel, and the grader, run under bubblewrap")
def test_a_new_unit_grades_from_the_start_and_changes_only_its_own_files(tmp_path):
    copy = copy_repository(tmp_path / "kit")
    made = kit(copy, "new-unit", TOY)
    assert made.returncode == 0, made.stderr
    assert f"check-unit {TOY}" in made.stdout

    checked = kit(copy, "check-unit", TOY)  # with nbgrader's generate_assignment
    assert checked.returncode == 0 and checked.stdout.strip().endswith(f"{TOY}: every check passes."), \
        checked.stdout + checked.stderr

    # The finished reference and the stub, through the command line, in the sandbox.
    written = run(copy, sys.executable, "-c", WRITE_SUBMISSIONS, TOY, str(tmp_path))
    assert written.returncode == 0, written.stderr
    unit = json.loads(written.stdout)
    assert unit["grader"].startswith(str(copy))  # the copy's grader, not the kit this test runs from
    graded = kit(copy, "grade", str(tmp_path / "finished.py"), str(tmp_path / "stub.py"), "--unit", TOY, "--json",
                 "--jobs", "2")
    assert graded.returncode == 0, graded.stderr
    scores = [json.loads(line)["score"] for line in graded.stdout.strip().splitlines()]
    assert scores == [unit["max_score"], 0] == [100, 0]

    # Through nbgrader: the release, a notebook finished with the reference and the blank one, autograde.
    released = kit(copy, "release", "--unit", TOY, "--out", str(tmp_path / "dist"))
    assert released.returncode == 0, released.stdout + released.stderr
    course = copy / "assignments"
    release_notebook = json.loads((course / "release" / TOY / f"{TOY}.ipynb").read_text())
    reference = (tmp_path / "finished.py").read_text()
    finished = _fill(release_notebook, reference, unit["functions"])
    for student, notebook in (("ada", finished), ("blank", release_notebook)):
        folder = course / "submitted" / student / TOY
        folder.mkdir(parents=True)
        (folder / f"{TOY}.ipynb").write_text(json.dumps(notebook))
    autograded = run(copy, str(NBGRADER), "autograde", TOY, "--force", cwd=course)
    assert autograded.returncode == 0 and "| ERROR]" not in autograded.stdout + autograded.stderr, \
        (autograded.stdout + autograded.stderr)[-4000:]
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {student: {grade.name: grade.score for grade in
                            gradebook.find_submission_notebook(TOY, TOY, student).grades}
                  for student in ("ada", "blank")}
    assert scores["ada"] == {f"{TOY}_ramp_values": 80, f"{TOY}_ramp_invalid_args": 20}
    assert scores["blank"] == {f"{TOY}_ramp_values": 0, f"{TOY}_ramp_invalid_args": 0}

    # Nothing changed but the unit's own files: the rest is generated, and ignored.
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=copy, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    changed = sorted(line[3:] for line in status)
    assert changed and all(path.startswith(f"autograder/units/{TOY}/") or path == f"solutions/{TOY}.py"
                           for path in changed), changed
    assert f"solutions/{TOY}.py" in changed and f"autograder/units/{TOY}/rubric.py" in changed


def test_a_unit_whose_rubric_fails_to_load_is_reported_by_check_unit_not_a_traceback(tmp_path):
    copy = copy_repository(tmp_path / "kit")
    kit(copy, "new-unit", "shaky")
    edit(copy / "autograder" / "units" / "shaky" / "rubric.py", "\ncomplete(globals())",
         "\nraise RuntimeError('a typo in the rubric')\ncomplete(globals())")
    checked = kit(copy, "check-unit", "shaky", "--without-nbgrader")
    assert "Traceback" not in checked.stdout + checked.stderr
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "PROBLEM:" in checked.stdout and "a typo in the rubric" in checked.stdout, checked.stdout
