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

- ``setup.sh`` (once, when Gradescope builds the image) installs bubblewrap,
  libseccomp, the job users (``autograder-job1`` to ``16``, the ids of
  ``users.JOB_UIDS``: no home, no shell) and a virtual environment at
  ``/autograder/venv`` with the CPU build of torch (from a wheel folder pip
  already knows, else PyTorch's CPU index) and the kit's other dependencies,
  readable by every user. The kit itself is NOT installed into the venv: a
  ``pip install`` would copy ``solutions/`` and ``autograder/cases/`` there,
  where student code can read them. It is imported from ``/autograder/source``.
- ``run_autograder`` (for each submission) makes the source, the upload, its
  metadata (which holds earlier results) and the results folder root's alone,
  and ``/autograder`` passable but not listable, then runs
  ``python -m autograder.gradescope /autograder``, which is ``run(root)`` below.
  The root may be given as an argument or ``AUTOGRADER_ROOT``, the Python as
  ``AUTOGRADER_PYTHON`` (default ``/autograder/venv/bin/python``): the tests run
  the script on a simulated tree in a temporary folder, and in a real container
  (tests/test_platform_containers.py). It always leaves a
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

What a student sees when: each rubric test says (``rubric.Test.visibility`` and
``details``) when its score shows and when the feedback that quotes a hidden
case (the call, expected against got) does. By default the score, what the test
checks and the likely mistake show at once, and a failed test's hidden case in a
second entry of no points, ``<test> (details)``, after the due date; the timing
tests quote no hidden case, and show everything at once.

The sandbox: the strongest the container allows (``sandbox.resolve_sandbox``),
and every result says which. Where bubblewrap can make its namespaces (a
privileged container), each job gets them. Under Docker's default seccomp
profile, which is Gradescope's, the kernel refuses them: each job then runs as a
job user of its own under a seccomp filter (tier C, ``autograder/users.py``),
and the grader first checks, as that user, that nothing of the kit or of
``secrets_of(root)`` can be opened. Where neither can run, the submission is NOT
graded unsandboxed: results.json gets score 0 and says that the instructor must
make a sandbox work. Only an instructor who accepts the risk can change that, by
building the zip with ``main_bundle(..., unsandboxed=True)`` (which writes
``export AUTOGRADER_UNSANDBOXED=1`` into ``run_autograder``) or by setting that
variable in the container: then the submission is graded with ``sandbox="off"``,
and the output says so. Unsandboxed, the student's code runs as root in the
container and can read the hidden cases and the reference and change the
results: use it only for trusted submissions.
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

from autograder import units
from autograder.inert import inert_line
from autograder.load import LoadError, find_submission_file, load

KIT = Path(__file__).resolve().parent.parent
# What grading needs, as pyproject.toml's packages: each folder's .py files, not deeper; every unit's folder
# and its cases (a unit is a package of autograder/units).
PACKAGES = ("autograder", "autograder/cases", "autograder/units", "solutions")
TOP_FILES = ("pyproject.toml", "README.md")
TORCH = "torch==2.13.0"  # the version the kit pins everywhere; on Gradescope, its CPU build
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
DEFAULT_ROOT = "/autograder"
DEFAULT_VENV = "/autograder/venv"
DEFAULT_PYTHON = DEFAULT_VENV + "/bin/python"
UNSANDBOXED_VARIABLE = "AUTOGRADER_UNSANDBOXED"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so that the same sources make the same zip
_TELL_INSTRUCTOR = "This is not a problem with your code: tell your instructor."

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu or Debian).
# Made by `python -m autograder gradescope-bundle`; see autograder/gradescope.py.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
VENV="${{AUTOGRADER_VENV:-{venv}}}"
apt-get update
# bubblewrap where the container allows namespaces; libseccomp2 and the job users where it does not.
apt-get install -y --no-install-recommends bubblewrap libseccomp2 passwd python3 python3-venv python3-pip
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "the kit needs Python 3.10 or newer")'
# The users that student code runs as where bubblewrap cannot start: no home, no shell, no password.
for uid in $(seq {first_uid} {last_uid}); do
    name="autograder-job$((uid - {first_uid} + 1))"
    getent group "$uid" >/dev/null || groupadd --gid "$uid" "$name"
    getent passwd "$uid" >/dev/null || useradd --uid "$uid" --gid "$uid" --no-create-home \\
        --home-dir /nonexistent --shell /usr/sbin/nologin "$name"
done
python3 -m venv "$VENV"
# The CPU build of torch: from a wheel folder that this machine's pip is set up with (find-links), else
# from PyTorch's CPU index. The default wheel would pull gigabytes of CUDA libraries onto a machine with no GPU.
rm -rf /tmp/kit-torch
if "$VENV/bin/pip" download --no-deps --no-index --dest /tmp/kit-torch '{torch}' >/dev/null 2>&1 \\
        && ls /tmp/kit-torch/torch-*+cpu-*.whl >/dev/null 2>&1; then
    "$VENV/bin/pip" install --no-cache-dir /tmp/kit-torch/torch-*+cpu-*.whl
else
    "$VENV/bin/pip" install --no-cache-dir '{torch}' --index-url {index}
fi
rm -rf /tmp/kit-torch
"$VENV/bin/pip" install --no-cache-dir {dependencies}
# Readable by every user: student code imports from it (the kit itself is not in it). The kit, where it
# is unpacked here (Gradescope's /autograder/source), is root's alone from the start.
chmod -R a+rX "$VENV"
[ ! -d /autograder/source ] || chmod -R go-rwx /autograder/source
# The kit itself is NOT installed here: pip would copy the reference and the hidden cases into the
# venv, which student code can read. run_autograder imports it from /autograder/source, root's alone.
if bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --proc /proc --dev /dev true 2>/dev/null; then
    echo "bubblewrap works in this container: each job gets namespaces of its own."
else
    echo "bubblewrap cannot make namespaces in this container (Docker's default seccomp profile refuses them):"
    echo "each job will run as an unprivileged user of its own under a seccomp filter (tier C)."
fi
"""

ENTRY_SCRIPT = """\
#!/usr/bin/env bash
{header}
# Overrides, for a test on a simulated tree: the root as $1 or AUTOGRADER_ROOT, the Python as AUTOGRADER_PYTHON.
set -uo pipefail
{preamble}
ROOT="${{1:-${{AUTOGRADER_ROOT:-{root}}}}}"
PYTHON="${{AUTOGRADER_PYTHON:-{python}}}"
KIT={kit}
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results" && rm -f "$RESULTS"
# {secret_words}:
# root's alone, so that student code, which runs as another user where bubblewrap cannot start, can
# read none of it. $ROOT itself stays passable (not listable): the venv may be below it.
for path in {secrets}; do
    [ ! -e "$path" ] || chmod -R go-rwx "$path" || echo "WARNING: could not restrict the permissions of $path"
done
chmod go-rw,go+x "$ROOT" || echo "WARNING: could not restrict the permissions of $ROOT"
# The kit is imported from $KIT, never from an installed copy.
(cd "$KIT" && PYTHONPATH="$KIT" PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m {module} "$ROOT")
status=$?
if [ ! -s "$RESULTS" ]; then
    echo "{name}: the grader exited with status $status without writing $RESULTS"
    printf '%s\\n' '{fallback}' > "$RESULTS" || exit 1
fi
exit 0
"""


def entry_script(name, header, kit, secrets, secret_words, module, root, python, fallback, preamble=""):
    """A platform's entry point (run_autograder, run_prairielearn): the secrets made root's, the kit's
    module run on ROOT, and a results file written whatever happens (``fallback`` where Python cannot start)."""
    assert "'" not in fallback, "the fallback is written between single quotes"
    return ENTRY_SCRIPT.format(name=name, header=header, kit=kit, secrets=" ".join(f'"{path}"' for path in secrets),
                               secret_words=secret_words, module=module, root=root, python=python,
                               fallback=fallback, preamble=preamble)


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
    from autograder.users import JOB_UIDS

    quoted = " ".join(f"'{requirement}'" for requirement in dependencies(pyproject_text) if
                      not requirement.startswith("torch"))
    return SETUP_SH.format(torch=TORCH, index=TORCH_CPU_INDEX, dependencies=quoted, venv=DEFAULT_VENV,
                           first_uid=JOB_UIDS.start, last_uid=JOB_UIDS.stop - 1)


UNIT_VARIABLE = "AUTOGRADER_UNIT"  # the unit a bundle grades; without it, the upload's file name tells


def run_script(unsandboxed=False, unit=None):
    """run_autograder; with ``unsandboxed`` it grades without a sandbox where none can run; with ``unit`` (a
    name) every upload is graded as that unit's assignment."""
    line = f"export {UNSANDBOXED_VARIABLE}=1" if unsandboxed else \
        f"# export {UNSANDBOXED_VARIABLE}=1  # grade UNSANDBOXED where no sandbox can run: trusted code only"
    if unit:
        line += f"\nexport {UNIT_VARIABLE}={units.get(unit).name}  # the assignment this bundle grades"
    return entry_script(
        "run_autograder",
        "# Gradescope runs this for each submission, as root, in /autograder. It grades /autograder/submission\n"
        "# and writes /autograder/results/results.json (made by `python -m autograder gradescope-bundle`).",
        kit='"$ROOT/source"', secrets=("$KIT", "$ROOT/submission", "$ROOT/results", "$ROOT/submission_metadata.json"),
        secret_words="The hidden cases and the reference (in $KIT), the upload and its metadata (earlier results "
                     "included)", module="autograder.gradescope", root=DEFAULT_ROOT, python=DEFAULT_PYTHON,
        fallback=_fallback_json(), preamble=line)


def _packages(kit):
    units_folder = kit / "autograder" / "units"
    found = list(PACKAGES)
    for unit in sorted(path for path in units_folder.iterdir() if (path / "rubric.py").is_file()):
        found += [f"autograder/units/{unit.name}", f"autograder/units/{unit.name}/cases"]
    return found


def source_files(kit=KIT):
    """The kit's files that grading needs, relative to ``kit``: the packages' .py files and TOP_FILES."""
    files = [name for name in TOP_FILES if (kit / name).is_file()]
    for package in _packages(kit):
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


def main_bundle(out_zip, unsandboxed=False, kit=KIT, course_secret_file=None, unit=None):
    """Write the Gradescope autograder zip to ``out_zip``; returns its path.

    ``course_secret_file``: the course secret to ship in the zip (it lands in /autograder/source, which only
    root reads), so that each student's hidden cases are their own."""
    out_zip = Path(out_zip)
    files = source_files(kit)
    missing = [name for name in ("autograder/gradescope.py", "autograder/grade.py", "pyproject.toml",
                                 *(str(unit.reference_path.relative_to(units.ROOT)) for unit in units.all_units()))
               if name not in files]
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
        _add(archive, "run_autograder", run_script(unsandboxed, unit), executable=True)
        for name in files:
            _add(archive, name, (kit / name).read_bytes())
        if course_secret_file:
            from autograder import seeds

            _add(archive, COURSE_SECRET, seeds.read_secret_file(course_secret_file) + b"\n")
    partial.replace(out_zip)
    return out_zip


# ---- In the container: grade one submission and write results.json ----

def _not_graded(message, name="submission", path="", unit=None):
    """A result with every rubric test at 0 and ``message`` as what the student reads (no rows where no unit
    could be told: then nothing was graded at all)."""
    from autograder.grade import Result, TestResult

    tests = [TestResult(test.id, test.task, 0, test.points, "Not graded: see the message at the top.")
             for test in (unit.rubric.TESTS if unit else ())]
    return Result(name, str(path), tests, [message], unit=unit.name if unit else "")


def _expected(unit):
    """The names a student may give the file, the notebook first (what most students upload)."""
    chosen = [unit] if unit else units.all_units()
    return " or ".join(name for one in chosen for name in reversed(one.file_names))


def unit_of_upload(submission, unit=None):
    """The unit to grade ``submission`` (a folder) as: ``unit`` where the bundle names one, else the unit whose
    module name one uploaded file has (``rotary_alibi.ipynb``), else the one whose functions the upload defines,
    else the course's first unit (an empty upload is then graded 0 out of that unit's points)."""
    if unit is not None:
        return units.get(unit) if isinstance(unit, str) else unit
    from autograder.load import regular_files

    try:
        named = {found for path in regular_files(submission) if (found := units.of_file_name(path.parts[-1]))}
    except (LoadError, OSError):
        named = set()
    if len(named) == 1:
        return named.pop()
    try:  # files of other names: the unit whose functions they define; else the course's first unit
        guessed = units.of_definitions([submission])
    except Exception:
        guessed = None
    return guessed or units.all_units()[0]


def _find_file(submission, unit=None):
    """The file to grade in ``submission``, or a Result that says why there is none."""
    if not submission.is_dir():
        return None, _not_graded(f"No submission folder was found at {submission}. {_TELL_INSTRUCTOR}", unit=unit)
    from autograder.load import regular_files, shown_name

    try:  # the upload is the student's: walked without following a link, anything not a regular file refused
        uploaded = [shown_name(path.parts) for path in regular_files(submission)]
    except LoadError as error:
        return None, _not_graded(f"Not graded: {error}", unit=unit)
    listing = (", ".join(uploaded[:10]) + (f" and {len(uploaded) - 10} more" if len(uploaded) > 10 else "")) \
        if uploaded else "nothing"
    if unit is None:
        return None, _not_graded(f"Could not tell which assignment this is: upload your {_expected(None)}."
                                 f"\nYou uploaded: {listing}.")
    try:
        return find_submission_file(submission, unit.file_names), None
    except LoadError as error:
        if "several" in str(error):
            message = f"Could not tell which file to grade: {error}"
        else:
            message = f"No file to grade was found. Upload your {_expected(unit)}."
        return None, _not_graded(f"{message}\nYou uploaded: {listing}.", unit=unit)


def _number_tests(tests, rubric):
    """Number the tests "task.test" in rubric order (Gradescope sorts and labels by number)."""
    order = {task.name: index for index, task in enumerate(rubric.TASKS + (rubric.TIMING,), start=1)}
    seen, numbers = {}, {}
    for test in tests:
        rubric_test = rubric.TEST_BY_ID.get(test["name"])
        if rubric_test is not None and rubric_test.task in order:
            seen[rubric_test.task] = seen.get(rubric_test.task, 0) + 1
            test["number"] = numbers[test["name"]] = f"{order[rubric_test.task]}.{seen[rubric_test.task]}"
        elif test["name"].endswith(" (details)") and test["name"][:-10] in numbers:
            test["number"] = numbers[test["name"][:-10]] + ".1"  # right after its test


HIDDEN_CASE_LATER = {
    "after_due_date": "after the due date",
    "after_published": "once the grades are published",
    "hidden": "to the instructor only",
}


def _with_visibility(tests, rubric):
    """Each test at its rubric visibility; where its feedback quotes a hidden case and the rubric shows that
    later than the score, the score's entry says only what failed in general, and a second entry of no points
    (``<test> (details)``) holds the feedback, at the later visibility."""
    shown = []
    for test in tests:
        rubric_test = rubric.TEST_BY_ID.get(test["name"])
        visibility = rubric_test.visibility if rubric_test else "visible"
        details = rubric_test.details if rubric_test else "visible"
        test["visibility"] = visibility
        shown.append(test)
        if test["status"] == "passed" or details == visibility:
            continue
        full = test["output"]
        test["output"] = without_the_case(full, rubric_test,
                                          f"shown {HIDDEN_CASE_LATER[details]}, in \"{test['name']} (details)\"")
        shown.append({"name": f"{test['name']} (details)", "score": 0, "max_score": 0, "status": test["status"],
                      "output": full, "visibility": details})
    return shown


def without_the_case(feedback, rubric_test, when):
    """A failed test's feedback without the hidden case it quotes: what failed, the likely mistake if named,
    and ``when`` the case itself is shown."""
    # The diagnosis stays: the mistake's name, how the output goes wrong and under which condition quote no
    # expected value.
    told = [line for line in feedback.splitlines()
            if line.startswith(("Likely mistake:", "How it goes wrong:", "When it goes wrong:"))]
    checks = f" ({rubric_test.checks})" if rubric_test else ""
    return "\n".join(filter(None, [f"Failed: a hidden case of this test{checks} does not pass.", *told,
                                    f"Which case, and expected against got, is {when}."]))


def to_results(result, graded_file=None, sandboxed=True, warning=""):
    """Gradescope's results.json for ``result``: visibility on each test, and an output that guides the student."""
    results = result.to_gradescope()
    named = result.unit or next((unit.name for test in result.tests[:1] for unit in units.all_units()
                                 if test.id in unit.rubric.TEST_BY_ID), "")
    if named:
        rubric = units.get(named).rubric
        results["tests"] = _with_visibility(results["tests"], rubric)
        _number_tests(results["tests"], rubric)
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
            lines.append("Your code ran in the grader's sandbox: no network and none of the grader's files"
                         + (f" ({result.sandbox})." if result.sandbox else "."))
    if result.notes:
        if graded_file is not None:
            lines += ["", "Notes on your file:"]
        lines += list(result.notes)
    if result.cases_from:
        lines += ["", result.cases_from]
    results["output"] = "\n".join(lines)
    results["stdout_visibility"] = "visible"
    return results


def grade_upload(submission_dir, secrets=(), platform="Gradescope", student=None, course_secret=None, unit=None):
    """Grade the file in ``submission_dir`` as a platform does: (Result, the file's path shown, warning, sandboxed).

    ``student`` is the submission's identity on the platform and ``course_secret`` the course's (bytes), from
    which the hidden cases' seed is drawn (autograder/seeds.py); without a secret, the shared seed.
    ``secrets``: what no job may read beyond the kit (the platform's tests, results, metadata). The
    sandbox is the strongest the container allows (sandbox.resolve_sandbox); where there is none, the
    submission is not graded (a Result that says so) unless the instructor set UNSANDBOXED_VARIABLE.
    ``unit`` (a name) is the assignment's unit where the bundle names one; else the upload's name tells.
    """
    from autograder.grade import Grader
    from autograder.sandbox import SandboxMissing

    unit = unit_of_upload(submission_dir, unit)
    path, refusal = _find_file(submission_dir, unit)
    if refusal is not None:
        return refusal, None, "", False
    shown = path.relative_to(submission_dir)
    print(f"Grading {inert_line(str(shown))}")
    try:
        load(path, unit.file_names)  # a notebook that is not JSON, a file that is not UTF-8: said before anything starts
    except (LoadError, OSError) as error:
        message = str(error) if isinstance(error, LoadError) else f"{shown}: {error.strerror or error}"
        return _not_graded(f"Could not read your file. {message}", path.stem, path, unit), None, "", False
    warning = ""
    try:
        grader = Grader(unit, sandbox="required", secrets=secrets, course_secret=course_secret)
    except SandboxMissing as problem:
        print(f"Sandbox: {problem}")
        if os.environ.get(UNSANDBOXED_VARIABLE) != "1":
            return _not_graded(
                f"Not graded: the grader's sandbox does not work on this {platform} autograder, and it never "
                f"runs a submission without one. {_TELL_INSTRUCTOR}\n(For the instructor: {problem} Or set "
                f"{UNSANDBOXED_VARIABLE}=1 to grade trusted code without a sandbox; see autograder/gradescope.py.)",
                path.stem, path, unit), None, "", False
        warning = (f"WARNING: graded WITHOUT the sandbox (the instructor set {UNSANDBOXED_VARIABLE}=1 because no "
                   "sandbox can run here).")
        print(warning)
        grader = Grader(unit, sandbox="off", course_secret=course_secret)
    try:
        print(f"Sandbox: {grader.tier}")
        result = grader.grade(path, student=student)
    finally:
        grader.close()
    print(f"Score: {result.score:g}/{result.max_score:g}")
    return result, shown, warning, not warning


def secrets_of(root):
    """What of a Gradescope tree no job may read: the kit's source, the upload's metadata, the results."""
    return [root / "source", root / "results", root / "submission_metadata.json"]


COURSE_SECRET = "course_secret"  # in the bundle (gradescope-bundle --course-secret): /autograder/source/course_secret


def course_secret_in(folder):
    """The course secret shipped in a platform's hidden folder, else the environment's; None without one."""
    from autograder import seeds

    shipped = Path(folder) / COURSE_SECRET
    return seeds.course_secret(shipped if shipped.is_file() and not shipped.is_symlink() else None)


def gradescope_identity(metadata_path):
    """The submitters' Gradescope user ids (sorted and joined, for a group), or None where unreadable."""
    try:
        metadata = json.loads(Path(metadata_path).read_text(encoding="utf-8"))
        ids = sorted(str(user.get("id") or user.get("email")) for user in metadata.get("users") or []
                     if isinstance(user, dict) and (user.get("id") or user.get("email")))
    except (OSError, ValueError, AttributeError):
        return None
    return "gradescope:" + "+".join(ids) if ids else None


def _grade(root):
    """results.json's content for the submission in ``ROOT/submission``."""
    result, shown, warning, sandboxed = grade_upload(root / "submission", secrets_of(root),
                                                     student=gradescope_identity(root / "submission_metadata.json"),
                                                     course_secret=course_secret_in(root / "source"),
                                                     unit=os.environ.get(UNIT_VARIABLE) or None)
    return to_results(result, shown, sandboxed=sandboxed, warning=warning)


def _crashed(root=None):
    """results.json for a fault of the grader's own; the stdout that holds its traceback is not shown to students.
    Its tests are those of the upload's unit, at 0, where the unit can still be told."""
    try:
        unit = unit_of_upload(Path(root) / "submission", os.environ.get(UNIT_VARIABLE) or None) if root else None
    except Exception:
        unit = None
    results = to_results(_not_graded(f"The grader failed while grading your submission. {_TELL_INSTRUCTOR}",
                                     unit=unit))
    results["stdout_visibility"] = "hidden"
    return results


def run(root=None):
    """Grade ``ROOT/submission`` and write ``ROOT/results/results.json``; 0 once that file is written."""
    root = Path(root or os.environ.get("AUTOGRADER_ROOT") or DEFAULT_ROOT)
    started = time.monotonic()
    print(f"Kit: {Path(__file__).resolve().parent}")
    try:
        results = _grade(root)
        json.dumps(results, allow_nan=False)  # a NaN score would make the file unreadable: the grader's fault
    except Exception:
        traceback.print_exc(file=sys.stdout)  # for the instructor's log (hidden from students: see _crashed)
        results = _crashed(root)
    results["execution_time"] = round(time.monotonic() - started)
    return write_results(root, results)


def write_results(root, results):
    """Write ``ROOT/results/results.json`` (both platforms' place for it); 0 once written, else 1, said."""
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
