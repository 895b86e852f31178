"""Gradescope: the autograder zip, and what runs in it for each submission.

Making the zip (on the instructor's machine): ``main_bundle("autograder.zip")``
(``python -m autograder gradescope-bundle autograder.zip``) writes, at the top
level of the zip, ``setup.sh``, ``run_autograder`` and the kit's source needed
to grade: the ``autograder`` and ``solutions`` packages (their ``.py`` files,
the same set ``pip install .`` would ship), ``pyproject.toml`` and the README.
Nothing else: no tests, benchmarks, ``__pycache__`` or ``.git``; a file that git
does not track is named in a warning, since it goes into the zip uncommitted.

In Gradescope's container (Ubuntu, run as root; the zip unpacked into
``/autograder/source``):

- ``setup.sh`` (once, when Gradescope builds the image) installs bubblewrap and a
  virtual environment at ``/autograder/venv`` with the CPU build of torch and the
  kit's other dependencies. The kit itself is NOT installed into the venv: a
  ``pip install`` would copy ``solutions/`` and ``autograder/cases/`` into its
  site-packages, and the sandbox mounts the Python environment (read-only) for
  the student's code. The kit is imported from ``/autograder/source`` instead.
- ``run_autograder`` (for each submission) takes the source folder from group and
  others (``chmod -R go-rwx``, defence in depth), then runs
  ``python -m autograder.gradescope /autograder``, which is ``run(root)`` below.
  The root may be given as an argument or ``AUTOGRADER_ROOT``, the Python as
  ``AUTOGRADER_PYTHON`` (default ``/autograder/venv/bin/python``): the tests run
  the script on a simulated tree in a temporary folder. It always leaves a
  ``results/results.json``, if need be one it writes itself.

``run(root)`` grades the file in ``ROOT/submission`` (``positional_encodings.ipynb``
or ``.py``, at any depth; see ``load.find_submission_file``) with the kit's
``Grader`` and writes ``ROOT/results/results.json`` in Gradescope's schema: every
rubric test with its points, status, feedback and ``visibility``, and a top-level
``output`` that says which file was graded, how the code ran and what to read.
Every outcome writes a results.json and exits 0, so that Gradescope shows it: no
file to grade (score 0, naming the file names expected), several candidates, a
notebook that is not JSON, code that crashes, and a fault of the grader's own
(score 0, "tell your instructor"; the traceback goes to the instructor's stdout
log, which students are then not shown since it may quote the hidden cases).

Security: the reference and the hidden cases live only under
``/autograder/source`` (and in the grader's own process). The student's code
runs only inside the kit's bubblewrap sandbox (``autograder/sandbox.py``), which
mounts the system libraries and the Python environment read-only, the worker
file alone of the grader, and a private work folder: ``/autograder`` is not in
it, so neither the source, nor the results file, nor the submission folder.

The sandbox on Gradescope: bubblewrap needs namespaces, which a Docker container
may refuse (user namespaces, or mounting /proc in a new PID namespace). Before
grading, ``sandbox_problem()`` starts the sandbox exactly as the grader will and
runs ``python -c pass`` in it. If that fails the submission is NOT graded
unsandboxed: results.json gets score 0 and says that the instructor must make the
sandbox work. Only an instructor who accepts the risk can change that, by
building the zip with ``main_bundle(..., unsandboxed=True)`` (which writes
``export AUTOGRADER_UNSANDBOXED=1`` into ``run_autograder``) or by setting that
variable in the container: then a container without a working sandbox grades with
``sandbox="off"``, and the output says so. Unsandboxed, the student's code runs
as root in the container and can read the hidden cases and the reference and
change the results: use it only for trusted submissions.
"""

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import traceback
import zipfile
from pathlib import Path

from autograder import rubric
from autograder.inert import inert_line
from autograder.load import PREFERRED_NAMES, LoadError, find_submission_file, load

KIT = Path(__file__).resolve().parent.parent
# What grading needs, as pyproject.toml's [tool.setuptools] packages: each folder's .py files, not deeper.
PACKAGES = ("autograder", "autograder/cases", "solutions")
TOP_FILES = ("pyproject.toml", "README.md")
TORCH = "torch==2.13.0"  # the version the kit pins everywhere; on Gradescope, its CPU build
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
DEFAULT_ROOT = "/autograder"
DEFAULT_PYTHON = "/autograder/venv/bin/python"
UNSANDBOXED_VARIABLE = "AUTOGRADER_UNSANDBOXED"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so that the same sources make the same zip
_EXPECTED = " or ".join(reversed(PREFERRED_NAMES))  # the notebook first: what most students upload
_TELL_INSTRUCTOR = "This is not a problem with your code: tell your instructor."

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu).
# Made by `python -m autograder gradescope-bundle`; see autograder/gradescope.py.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends bubblewrap python3 python3-venv python3-pip
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "the kit needs Python 3.10 or newer")'
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --no-cache-dir --upgrade pip
# The CPU build: the default wheel would pull gigabytes of CUDA libraries onto a machine with no GPU.
/autograder/venv/bin/pip install --no-cache-dir {torch} --index-url {index}
/autograder/venv/bin/pip install --no-cache-dir {dependencies}
# The kit itself is NOT installed here: pip would copy the reference and the hidden cases into the
# venv, which the sandbox shows (read-only) to the student's code. run_autograder imports it from
# /autograder/source, which the sandbox never mounts.
if bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --proc /proc --dev /dev true; then
    echo "bubblewrap works in this container: student code will be sandboxed."
else
    echo "WARNING: bubblewrap cannot create its namespaces in this container; submissions will score 0"
    echo "until it can (see autograder/gradescope.py), unless {variable}=1 is set in run_autograder."
fi
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission, as root, in /autograder. It grades /autograder/submission
# and writes /autograder/results/results.json (made by `python -m autograder gradescope-bundle`).
# Overrides, for a test on a simulated tree: the root as $1 or AUTOGRADER_ROOT, the Python as AUTOGRADER_PYTHON.
set -uo pipefail
{unsandboxed_line}
ROOT="${{1:-${{AUTOGRADER_ROOT:-{root}}}}}"
PYTHON="${{AUTOGRADER_PYTHON:-{python}}}"
SOURCE="$ROOT/source"
RESULTS="$ROOT/results/results.json"
# The hidden cases and the reference are in $SOURCE: nobody but their owner may read them. (Student code
# never sees this folder anyway: it runs in the sandbox, which does not mount it.)
chmod -R go-rwx "$SOURCE" || echo "WARNING: could not restrict the permissions of $SOURCE"
mkdir -p "$ROOT/results" && rm -f "$RESULTS"
# The kit is imported from $SOURCE, never from an installed copy.
(cd "$SOURCE" && PYTHONPATH="$SOURCE" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m autograder.gradescope "$ROOT")
status=$?
if [ ! -s "$RESULTS" ]; then
    echo "run_autograder: the grader exited with status $status without writing $RESULTS"
    printf '%s\\n' '{fallback}' > "$RESULTS" || exit 1
fi
exit 0
"""


def _fallback_json():
    """What run_autograder writes when Python itself could not start (a broken setup)."""
    return json.dumps({"score": 0, "output": f"The grader could not start. {_TELL_INSTRUCTOR}",
                       "stdout_visibility": "hidden", "tests": []})


def dependencies(pyproject_text):
    """The ``dependencies = [...]`` of pyproject.toml, as pip arguments (Python 3.10 has no tomllib)."""
    match = re.search(r"^dependencies\s*=\s*\[(.*?)\]", pyproject_text, re.MULTILINE | re.DOTALL)
    if not match:
        raise ValueError("pyproject.toml has no dependencies = [...] list")
    return re.findall(r"\"([^\"]+)\"", match.group(1))


def setup_script(pyproject_text):
    """setup.sh: bubblewrap, the venv, the CPU build of torch, then the kit's other dependencies."""
    quoted = " ".join(f"'{requirement}'" for requirement in dependencies(pyproject_text))
    return SETUP_SH.format(torch=TORCH, index=TORCH_CPU_INDEX, dependencies=quoted, variable=UNSANDBOXED_VARIABLE)


def run_script(unsandboxed=False):
    """run_autograder; with ``unsandboxed`` it grades without a sandbox where bubblewrap cannot run."""
    line = f"export {UNSANDBOXED_VARIABLE}=1" if unsandboxed else \
        f"# export {UNSANDBOXED_VARIABLE}=1  # grade UNSANDBOXED where bubblewrap cannot run: trusted code only"
    fallback = _fallback_json()
    assert "'" not in fallback, "the fallback is written between single quotes"
    return RUN_AUTOGRADER.format(unsandboxed_line=line, root=DEFAULT_ROOT, python=DEFAULT_PYTHON, fallback=fallback)


def source_files(kit=KIT):
    """The kit's files that grading needs, relative to ``kit``: the packages' .py files and TOP_FILES."""
    files = [name for name in TOP_FILES if (kit / name).is_file()]
    for package in PACKAGES:
        files += sorted(f"{package}/{path.name}" for path in (kit / package).glob("*.py") if path.is_file())
    return files


def _untracked(kit, files):
    """Those of ``files`` git does not track (empty outside a git checkout)."""
    if not (kit / ".git").exists() or not shutil.which("git"):
        return []
    listed = subprocess.run(["git", "ls-files", "--", *files], cwd=kit, capture_output=True, text=True)
    if listed.returncode:
        return []
    tracked = set(listed.stdout.splitlines())
    return [name for name in files if name not in tracked]


def _add(archive, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def main_bundle(out_zip, unsandboxed=False, kit=KIT):
    """Write the Gradescope autograder zip to ``out_zip``; returns its path."""
    out_zip = Path(out_zip)
    files = source_files(kit)
    missing = [name for name in ("autograder/gradescope.py", "autograder/grade.py",
                                 "solutions/positional_encodings.py", "pyproject.toml") if name not in files]
    if missing:
        raise FileNotFoundError(f"the kit at {kit} lacks {', '.join(missing)}")
    untracked = _untracked(kit, files)
    if untracked:
        print(f"WARNING: the zip holds files git does not track: {', '.join(untracked)}", file=sys.stderr)
    pyproject = (kit / "pyproject.toml").read_text(encoding="utf-8")
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    partial = out_zip.with_name(out_zip.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        _add(archive, "setup.sh", setup_script(pyproject), executable=True)
        _add(archive, "run_autograder", run_script(unsandboxed), executable=True)
        for name in files:
            _add(archive, name, (kit / name).read_bytes())
    partial.replace(out_zip)
    return out_zip


# ---- In the container: grade one submission and write results.json ----

def sandbox_problem():
    """Why bubblewrap cannot run here (a sentence for the instructor), or None when it works.

    It starts the grader's fork server in its sandbox, and one job in it, as grading will.
    """
    from autograder.sandbox import ForkServer, ServerFailed, bubblewrap

    if not bubblewrap():
        return "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
    try:
        ForkServer(sandboxed=True).close()
    except (ServerFailed, OSError) as error:
        said = " ".join(str(error).split())[-300:]
        return f"bubblewrap cannot create its sandbox in this container ({said})"
    return None


def _not_graded(message, name="submission", path=""):
    """A result with every rubric test at 0 and ``message`` as what the student reads."""
    from autograder.grade import Result, TestResult

    tests = [TestResult(test.id, test.task, 0, test.points, "Not graded: see the message at the top.")
             for test in rubric.TESTS]
    return Result(name, str(path), tests, [message])


def _find_file(submission):
    """The file to grade in ``submission``, or a Result that says why there is none."""
    if not submission.is_dir():
        return None, _not_graded(f"No submission folder was found at {submission}. {_TELL_INSTRUCTOR}")
    from autograder.load import regular_files, shown_name

    try:  # the upload is the student's: walked without following a link, anything not a regular file refused
        uploaded = [shown_name(path.parts) for path in regular_files(submission)]
    except LoadError as error:
        return None, _not_graded(f"Not graded: {error}")
    listing = (", ".join(uploaded[:10]) + (f" and {len(uploaded) - 10} more" if len(uploaded) > 10 else "")) \
        if uploaded else "nothing"
    try:
        return find_submission_file(submission), None
    except LoadError as error:
        if "several" in str(error):
            message = f"Could not tell which file to grade: {error}"
        else:
            message = f"No file to grade was found. Upload your {_EXPECTED}."
        return None, _not_graded(f"{message}\nYou uploaded: {listing}.")


def _number_tests(tests):
    """Number the tests "task.test" in rubric order (Gradescope sorts and labels by number)."""
    order = {task.name: index for index, task in enumerate(rubric.TASKS + (rubric.TIMING,), start=1)}
    seen = {}
    for test in tests:
        rubric_test = rubric.TEST_BY_ID.get(test["name"])
        if rubric_test is not None and rubric_test.task in order:
            seen[rubric_test.task] = seen.get(rubric_test.task, 0) + 1
            test["number"] = f"{order[rubric_test.task]}.{seen[rubric_test.task]}"


def to_results(result, graded_file=None, sandboxed=True, warning=""):
    """Gradescope's results.json for ``result``: visibility on each test, and an output that guides the student."""
    results = result.to_gradescope()
    for test in results["tests"]:
        test["visibility"] = "visible"
    _number_tests(results["tests"])
    lines = []
    if warning:
        lines += [warning, ""]
    if graded_file is not None:
        lines.append(f"Graded file: {graded_file}.")
        failed = [test for test in results["tests"] if test["status"] != "passed"]
        if failed:
            lines.append(f"Score {results['score']:g}/{results['max_score']:g}. Read the failed tests below: "
                         "each says what was called, the first value that differs (expected against got) and, "
                         "where it recognises one, the likely mistake.")
        else:
            lines.append(f"Score {results['score']:g}/{results['max_score']:g}: every test passes.")
        if sandboxed:
            lines.append("Your code ran in the grader's sandbox: no network and none of the grader's files.")
    if result.notes:
        if graded_file is not None:
            lines += ["", "Notes on your file:"]
        lines += list(result.notes)
    results["output"] = "\n".join(lines)
    results["stdout_visibility"] = "visible"
    return results


def _grade(submission_dir):
    """results.json's content for the submission in ``submission_dir``."""
    from autograder.grade import Grader

    path, refusal = _find_file(submission_dir)
    if refusal is not None:
        return to_results(refusal)
    shown = path.relative_to(submission_dir)
    print(f"Grading {inert_line(str(shown))}")
    try:
        load(path)  # a notebook that is not JSON, a file that is not UTF-8: said before anything starts
    except (LoadError, OSError) as error:
        message = str(error) if isinstance(error, LoadError) else f"{shown}: {error.strerror or error}"
        return to_results(_not_graded(f"Could not read your file. {message}", path.stem, path))
    problem = sandbox_problem()
    warning = ""
    if problem:
        print(f"Sandbox: {problem}")
        if os.environ.get(UNSANDBOXED_VARIABLE) != "1":
            return to_results(_not_graded(
                "Not graded: the grader's sandbox does not work on this Gradescope autograder, and it never "
                f"runs a submission without one. {_TELL_INSTRUCTOR}\n(For the instructor: {problem}. Make "
                f"bubblewrap work in the container, or set {UNSANDBOXED_VARIABLE}=1 in run_autograder to grade "
                "trusted code without a sandbox; see autograder/gradescope.py.)", path.stem, path))
        warning = ("WARNING: graded WITHOUT the sandbox (the instructor set "
                   f"{UNSANDBOXED_VARIABLE}=1 because bubblewrap cannot run here).")
        print(warning)
    else:
        print("Sandbox: bubblewrap works")
    grader = Grader(sandbox="off" if problem else "required")
    try:
        result = grader.grade(path)
    finally:
        grader.close()
    print(f"Score: {result.score:g}/{result.max_score:g}")
    return to_results(result, shown, sandboxed=not problem, warning=warning)


def _crashed():
    """results.json for a fault of the grader's own; the stdout that holds its traceback is not shown to students."""
    results = to_results(_not_graded(f"The grader failed while grading your submission. {_TELL_INSTRUCTOR}"))
    results["stdout_visibility"] = "hidden"
    return results


def run(root=None):
    """Grade ``ROOT/submission`` and write ``ROOT/results/results.json``; 0 once that file is written."""
    root = Path(root or os.environ.get("AUTOGRADER_ROOT") or DEFAULT_ROOT)
    started = time.monotonic()
    print(f"Kit: {Path(__file__).resolve().parent}")
    try:
        results = _grade(root / "submission")
        json.dumps(results, allow_nan=False)  # a NaN score would make the file unreadable: the grader's fault
    except Exception:
        traceback.print_exc(file=sys.stdout)  # for the instructor's log (hidden from students: see _crashed)
        results = _crashed()
    results["execution_time"] = round(time.monotonic() - started)
    text = json.dumps(results, indent=1, allow_nan=False)
    target = root / "results" / "results.json"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")
    except OSError as error:
        print(f"Could not write {target}: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.gradescope",
                                     description="Grade Gradescope's ROOT/submission into ROOT/results/results.json.")
    parser.add_argument("root", nargs="?", help=f"the autograder root (default: $AUTOGRADER_ROOT or {DEFAULT_ROOT})")
    return run(parser.parse_args(argv).root)


if __name__ == "__main__":
    sys.exit(main())
