"""Grade a whole class into a results folder, one submission at a time, so that nothing is lost.

``grade_class`` grades each submission path with ``jobs`` at once and writes
``<name>.json`` for it atomically (a temporary name, then a rename) the moment
it is graded. Each file records what was graded (a fingerprint of the
submission's files) and with what (a fingerprint of the rubric, the reference,
the hidden cases and the seed). A run that finds a file with both fingerprints
unchanged takes the grade from it instead of grading again, unless ``force``:
so a run killed halfway is resumed by running the same command again, and
only a changed submission, or a changed rubric, is graded again.

At the end come ``grades.csv`` (a row per student, a column per test),
``skipped.txt`` (each entry of the class folder that is not a submission, and
why: see load.class_entries) and the class summary (``summary.txt``,
``summary.png``; see summary.py). A grader fault's traceback goes to
``grader-faults.log`` under its incident id, never into a student's row.
"""

import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path

from autograder.core import seeds
from autograder.sandbox import limits as _limits
from autograder.core.units import ROOT
from autograder.intake.inert import inert_line
from autograder.intake.load import submission_name
from autograder.core.report import write_atomically

FORMAT = 2  # of the per-student JSON; a file of another format is graded again


def unique_names(paths):
    """A report name for each path, unique: its submission name, numbered from the second time it is seen.

    Names are made inert (a folder name may hold terminal escapes or newlines: see autograder/intake/inert.py).
    """
    names, taken = [], set()
    for path in paths:
        name = candidate = inert_line(submission_name(path), limit=120)
        count = 1
        while candidate in taken:  # "x" seen twice is "x-2", which may be another student's own name
            count += 1
            candidate = f"{name}-{count}"
        taken.add(candidate)
        names.append(candidate)
    return names


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def file_name(name, taken):
    """The results file of submission ``name``: plain characters only, short, never hidden, unique in ``taken``.

    A student names their folder; the grader names its files. Any other character becomes "_", and a name
    that had to change gets a digest of the original so two students never share a file.
    """
    safe = _UNSAFE.sub("_", name)[:80].lstrip(".") or "submission"
    if safe != name:
        safe += "-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    candidate, number = safe, 1
    while candidate.lower() in taken:
        number += 1
        candidate = f"{safe}-{number}"
    taken.add(candidate.lower())
    return candidate + ".json"


def submission_fingerprint(path):
    """A digest of what a submission holds (load.fingerprint: never follows a link, never blocks)."""
    from autograder.intake.load import fingerprint

    try:
        return fingerprint(path)
    except Exception as error:  # the walker says why in its digest; this is for what it did not foresee
        return hashlib.sha256(f"unfingerprinted {type(error).__name__}".encode()).hexdigest() + "-" + os.urandom(4).hex()


def grading_fingerprint(unit, seed, timing_mode):
    """A digest of what decides a grade besides the submission: the unit (its rubric, reference, cases, job
    code), the grader, the seed.

    ``seed`` is the shared seed, or with a course secret the secret's fingerprint (seeds.secret_fingerprint).
    """
    digest = hashlib.sha256(f"{FORMAT} {unit.name} {seed} {timing_mode}".encode())
    sources = [unit.reference_path]
    sources += sorted(path for part in ("intake", "sandbox", "core") for path in (ROOT / "autograder" / part).glob("*.py"))
    sources += sorted(path for path in unit.folder.rglob("*.py") if not {"__pycache__", "self_checks"} & set(path.parts)
                      and path != unit.lesson_path)  # what grades, not what teaches
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def result_to_json(result, submission_digest, grading_digest):
    """The per-student file: Gradescope's schema, plus what is needed to read the Result back."""
    data = result.to_gradescope()
    data["autograder"] = {
        "format": FORMAT, "name": result.name, "path": result.path, "notes": result.notes,
        "sandbox": result.sandbox, "grader_fault": result.grader_fault, "seed": result.seed,
        "incidents": [incident for incident, _ in result.incidents],  # the ids; the tracebacks are in FAULT_LOG
        "cases_from": result.cases_from, "unit": result.unit,
        "submission": submission_digest, "grading": grading_digest,
        "tests": [{"id": t.id, "task": t.task, "score": t.score, "max_score": t.max_score, "output": t.output}
                  for t in result.tests],
    }
    return json.dumps(data, indent=2)


def result_from_json(unit, text, submission_digest, grading_digest):
    """The Result saved in ``text``, or None if it is unreadable or was graded from something else."""
    from autograder.core.grade import Result, TestResult

    try:
        saved = json.loads(text)["autograder"]
        if (saved["format"], saved["submission"], saved["grading"]) != (FORMAT, submission_digest, grading_digest):
            return None
        if saved.get("grader_fault"):  # not graded through the grader's fault: grade it again
            return None
        tests = [TestResult(t["id"], t["task"], float(t["score"]), float(t["max_score"]), t["output"])
                 for t in saved["tests"]]
        if [t.id for t in tests] != [t.id for t in unit.rubric.TESTS] or saved.get("unit") != unit.name:
            return None
        result = Result(saved["name"], saved["path"], tests, list(saved["notes"]), str(saved.get("sandbox", "")),
                        unit=unit.name)
        seed = saved.get("seed")
        result.seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
        result.cases_from = str(saved.get("cases_from") or "")
        result.cases_for_student = seeds.for_student(unit, result.seed)
        return result
    except (ValueError, KeyError, TypeError):
        return None


class Progress:
    """A progress bar on a terminal; elsewhere (a log, CI) a plain line per submission."""

    def __init__(self, total, stream=None):
        self.total, self.done, self.stream = total, 0, stream or sys.stderr
        self.bar = self.stream.isatty()
        self.started = time.monotonic()
        self.lock = threading.Lock()

    def step(self, name, score, max_score, resumed=False):
        name = inert_line(name, limit=120)
        with self.lock:
            self.done += 1
            what = "already graded" if resumed else f"{score:g}/{max_score:g}"
            if not self.bar:
                print(f"[{self.done}/{self.total}] {name}: {what}", file=self.stream, flush=True)
                return
            elapsed = time.monotonic() - self.started
            left = elapsed / self.done * (self.total - self.done)
            width = 30
            filled = int(width * self.done / max(1, self.total))
            line = (f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}  {elapsed:.0f} s"
                    f"  about {left:.0f} s left  {name}: {what}")
            columns = shutil.get_terminal_size().columns
            print(line[:columns - 1].ljust(columns - 1), end="", file=self.stream, flush=True)

    def close(self):
        if self.bar and self.total:
            print(file=self.stream, flush=True)


def grade_class(grader, paths, out_dir, jobs=1, force=False, progress=None, seed=None,
                timing_mode=_limits.TIMING_WITHOUT_GPU):
    """Grade ``paths`` into ``out_dir`` (see the module's docstring); returns (results, how many were resumed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(".*.tmp"):  # left by a run that was killed while writing
        stale.unlink(missing_ok=True)
    paths = [Path(path) for path in paths]
    names = unique_names(paths)
    taken = set()
    files = [out / file_name(name, taken) for name in names]
    unit = grader.unit
    grading = grading_fingerprint(unit, unit.rubric.SEED if seed is None else seed, timing_mode)
    digests = [submission_fingerprint(path) for path in paths]
    results, todo = [None] * len(paths), []
    for index, (path, name) in enumerate(zip(paths, names)):
        saved = files[index]
        earlier = None if force or not saved.is_file() else result_from_json(
            unit, saved.read_text(encoding="utf-8", errors="replace"), digests[index], grading)
        if earlier is not None:
            earlier.name, results[index] = name, earlier
            if progress:
                progress.step(name, earlier.score, earlier.max_score, resumed=True)
        else:
            todo.append(index)

    def finished(index, result):
        result.name = names[index]
        if result.incidents:
            log_incidents(out, result)
        try:
            write_atomically(files[index], result_to_json(result, digests[index], grading))
        except (OSError, ValueError) as error:  # the disk, not the student: the row stays in memory and the CSV
            result.notes.append(f"Its results file could not be written ({error}).")
        results[index] = result
        if progress:
            progress.step(result.name, result.score, result.max_score)

    grader.grade_many([paths[index] for index in todo], jobs=jobs,
                      on_result=lambda position, result: finished(todo[position], result))
    if progress:
        progress.close()
    return results, len(paths) - len(todo)


FAULT_LOG = "grader-faults.log"  # in the results folder: each grader fault's incident id and traceback
SKIPPED = "skipped.txt"  # in the results folder: each entry of the class folder not graded, and why
_LOG_LOCK = threading.Lock()


def log_incidents(out_dir, result):
    """Append ``result``'s grader faults (incident id, traceback) to the instructor's log in ``out_dir``; the
    student's row shows the ids only. Never raises: the grader has already written them to stderr."""
    text = "".join(f"{record}\n\n" for _, record in result.incidents)
    try:
        with _LOG_LOCK, open(Path(out_dir) / FAULT_LOG, "a", encoding="utf-8") as log:
            log.write(text)
    except OSError as error:
        print(f"Could not write {Path(out_dir) / FAULT_LOG}: {error}", file=sys.stderr)


def skipped_text(skipped):
    """skipped.txt: a line per entry of the class folder that was not graded, its name and why, a tab between
    (names are inert and on one line, so a tab never appears in one)."""
    lines = ["# Entries of the class folder that were not graded, each with why (NAME<tab>REASON); every other "
             "entry has a row in grades.csv."]
    lines += [f"{inert_line(Path(path).name)}\t{reason}" for path, reason in skipped]
    return "\n".join(lines) + "\n"


def write_class_files(results, out_dir, skipped=()):
    """The class's files beside the JSON per student: grades.csv, skipped.txt (what of the class folder was not
    graded, and why), the summary (summary.txt and its picture), then each student's feedback (feedback/, see
    autograder/course/feedback.py).

    Returns the summary's paths and the feedback folder. A summary that cannot be made is the grader's fault:
    summary.txt says so, and grades.csv is written all the same."""
    from autograder.core.report import grades_csv
    from autograder.core.summary import write_summary
    from autograder.course.feedback import write_feedback

    write_atomically(Path(out_dir) / "grades.csv", grades_csv(results))
    write_atomically(Path(out_dir) / SKIPPED, skipped_text(skipped))
    try:
        written = write_summary(results, out_dir)
    except Exception as error:  # noqa: BLE001  (said where the summary would be)
        write_atomically(Path(out_dir) / "summary.txt", f"The class summary could not be made ({error!r}); "
                         "the grades are in grades.csv and the JSON files.\n")
        written = [Path(out_dir) / "summary.txt"]
    taken = set()  # the same names, in the same order, as grade_class gave the JSON files
    return written + [write_feedback(out_dir, results, [file_name(result.name, taken)[:-len(".json")]
                                                        for result in results])]
