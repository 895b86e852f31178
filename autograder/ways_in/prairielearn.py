"""PrairieLearn's external grader: what the grading container runs, and the files an instructor adds.

PrairieLearn runs one Docker container per submission, as root, with the student's files in
``/grade/student``, the question's ``tests/`` in ``/grade/tests``, the folders named in the
question's ``externalGradingOptions.serverFilesCourse`` in ``/grade/serverFilesCourse``, and the
question's data in ``/grade/data/data.json``; the container writes ``/grade/results/results.json``.

What the instructor gets, from ``python -m autograder prairielearn-bundle OUT`` (``main_bundle``):

* ``OUT/image/``: a Dockerfile and ``setup.sh`` for the grading image: Python, the CPU build of
  torch, the kit's other dependencies, libseccomp and the job users. It holds nothing secret (no
  reference, no hidden case), so it may be pushed to a public registry, as PrairieLearn needs.
* ``OUT/serverFilesCourse/positional_encodings_kit/``: the kit's grading source and the entry point
  ``run_prairielearn``. It goes into the course's ``serverFilesCourse/``, which students never see.
* ``OUT/questions/<unit>/``: a question per unit that uses both (``info.json``, ``question.html``, and
  ``tests/unit``, the unit's name), to copy into the course's ``questions/``.

In the container, ``run_prairielearn`` makes everything below /grade but the student's files root's
alone, then runs ``python -m autograder.ways_in.prairielearn /grade`` (``run`` below), which grades the file in
``/grade/student`` exactly as the Gradescope bundle does (``platform.grade_upload``: the strongest
sandbox the container allows, tier C under Docker's defaults) as the unit the question names (its
``tests/unit``, which PrairieLearn copies to ``/grade/tests/unit``; never the upload's own name) and writes
results.json in PrairieLearn's
format: ``gradable``, ``score`` in [0, 1], ``message``, ``output`` and ``tests`` (``name``,
``description``, ``points``, ``max_points``, ``message``, ``output``). A submission with no file to
grade, one that cannot be read, or another unit's file (by its name, or by the functions it defines: the
other assignment's finished file renamed), is ``gradable: false`` with a message that says why (which
assignment this is and the file it expects), so that it costs the student no attempt; so is a fault of
the grader's own, whose message is a plain sentence with an incident id (the traceback is in the job's log,
for the instructor, under that id). A question without ``tests/unit`` grades nothing and says so.

PrairieLearn shows a grading result at once, with no date of its own for feedback: where the rubric
shows a test's details later than its score (``rubric.Test.details``), the test's message says what
failed and the likely mistake, without the hidden case.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import uuid

from autograder.ways_in import platform
from autograder.core import units

DEFAULT_ROOT = "/grade"
DEFAULT_VENV = "/opt/positional-encodings-kit/venv"
KIT_FOLDER = "positional_encodings_kit"  # its name in the course's serverFilesCourse
UNIT_FILE = "unit"  # in the question's tests/ (PrairieLearn's /grade/tests/): the unit the question grades

DOCKERFILE = """\
# The grading image for PrairieLearn (made by `python -m autograder prairielearn-bundle`). It holds Python,
# the CPU build of torch, the kit's other dependencies and the job users, and nothing secret: the kit itself
# comes at grading time from the course's serverFilesCourse. Build and push it where PrairieLearn pulls from:
#   docker build -t YOUR_NAME/positional-encodings-grader image/ && docker push YOUR_NAME/positional-encodings-grader
ARG BASE=ubuntu:24.04
FROM ${{BASE}}
COPY setup.sh /tmp/setup.sh
RUN AUTOGRADER_VENV={venv} bash /tmp/setup.sh && rm /tmp/setup.sh && rm -rf /var/lib/apt/lists/*
"""

QUESTION_HTML = """\
<pl-question-panel>
  <p>Upload your <code>{name}.ipynb</code> (or <code>{name}.py</code>). It is graded
  by the kit's hidden tests; the feedback names the first wrong value of each failing test and, where it
  recognises one, the likely mistake.</p>
</pl-question-panel>
<pl-file-upload file-names="{name}.ipynb, {name}.py" optional-file-names="true">
</pl-file-upload>
<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


def _fallback_json():
    """What run_prairielearn writes when Python itself could not start (a broken image)."""
    return json.dumps({"gradable": False, "score": 0, "message": f"The grader could not start. {platform.TELL_INSTRUCTOR}",
                       "tests": []})


def run_script():
    """run_prairielearn: the question's entry point, in the kit's folder of serverFilesCourse."""
    return platform.entry_script(
        "run_prairielearn",
        "# PrairieLearn's entry point for the question (externalGradingOptions.entrypoint), run as root in the\n"
        "# grading container for each submission. Made by `python -m autograder prairielearn-bundle`.",
        kit='"$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        secrets=("$ROOT/serverFilesCourse", "$ROOT/tests", "$ROOT/data", "$ROOT/results", "$KIT"),
        secret_words="The kit (the reference, the hidden cases), the question's tests and data, the results",
        module="autograder.ways_in.prairielearn", root=DEFAULT_ROOT, python=DEFAULT_VENV + "/bin/python",
        fallback=_fallback_json())


FIRST_UUID = "6f3c2a9e-5d1b-4c7a-9e2f-8b4d1a7c3e50"  # the first unit's question, as it was published


def question_info(image, unit):
    """A unit's question's info.json: external grading with the kit's image, entry point and serverFilesCourse.
    The question's ``tests/unit`` (UNIT_FILE) tells the entry point which unit it is."""
    return {
        "uuid": FIRST_UUID if unit.rubric.ORDER == 1 else str(uuid.uuid5(uuid.UUID(FIRST_UUID), unit.name)),
        "title": f"{unit.title}: the whole assignment",
        "topic": "Transformers",
        "tags": ["autograded"],
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "serverFilesCourse": [f"{KIT_FOLDER}/"],
            "entrypoint": f"{DEFAULT_ROOT}/serverFilesCourse/{KIT_FOLDER}/run_prairielearn",
            "timeout": 180,
        },
    }


def main_bundle(out_dir, image="YOUR_NAME/positional-encodings-grader", kit=platform.KIT, course_secret_file=None):
    """Write the image context, the serverFilesCourse folder and a sample question to ``out_dir``.

    ``course_secret_file``: the course secret, copied into serverFilesCourse (which students never see), so that
    each variant's hidden cases are its own."""
    out_dir = Path(out_dir)
    files = platform.source_files(kit)
    pyproject = (kit / "pyproject.toml").read_text(encoding="utf-8")
    written = {
        "image/setup.sh": platform.setup_script(pyproject),
        "image/Dockerfile": DOCKERFILE.format(venv=DEFAULT_VENV),
        f"serverFilesCourse/{KIT_FOLDER}/run_prairielearn": run_script(),
    }
    for unit in units.all_units():  # a question per unit: questions/<unit>/
        written[f"questions/{unit.name}/info.json"] = json.dumps(question_info(image, unit), indent=2) + "\n"
        written[f"questions/{unit.name}/question.html"] = QUESTION_HTML.format(name=unit.module_name)
        written[f"questions/{unit.name}/tests/README"] = (
            f"The kit's hidden tests come from serverFilesCourse; {UNIT_FILE} names the unit this question grades.\n")
        written[f"questions/{unit.name}/tests/{UNIT_FILE}"] = unit.name + "\n"
    for name, text in written.items():
        target = out_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for name in ("image/setup.sh", f"serverFilesCourse/{KIT_FOLDER}/run_prairielearn"):
        (out_dir / name).chmod(0o755)
    for name in files:
        target = out_dir / "serverFilesCourse" / KIT_FOLDER / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((kit / name).read_bytes())
    if course_secret_file:
        from autograder.core import seeds

        target = out_dir / "serverFilesCourse" / KIT_FOLDER / platform.COURSE_SECRET
        target.write_bytes(seeds.read_secret_file(course_secret_file) + b"\n")
        target.chmod(0o600)
    return out_dir


# ---- In the container: grade one submission and write results.json ----

def to_results(result, graded_file=None, sandboxed=True, warning=""):
    """PrairieLearn's results.json for ``result`` (a grade.Result)."""
    tests = []
    for test in result.tests:
        rubric_test = units.test_named(test.id)
        message = test.output
        if not test.passed and rubric_test is not None and rubric_test.details != "visible":
            message = platform.without_the_case(test, rubric_test, "not shown on PrairieLearn")
        tests.append({"name": test.id, "description": rubric_test.checks if rubric_test else "",
                      "points": test.score, "max_points": test.max_score, "message": message, "output": ""})
    lines = [warning] if warning else []
    lines.append(f"Graded file: {graded_file}. Score {result.score:g}/{result.max_score:g}.")
    if sandboxed and result.sandbox:
        lines.append(f"Your code ran in the grader's sandbox ({result.sandbox}): no network and none of the "
                     "grader's files.")
    if result.notes:
        lines += ["Notes on your file:", *result.notes]
    if result.cases_for_student:
        lines.append(result.cases_for_student)
    score = result.score / result.max_score if result.max_score else 0.0
    return {"gradable": True, "score": min(1.0, max(0.0, score)), "message": "\n".join(lines), "output": "",
            "tests": tests}


def not_gradable(message):
    return {"gradable": False, "score": 0, "message": message, "output": "", "tests": []}


def variant_identity(data_path):
    """PrairieLearn's variant seed from data.json: each student's variant is their own, and a regrade of a
    submission to the same variant sees the same one. None where data.json does not say."""
    try:
        seed = json.loads(Path(data_path).read_text(encoding="utf-8")).get("variant_seed")
    except (OSError, ValueError, AttributeError):
        return None
    return f"prairielearn-variant:{seed}" if isinstance(seed, (int, str)) and str(seed) else None


def question_unit(tests_folder):
    """The unit the question names in its ``tests/unit`` (the question's, not the student's), or None."""
    path = Path(tests_folder) / UNIT_FILE
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 200:
            return None
        return platform.unit_named(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _grade(root):
    unit = question_unit(root / "tests")
    if unit is None:  # never the upload's own name: another unit's finished file would score in full
        return not_gradable(
            f"Not graded: this question does not say which assignment it grades. {platform.TELL_INSTRUCTOR}\n(For "
            f"the instructor: the question's tests/{UNIT_FILE} is missing or names no unit; copy the question "
            "from `python -m autograder prairielearn-bundle`'s questions/ folder, with its tests/.)")
    result, shown, warning, sandboxed = platform.grade_upload(
        root / "student", unit, [root / "serverFilesCourse", root / "tests", root / "data", root / "results"],
        platform="PrairieLearn", student=variant_identity(root / "data" / "data.json"),
        course_secret=platform.course_secret_in(root / "serverFilesCourse" / KIT_FOLDER))
    if shown is None:  # nothing graded: no file, an unreadable one, another unit's, or no sandbox
        return not_gradable("\n".join(result.notes))
    if result.grader_fault:  # the grader's fault costs no attempt; the student reads the incident ids only
        said = [*result.notes, *(test.output for test in result.tests if test.grader_fault)]
        return not_gradable("\n".join(dict.fromkeys(said)))
    return to_results(result, shown, sandboxed, warning)


def run(root=None):
    """Grade ``ROOT/student`` and write ``ROOT/results/results.json``; 0 once that file is written."""
    root = Path(root or os.environ.get("AUTOGRADER_ROOT") or DEFAULT_ROOT)
    started = time.monotonic()
    print(f"Kit: {Path(__file__).resolve().parents[1]}")
    try:
        results = _grade(root)
        json.dumps(results, allow_nan=False)
    except Exception as error:
        from autograder.core.grade import grader_fault

        # The traceback to the grading job's log, for the instructor; the incident id to the student.
        results = not_gradable(grader_fault("the upload", "The grader failed while grading your submission",
                                            error)[0])
    print(f"Graded in {time.monotonic() - started:.1f} s")
    return platform.write_results(root, results)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m autograder.ways_in.prairielearn",
                                     description="Grade PrairieLearn's ROOT/student into ROOT/results/results.json.")
    parser.add_argument("root", nargs="?", help=f"the grading root (default: $AUTOGRADER_ROOT or {DEFAULT_ROOT})")
    return run(parser.parse_args(argv).root)


if __name__ == "__main__":
    sys.exit(main())
