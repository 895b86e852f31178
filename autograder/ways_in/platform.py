"""What the platforms' containers share (Gradescope's and PrairieLearn's): the kit's files a bundle ships,
the image's setup, the entry script that makes the secrets root's, grading one upload with the strongest
sandbox the container allows, and writing ``results/results.json``.

Each platform's module (gradescope, prairielearn) adds its own layout and result format; neither imports
the other.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.core import recognize, units
from autograder.intake.inert import inert_line
from autograder.intake.load import LoadError, find_submission_file, load

KIT = Path(__file__).resolve().parents[2]
PACKAGES = ("autograder", "autograder/intake", "autograder/sandbox", "autograder/core", "autograder/ways_in",
            "autograder/course", "autograder/units", "solutions")
TOP_FILES = ("pyproject.toml", "README.md")
TORCH = "torch==2.13.0"  # the version the kit pins everywhere; on Gradescope, its CPU build
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
UNSANDBOXED_VARIABLE = "AUTOGRADER_UNSANDBOXED"
TELL_INSTRUCTOR = "This is not a problem with your code: tell your instructor."
SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu or Debian).
# Made by `python -m autograder gradescope-bundle`; see autograder/ways_in/gradescope.py.
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


def dependencies(pyproject_text):
    """The ``dependencies = [...]`` of pyproject.toml, as pip arguments (Python 3.10 has no tomllib)."""
    match = re.search(r"^dependencies\s*=\s*\[(.*?)\]", pyproject_text, re.MULTILINE | re.DOTALL)
    if not match:
        raise ValueError("pyproject.toml has no dependencies = [...] list")
    return re.findall(r"\"([^\"]+)\"", match.group(1))


def setup_script(pyproject_text, venv="/autograder/venv"):
    """setup.sh: bubblewrap, the venv, the CPU build of torch, then the kit's other dependencies."""
    from autograder.sandbox.users import JOB_UIDS

    quoted = " ".join(f"'{requirement}'" for requirement in dependencies(pyproject_text) if
                      not requirement.startswith("torch"))
    return SETUP_SH.format(torch=TORCH, index=TORCH_CPU_INDEX, dependencies=quoted, venv=venv,
                           first_uid=JOB_UIDS.start, last_uid=JOB_UIDS.stop - 1)


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


def untracked(kit, files):
    """Those of ``files`` git does not track (empty outside a git checkout)."""
    if not (kit / ".git").exists() or not shutil.which("git"):
        return []
    listed = subprocess.run(["git", "ls-files", "--", *files], cwd=kit, capture_output=True, text=True)
    if listed.returncode:
        return []
    tracked = set(listed.stdout.splitlines())
    return [name for name in files if name not in tracked]


def not_graded(message, name="submission", path="", unit=None):
    """A result with every rubric test at 0 and ``message`` as what the student reads (no rows where no unit
    could be told: then nothing was graded at all)."""
    from autograder.core.grade import Result, TestResult

    tests = [TestResult(test.id, test.task, 0, test.points, "Not graded: see the message at the top.")
             for test in (unit.rubric.TESTS if unit else ())]
    return Result(name, str(path), tests, [message], unit=unit.name if unit else "")


def _expected(unit):
    """The names a student may give the file, the notebook first (what most students upload)."""
    chosen = [unit] if unit else units.all_units()
    return " or ".join(name for one in chosen for name in reversed(one.file_names))


def unit_named(name):
    """The unit called ``name`` (the one a bundle or a question was made for), or None where it names none."""
    if not isinstance(name, str):
        return name
    try:
        return units.get(name.strip()) if name.strip() else None
    except KeyError:
        return None


def wrong_assignment(unit, uploaded, whose, why=""):
    """What a student reads who uploaded another unit's file (``whose``: that unit's name): which assignment this
    is and the file it expects; ``why``, where the file is the other's by what it holds (core/recognize.py)."""
    which = (f"{uploaded}, which holds the {whose} assignment's functions ({why}), not this one's" if why
             else f"{uploaded}, which is the {whose} assignment's")
    return (f"This is the {unit.name} assignment: upload {unit.module_name}.ipynb or .py; you uploaded {which}. "
            "Nothing was graded.")


def _other_unit_held(unit, submission, shown):
    """A Result refusing ``submission`` (as loaded) where what it holds clearly says another unit
    (recognize.other_unit: the same rule as a class run's and nbgrader's, through Grader); None otherwise."""
    other = recognize.other_unit(submission, unit)
    if other is None:
        return None
    whose, why = other
    return not_graded(wrong_assignment(unit, inert_line(str(shown)), whose, why), submission.name, submission.path,
                      unit)


def _says_this_unit(submission, named, unit):
    """Whether the file of ``submission`` named after the unit ``named`` holds ``unit``'s work by its contents
    (recognize: this unit has the most evidence, its name counted for the other): a student's own notebook saved
    under the other assignment's name is graded, not refused."""
    try:
        loaded = load(submission, named.file_names)
    except (LoadError, OSError):
        return False
    return recognize.recognise(loaded).best() == unit.name


def _find_file(submission, unit):
    """The file to grade in ``submission``, or a Result that says why there is none (another unit's file
    among them: see wrong_assignment)."""
    if not submission.is_dir():
        return None, not_graded(f"No submission folder was found at {submission}. {TELL_INSTRUCTOR}", unit=unit)
    from autograder.intake.load import regular_files, shown_name

    try:  # the upload is the student's: walked without following a link, anything not a regular file refused
        files = regular_files(submission)
    except LoadError as error:
        return None, not_graded(f"Not graded: {error}", unit=unit)
    uploaded = [shown_name(path.parts) for path in files]
    listing = (", ".join(uploaded[:10]) + (f" and {len(uploaded) - 10} more" if len(uploaded) > 10 else "")) \
        if uploaded else "nothing"
    names = [path.parts[-1] for path in files]
    others = [(shown, other) for path, shown in zip(files, uploaded)
              if (other := units.of_file_name(path.parts[-1])) is not None and other.name != unit.name]
    if others and not set(names) & set(unit.file_names) and not _says_this_unit(submission, others[0][1], unit):
        # only another unit's file, and its contents do not say this unit (core/recognize.py): not graded here
        shown, other = others[0]
        return None, not_graded(wrong_assignment(unit, inert_line(shown), other.name), unit=unit)
    try:
        return find_submission_file(submission, unit.file_names), None
    except LoadError as error:
        if "several" in str(error):
            message = f"Could not tell which file to grade: {error}"
        else:
            message = f"No file to grade was found. Upload your {_expected(unit)}."
        return None, not_graded(f"{message}\nYou uploaded: {listing}.", unit=unit)


def without_the_case(test, rubric_test, when):
    """What a student may read of a failed test before its hidden case is released (voice.before_release): what
    failed, the diagnosis that quotes no case, of their own exception its class and line; and ``when`` the case is
    shown. Built from the test's typed parts (``test``: a grade.TestResult), never from its text."""
    from autograder.core import voice

    return voice.before_release(test, rubric_test.checks if rubric_test else "", when)


def grade_upload(submission_dir, unit, secrets=(), platform="Gradescope", student=None, course_secret=None):
    """Grade the file in ``submission_dir`` as a platform does: (Result, the file's path shown, warning, sandboxed).

    ``student`` is the submission's identity on the platform and ``course_secret`` the course's (bytes), from
    which the hidden cases' seed is drawn (autograder/core/seeds.py); without a secret, the shared seed.
    ``secrets``: what no job may read beyond the kit (the platform's tests, results, metadata). The
    sandbox is the strongest the container allows (sandbox.resolve_sandbox); where there is none, the
    submission is not graded (a Result that says so) unless the instructor set UNSANDBOXED_VARIABLE.
    ``unit`` (a Unit or its name) is the assignment's, as the bundle or the question names it, never the
    upload's: an upload of another unit's file (by its name, or by what it holds: core/recognize.py) is not graded,
    and the Result says which assignment this is and which file it expects.
    """
    from autograder.core.grade import Grader, grading_process_threads
    from autograder.sandbox.server import SandboxMissing

    unit = unit_named(unit)
    if unit is None:  # each platform says first what its instructor must do (gradescope, prairielearn)
        raise ValueError("grade_upload needs the assignment's unit")
    path, refusal = _find_file(submission_dir, unit)
    if refusal is not None:
        return refusal, None, "", False
    shown = path.relative_to(submission_dir)
    print(f"Grading {inert_line(str(shown))}")
    try:
        submission = load(path, unit.file_names)  # a notebook that is not JSON, a file that is not UTF-8: said first
    except (LoadError, OSError) as error:
        message = str(error) if isinstance(error, LoadError) else f"{shown}: {error.strerror or error}"
        return not_graded(f"Could not read your file. {message}", path.stem, path, unit), None, "", False
    refusal = _other_unit_held(unit, submission, shown)
    if refusal is not None:
        return refusal, None, "", False
    warning = ""
    grading_process_threads()
    try:
        grader = Grader(unit, sandbox="required", secrets=secrets, course_secret=course_secret)
    except SandboxMissing as problem:
        print(f"Sandbox: {problem}")
        if os.environ.get(UNSANDBOXED_VARIABLE) != "1":
            return not_graded(
                f"Not graded: the grader's sandbox does not work on this {platform} autograder, and it never "
                f"runs a submission without one. {TELL_INSTRUCTOR}\n(For the instructor: {problem} Or set "
                f"{UNSANDBOXED_VARIABLE}=1 to grade trusted code without a sandbox; see autograder/ways_in/gradescope.py.)",
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
COURSE_SECRET = "course_secret"  # in the bundle (gradescope-bundle --course-secret): /autograder/source/course_secret


def course_secret_in(folder):
    """The course secret shipped in a platform's hidden folder, else the environment's; None without one."""
    from autograder.core import seeds

    shipped = Path(folder) / COURSE_SECRET
    return seeds.course_secret(shipped if shipped.is_file() and not shipped.is_symlink() else None)


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
