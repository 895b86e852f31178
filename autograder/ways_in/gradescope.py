"""Gradescope: the autograder zip, and what runs in it for each submission.

Making the zip (on the instructor's machine): ``main_bundle("autograder.zip", unit="positional_encodings")``
(``python -m autograder gradescope-bundle autograder.zip --unit positional_encodings``; without ``--unit`` the
command refuses, exit status 2: a zip grades one unit, the assignment it is uploaded to) writes, at the top
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
  ``pip install`` would copy ``solutions/`` and the units' hidden cases there,
  where student code can read them. It is imported from ``/autograder/source``.
- ``run_autograder`` (for each submission) makes the source, the upload, its
  metadata (which holds earlier results) and the results folder root's alone,
  and ``/autograder`` passable but not listable, then runs
  ``python -m autograder.ways_in.gradescope /autograder``, which is ``run(root)`` below.
  The root may be given as an argument or ``AUTOGRADER_ROOT``, the Python as
  ``AUTOGRADER_PYTHON`` (default ``/autograder/venv/bin/python``): the tests run
  the script on a simulated tree in a temporary folder, and in a real container
  (tests/ways_in/test_platform_containers.py). It always leaves a
  ``results/results.json``, if need be one it writes itself.

``run(root)`` grades the file in ``ROOT/submission`` (``<unit>.ipynb`` or ``.py``, the unit that
run_autograder's ``AUTOGRADER_UNIT`` names, at any depth; see ``load.find_submission_file``) with the kit's
``Grader`` and writes ``ROOT/results/results.json`` in Gradescope's schema: every
rubric test with its points, status, feedback and ``visibility``, and a top-level
``output`` that says which file was graded, how the code ran and what to read.
Every outcome writes a results.json and exits 0, so that Gradescope shows it: no
file to grade (score 0, naming the file names expected), several candidates, a
notebook that is not JSON, code that crashes, an upload of another unit's file
(score 0, naming this assignment and the file it expects; see
``platform.wrong_assignment``), and a fault of the grader's own (score 0, a plain
sentence with an incident id; the traceback goes to the instructor's log under
that id, and the log is then not shown to students since it may quote the
hidden cases).

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
job user of its own under a seccomp filter (tier C, ``autograder/sandbox/users.py``),
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
import stat
import sys
import time
import zipfile
from pathlib import Path

from autograder.core import units
from autograder.ways_in.platform import (COURSE_SECRET, KIT, TELL_INSTRUCTOR, UNSANDBOXED_VARIABLE, course_secret_in,
                                         entry_script, grade_upload, not_graded, setup_script, source_files,
                                         unit_named, untracked, without_the_case, write_results)

# What grading needs, as pyproject.toml's packages: each folder's .py files, not deeper; every unit's folder
# and its cases (a unit is a package of autograder/units).
DEFAULT_ROOT = "/autograder"
DEFAULT_VENV = "/autograder/venv"
DEFAULT_PYTHON = DEFAULT_VENV + "/bin/python"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so that the same sources make the same zip


def _fallback_json():
    """What run_autograder writes when Python itself could not start (a broken setup)."""
    return json.dumps({"score": 0, "output": f"The grader could not start. {TELL_INSTRUCTOR}",
                       "stdout_visibility": "hidden", "tests": []})


UNIT_VARIABLE = "AUTOGRADER_UNIT"  # the unit a bundle grades; without it, nothing is graded


def run_script(unit, unsandboxed=False):
    """run_autograder for ``unit`` (a name): every upload is graded as that unit's assignment; with
    ``unsandboxed`` it grades without a sandbox where none can run."""
    line = f"export {UNSANDBOXED_VARIABLE}=1" if unsandboxed else \
        f"# export {UNSANDBOXED_VARIABLE}=1  # grade UNSANDBOXED where no sandbox can run: trusted code only"
    line += f"\nexport {UNIT_VARIABLE}={units.get(unit).name}  # the assignment this bundle grades"
    return entry_script(
        "run_autograder",
        "# Gradescope runs this for each submission, as root, in /autograder. It grades /autograder/submission\n"
        "# and writes /autograder/results/results.json (made by `python -m autograder gradescope-bundle`).",
        kit='"$ROOT/source"', secrets=("$KIT", "$ROOT/submission", "$ROOT/results", "$ROOT/submission_metadata.json"),
        secret_words="The hidden cases and the reference (in $KIT), the upload and its metadata (earlier results "
                     "included)", module="autograder.ways_in.gradescope", root=DEFAULT_ROOT, python=DEFAULT_PYTHON,
        fallback=_fallback_json(), preamble=line)


def _add(archive, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def main_bundle(out_zip, *, unit, unsandboxed=False, kit=KIT, course_secret_file=None):
    """Write the Gradescope autograder zip for ``unit`` (its name) to ``out_zip``; returns its path.

    A zip grades one unit, the assignment it is uploaded to: an upload of another unit's file scores 0 and
    says which file this assignment expects (a KeyError names the units where ``unit`` is none of them).

    ``course_secret_file``: the course secret to ship in the zip (it lands in /autograder/source, which only
    root reads), so that each student's hidden cases are their own."""
    out_zip = Path(out_zip)
    unit = units.get(unit if isinstance(unit, str) else unit.name).name
    files = source_files(kit)
    missing = [name for name in ("autograder/ways_in/gradescope.py", "autograder/core/grade.py", "pyproject.toml",
                                 *(str(unit.reference_path.relative_to(units.ROOT)) for unit in units.all_units()))
               if name not in files]
    if missing:
        raise FileNotFoundError(f"the kit at {kit} lacks {', '.join(missing)}")
    not_tracked = untracked(kit, files)
    if not_tracked:
        print(f"WARNING: the zip holds files git does not track: {', '.join(not_tracked)}", file=sys.stderr)
    pyproject = (kit / "pyproject.toml").read_text(encoding="utf-8")
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    partial = out_zip.with_name(out_zip.name + ".partial")
    with zipfile.ZipFile(partial, "w") as archive:
        _add(archive, "setup.sh", setup_script(pyproject), executable=True)
        _add(archive, "run_autograder", run_script(unit, unsandboxed), executable=True)
        for name in files:
            _add(archive, name, (kit / name).read_bytes())
        if course_secret_file:
            from autograder.core import seeds

            _add(archive, COURSE_SECRET, seeds.read_secret_file(course_secret_file) + b"\n")
    partial.replace(out_zip)
    return out_zip


# ---- In the container: grade one submission and write results.json ----


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


def _with_visibility(tests, rubric, graded=()):
    """Each test at its rubric visibility; where its feedback quotes a hidden case and the rubric shows that
    later than the score, the score's entry says only what failed in general (from ``graded``'s typed parts: the
    grade.TestResult of each entry), and a second entry of no points (``<test> (details)``) holds the feedback,
    at the later visibility."""
    shown, graded = [], {test.id: test for test in graded}
    for test in tests:
        rubric_test = rubric.TEST_BY_ID.get(test["name"])
        visibility = rubric_test.visibility if rubric_test else "visible"
        details = rubric_test.details if rubric_test else "visible"
        test["visibility"] = visibility
        shown.append(test)
        if test["status"] == "passed" or details == visibility:
            continue
        full = test["output"]
        test["output"] = without_the_case(graded.get(test["name"]), rubric_test,
                                          f"shown {HIDDEN_CASE_LATER[details]}, in \"{test['name']} (details)\"")
        shown.append({"name": f"{test['name']} (details)", "score": 0, "max_score": 0, "status": test["status"],
                      "output": full, "visibility": details})
    return shown


def to_results(result, graded_file=None, sandboxed=True, warning=""):
    """Gradescope's results.json for ``result``: visibility on each test, and an output that guides the student."""
    results = result.to_gradescope()
    named = result.unit or next((unit.name for test in result.tests[:1] for unit in units.all_units()
                                 if test.id in unit.rubric.TEST_BY_ID), "")
    if named:
        rubric = units.get(named).rubric
        results["tests"] = _with_visibility(results["tests"], rubric, result.tests)
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
    if result.cases_for_student:
        lines += ["", result.cases_for_student]
    results["output"] = "\n".join(lines)
    results["stdout_visibility"] = "visible"
    return results


def secrets_of(root):
    """What of a Gradescope tree no job may read: the kit's source, the upload's metadata, the results."""
    return [root / "source", root / "results", root / "submission_metadata.json"]


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
    unit = unit_named(os.environ.get(UNIT_VARIABLE, ""))
    if unit is None:  # never the upload's own name: another unit's finished file would score in full
        return to_results(not_graded(
            f"Not graded: this autograder does not say which assignment it grades. {TELL_INSTRUCTOR}\n(For the "
            f"instructor: run_autograder sets no known {UNIT_VARIABLE}; make the zip again with `python -m "
            f"autograder gradescope-bundle --unit UNIT`, UNIT one of {', '.join(units.names())}.)"))
    result, shown, warning, sandboxed = grade_upload(root / "submission", unit, secrets_of(root),
                                                     student=gradescope_identity(root / "submission_metadata.json"),
                                                     course_secret=course_secret_in(root / "source"))
    results = to_results(result, shown, sandboxed=sandboxed, warning=warning)
    if result.grader_fault:  # its log (stdout and stderr) holds the fault's traceback: for the instructor
        results["stdout_visibility"] = "hidden"
    return results


def _crashed(message):
    """results.json for a fault of the grader's own (``message``: what the student reads, with the incident id);
    the log that holds its traceback is not shown to students. Its tests are the bundle's unit's, at 0."""
    results = to_results(not_graded(message, unit=unit_named(os.environ.get(UNIT_VARIABLE, ""))))
    results["stdout_visibility"] = "hidden"
    return results


def run(root=None):
    """Grade ``ROOT/submission`` and write ``ROOT/results/results.json``; 0 once that file is written."""
    root = Path(root or os.environ.get("AUTOGRADER_ROOT") or DEFAULT_ROOT)
    started = time.monotonic()
    print(f"Kit: {Path(__file__).resolve().parents[1]}")
    try:
        results = _grade(root)
        json.dumps(results, allow_nan=False)  # a NaN score would make the file unreadable: the grader's fault
    except Exception as error:
        from autograder.core.grade import grader_fault

        # The traceback to the instructor's log (hidden from students: see _crashed), the id to the student.
        message, _ = grader_fault("the upload", "The grader failed while grading your submission", error)
        results = _crashed(message)
    results["execution_time"] = round(time.monotonic() - started)
    return write_results(root, results)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.ways_in.gradescope",
                                     description="Grade Gradescope's ROOT/submission into ROOT/results/results.json.")
    parser.add_argument("root", nargs="?", help=f"the autograder root (default: $AUTOGRADER_ROOT or {DEFAULT_ROOT})")
    return run(parser.parse_args(argv).root)


if __name__ == "__main__":
    sys.exit(main())
