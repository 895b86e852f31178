"""Grading a class: the kit's command line against nbgrader, with and without the kit's config.

What is measured
----------------
One class of ``--count`` notebooks (default 20), each the released notebook
(``nbgrader generate_assignment`` in a fresh temporary course folder) with its
solution cells filled in, as tests/test_nbgrader_course.py fills them: the
reference, the blank release, and the reference with one of the demo's
mistakes (``autograder.demo.MISTAKES``), in turn until there are enough. The
same notebooks are graded in one run:

* ``kit``: ``python -m autograder grade <course>/submitted --jobs J --out DIR``,
  the sandboxed fork server, the timing tier on the CPU as the rubric says
  (``TIMING_WITHOUT_GPU``). J submissions at once (``--jobs``, default 2).
* ``kit, no timing tier``: the same with ``--without-gpu give``, which skips the
  timing tier: the difference between the two rows is the tier's share.
* ``nbgrader, kit's config``: ``nbgrader autograde positional_encodings`` with
  the course's own nbgrader_config.py, whose TrustedGrades preprocessor grades
  each notebook with the kit's grader, out of the kernel, after the notebook
  has run in its kernel (for the pictures and printed output of the feedback).
* ``nbgrader, plain``: the same in a copy of the course whose nbgrader_config.py
  ends by taking TrustedGrades out of the autograde preprocessors, everything
  else kept: the hidden tests run in the student's kernel only, which is what a
  course gets from nbgrader alone.

nbgrader autograde has no parallelism: it grades one submission after another
(a for loop in ``BaseConverter.convert_notebooks``), each in a fresh kernel.

* time: the wall time of each whole command (a subprocess, from start to exit:
  interpreter start, imports, every submission), ``time.monotonic``. Each way
  runs in a course folder of its own, copied from the one release.
* checks before any time is reported: every command exited 0 and logged no
  ERROR; every student has a row (the kit's grades.csv; nbgrader's gradebook
  through its Gradebook API, where a submission that failed leaves none); and
  the kit's totals equal the gradebook totals of nbgrader with the kit's
  config, student for student. The plain gradebook's agreement is reported,
  not required (its kernel runs the hidden tests under other conditions).

Run from anywhere: ``python benchmarks/class_throughput.py`` (``--help`` for the
flags). nbgrader must be installed beside this Python (``pip install -e '.[course]'``).
"""

import argparse
import csv
import datetime
import importlib.metadata
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from autograder import rubric  # noqa: E402
from autograder.build import REFERENCE, strip_markers  # noqa: E402
from autograder.course import COURSE, NOTEBOOK, function_source, nbgrader_environment, run_nbgrader  # noqa: E402
from autograder.demo import MISTAKES, apply  # noqa: E402

ASSIGNMENT = rubric.ASSIGNMENT
# Appended to the plain copy's config: the course's own list of preprocessors, less TrustedGrades.
WITHOUT_TRUSTED_GRADES = """

# class_throughput.py, plain nbgrader: the hidden tests are graded in the student's kernel only.
c.Autograde.autograde_preprocessors = [step for step in c.Autograde.autograde_preprocessors
                                       if step.__name__ != "TrustedGrades"]
"""


class BenchmarkError(RuntimeError):
    """A way of grading failed or graded less than the whole class: no time is reported for it."""


# --------------------------------------------------------------------------- the class


def _grade_id(cell):
    return ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")


def filled(released, code_text):
    """The released notebook with every solution cell holding its function from ``code_text``."""
    notebook = json.loads(json.dumps(released))
    for cell in notebook["cells"]:
        if _grade_id(cell) in rubric.TASK_OF_FUNCTION:
            cell["source"] = function_source(code_text, _grade_id(cell))
    return notebook


def class_notebooks(released, count):
    """{student id: notebook}: the reference, the blank release, each mistake, in turn, ``count`` of them."""
    reference = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    kinds = [("reference", filled(released, reference)), ("blank", released)]
    kinds += [(mistake.name, filled(released, apply(mistake, reference))) for mistake in MISTAKES]
    return {f"s{number:02d}_{name}": notebook
            for number, (name, notebook) in zip(range(1, count + 1), itertools.cycle(kinds))}


def make_course(root, count):
    """A fresh course folder: the kit's config and source, the release, and the class in submitted/."""
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    run_nbgrader(["generate_assignment", ASSIGNMENT, "--force"], course=course)
    released = course / "release" / ASSIGNMENT
    students = class_notebooks(json.loads((released / NOTEBOOK).read_text()), count)
    for student, notebook in students.items():
        target = course / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        (target / NOTEBOOK).write_text(json.dumps(notebook, indent=1))
        shutil.copy(released / "checks.py", target)
    return course, sorted(students)


def copy_course(course, to, plain=False):
    """A copy of the course (release, gradebook and submissions); ``plain``: without TrustedGrades."""
    shutil.copytree(course, to)
    if plain:
        with open(to / "nbgrader_config.py", "a") as handle:
            handle.write(WITHOUT_TRUSTED_GRADES)
    steps = autograde_steps(to)
    if ("TrustedGrades" in steps) == plain:
        raise BenchmarkError(f"{to}/nbgrader_config.py: autograde preprocessors {steps}, expected TrustedGrades "
                             + ("absent" if plain else "present"))
    return to


def autograde_steps(course):
    """The names of the autograde preprocessors, as nbgrader reads the course's config."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return [step.__name__ for step in config.Autograde.autograde_preprocessors]


# --------------------------------------------------------------------------- grading and its checks


@dataclass
class Way:
    name: str
    parallel: str
    seconds: float = 0.0
    totals: dict = field(default_factory=dict)  # {student: total points}
    load: tuple = ()  # 1-minute load average before and after
    note: str = ""


def timed(command, cwd, log):
    """Run ``command``; (wall seconds, [(seconds since start, line)], load before and after).

    Each line of its output is stamped as it arrives, so that nbgrader's log shows where its time goes.
    Raises BenchmarkError on a non-zero exit or an ERROR line.
    """
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=nbgrader_environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in process.stdout]
    process.wait()
    seconds = time.monotonic() - started
    log.write_text("".join(f"{at:8.2f} {line}\n" for at, line in lines))
    errors = [line for _, line in lines if "| ERROR]" in line]
    if process.returncode != 0 or errors:
        raise BenchmarkError(f"{' '.join(map(str, command))} failed (exit {process.returncode}, "
                             f"{len(errors)} ERROR lines):\n" + "\n".join(line for _, line in lines[-30:]))
    return seconds, lines, (load_before, os.getloadavg()[0])


def nbgrader_split(lines):
    """From nbgrader's stamped log: its start (to its first line), and the mean run of one notebook.

    A notebook's run is from ``Autograding <notebook>`` to ``Setting destination file permissions``:
    the kernel executing every cell, and with the kit's config TrustedGrades after it.
    """
    start = lines[0][0] if lines else 0.0
    runs, began = [], None
    for at, line in lines:
        if "| INFO] Autograding " in line:
            began = at
        elif "Setting destination file permissions" in line and began is not None:
            runs.append(at - began)
            began = None
    mean = sum(runs) / len(runs) if runs else float("nan")
    return f"nbgrader start {start:.1f} s; one notebook's run {mean:.2f} s (mean of {len(runs)})"


def kit_totals(out):
    with open(out / "grades.csv", newline="") as handle:
        return {row["submission"]: float(row["total"]) for row in csv.DictReader(handle)}


def gradebook_totals(course):
    """{student: total} of each submission the gradebook holds a graded notebook of."""
    from nbgrader.api import Gradebook, MissingEntry

    totals = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in gradebook.students:
            try:
                notebook = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student.id)
            except MissingEntry:
                continue
            if len(notebook.grades) == len(rubric.TESTS):
                totals[student.id] = float(notebook.score)
    return totals


def require_every_student(way, students):
    missing = sorted(set(students) - set(way.totals))
    extra = sorted(set(way.totals) - set(students))
    if missing or extra:
        raise BenchmarkError(f"{way.name}: {len(way.totals)} rows for {len(students)} students; "
                             f"missing {missing}, unexpected {extra}")


def grade_with_kit(course, root, jobs, students, timing_mode=None):
    name = "kit" if timing_mode is None else f"kit, --without-gpu {timing_mode}"
    out = root / ("kit-out" if timing_mode is None else f"kit-out-{timing_mode}")
    command = [sys.executable, "-m", "autograder", "grade", str(course / "submitted"), "--jobs", str(jobs),
               "--out", str(out)] + (["--without-gpu", timing_mode] if timing_mode else [])
    way = Way(name, f"{jobs} job{'s' if jobs > 1 else ''}")
    way.seconds, lines, way.load = timed(command, REPO_ROOT, root / f"{out.name}.log")
    way.totals = kit_totals(out)
    inner = re.search(r"submission\(s\) graded in ([\d.]+) s", "\n".join(line for _, line in lines))
    if inner:
        way.note = f"grading itself {float(inner.group(1)):.1f} s"
    require_every_student(way, students)
    return way


def grade_with_nbgrader(course, root, students, plain):
    folder = copy_course(course, root / ("nbgrader-plain" if plain else "nbgrader-kit"), plain=plain)
    nbgrader = shutil.which("nbgrader", path=nbgrader_environment()["PATH"])
    way = Way("nbgrader, plain" if plain else "nbgrader, kit's config", "sequential")
    way.seconds, lines, way.load = timed([nbgrader, "autograde", ASSIGNMENT], folder, root / f"{folder.name}.log")
    way.totals = gradebook_totals(folder)
    way.note = nbgrader_split(lines)
    require_every_student(way, students)
    return way


# --------------------------------------------------------------------------- the report


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    except OSError:
        pass
    return (f"{os.cpu_count()} cores, {model}, torch {importlib.metadata.version('torch')}, "
            f"nbgrader {importlib.metadata.version('nbgrader')}, Python {sys.version.split()[0]}, "
            f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")


def print_table(ways, count, distinct):
    kit = ways[0]
    print(f"\nGrading a class of {count} notebooks ({distinct} distinct: the reference, the blank release, "
          f"{distinct - 2} with one mistake) | {machine()}")
    header = (f"{'way':<28} | {'at once':>10} | {'total s':>8} | {'s/sub':>6} | {'subs/min':>8} | {'rows':>7} | "
              f"{'x kit':>7} | {'load 1m':>11} | note")
    print(header)
    print("-" * len(header))
    for way in ways:
        per = way.seconds / count
        faster = "-" if way is kit else f"{way.seconds / kit.seconds:.1f}x"
        load = f"{way.load[0]:.2f}->{way.load[1]:.2f}"
        print(f"{way.name:<28} | {way.parallel:>10} | {way.seconds:>8.1f} | {per:>6.2f} | {60 / per:>8.1f} | "
              f"{f'{len(way.totals)}/{count}':>7} | {faster:>7} | {load:>11} | {way.note}")
    print("x kit: that way's time over the kit's (first row) on the same notebooks (> 1: slower). rows: students "
          "with a grade. load 1m: the 1-minute load average before and after. nbgrader grades one submission "
          "after another; the kit runs --jobs submissions at once.")


def agreement(kit, other):
    differ = sorted(student for student in kit.totals if kit.totals[student] != other.totals.get(student))
    return differ


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20, help="notebooks in the class (default 20)")
    parser.add_argument("--jobs", type=int, default=2, help="the kit's submissions at once (default 2)")
    parser.add_argument("--skip-plain", action="store_true", help="leave out plain nbgrader")
    args = parser.parse_args(argv)
    if args.count < 1 or args.jobs < 1:
        parser.error("--count and --jobs must be at least 1")
    return args


def main(argv=None):
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="class-throughput-") as folder:
        root = Path(folder)
        course, students = make_course(root, args.count)
        distinct = min(args.count, 2 + len(MISTAKES))
        print(f"{args.count} notebooks in {course}/submitted; grading them "
              f"{3 if args.skip_plain else 4} ways (nbgrader's ways take several seconds a notebook).",
              file=sys.stderr)
        ways = [grade_with_kit(course, root, args.jobs, students)]
        print(f"  {ways[-1].name}: {ways[-1].seconds:.1f} s", file=sys.stderr)
        ways.append(grade_with_kit(course, root, args.jobs, students, timing_mode="give"))
        print(f"  {ways[-1].name}: {ways[-1].seconds:.1f} s", file=sys.stderr)
        ways.append(grade_with_nbgrader(course, root, students, plain=False))
        print(f"  {ways[-1].name}: {ways[-1].seconds:.1f} s", file=sys.stderr)
        if not args.skip_plain:
            ways.append(grade_with_nbgrader(course, root, students, plain=True))
            print(f"  {ways[-1].name}: {ways[-1].seconds:.1f} s", file=sys.stderr)
        kit, with_config = ways[0], ways[2]
        differ = agreement(kit, with_config)
        if differ:
            raise BenchmarkError("the kit's totals and the gradebook's (nbgrader with the kit's config) differ for "
                                 + ", ".join(f"{s} ({kit.totals[s]:g} vs {with_config.totals.get(s)})" for s in differ))
        print_table(ways, args.count, distinct)
        print(f"Totals: the kit's equal the gradebook's of nbgrader with the kit's config for all {args.count} "
              f"students (mean {sum(kit.totals.values()) / args.count:.1f} of {rubric.MAX_SCORE:g}).")
        if not args.skip_plain:
            plain = ways[-1]
            differ = agreement(kit, plain)
            print(f"Plain nbgrader's gradebook agrees with the kit for {args.count - len(differ)} of {args.count}"
                  + (": differs for " + ", ".join(f"{s} ({kit.totals[s]:g} vs {plain.totals[s]:g})" for s in differ)
                     if differ else "") + " (the hidden tests ran in the student's kernel).")
        print(f"kit is {with_config.seconds / kit.seconds:.1f}x faster than nbgrader with the kit's config"
              + (f", {ways[-1].seconds / kit.seconds:.1f}x faster than plain nbgrader" if not args.skip_plain else "")
              + f" (kit: --jobs {args.jobs} on {os.cpu_count()} cores; nbgrader: sequential).")
    return ways


if __name__ == "__main__":
    try:
        main()
    except BenchmarkError as error:
        sys.exit(f"class_throughput.py: {error}")
