"""Grade a whole class into a results folder, one submission at a time, so that nothing is lost.

``grade_class`` grades each submission path with ``jobs`` at once and writes
``<name>.json`` for it atomically (a temporary name, then a rename) the moment
it is graded. Each file records what was graded (a fingerprint of the
submission's files) and with what: the settings, everything besides the
submission that can change its grade (the unit, the seed, the limits, the
sandbox tier, the timing tier's mode, device and clock, the grader's code and
the versions of Python and torch), readable in the file and fingerprinted. A
run that finds a file with both unchanged takes the grade from it instead of
grading again, unless ``force``: so a run killed halfway is resumed by running
the same command again, and only a changed submission, or one graded under
other settings, is graded again; the run says how many, and why (which
setting changed, from what to what).

At the end come ``grades.csv`` (a row per student, a column per test),
``skipped.txt`` (each entry of the class folder that is not a submission, and
why: see load.class_entries) and the class summary (``summary.txt``,
``summary.png``; see summary.py). A grader fault's traceback goes to
``grader-faults.log`` under its incident id, never into a student's row.
Each row's name is unique as every reader sees it (see ``unique_names``).
"""

import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import threading
import time
from pathlib import Path

from autograder.core import seeds, threads, voice
from autograder.sandbox import limits as _limits
from autograder.core.units import ROOT
from autograder.intake.inert import as_readers_see, inert_line
from autograder.intake.load import submission_name
from autograder.core.report import write_atomically

FORMAT = 4  # of the per-student JSON; a file of another format is graded again (4: the tests' typed parts)


def unique_names(paths):
    """A report name for each path, unique as every reader sees it: its submission name, numbered from the
    second time it is seen.

    Names are made inert (a folder name may hold terminal escapes or newlines: see autograder/intake/inert.py),
    and two names count as the same where any reader could take one for the other (``as_readers_see``: a
    spreadsheet's formula escape, Unicode normalisation, case folding, a number's spelling): folders ``=SUM(1)``
    and ``'=SUM(1)``, or ``Ana`` and ``ana``, are ``=SUM(1)`` and ``'=SUM(1)-2``, ``Ana`` and ``ana-2``.
    """
    names, taken = [], set()
    for path in paths:
        name = candidate = inert_line(submission_name(path), limit=120)
        count = 1
        while as_readers_see(candidate) in taken:  # "x" seen twice is "x-2", which may be another's own name
            count += 1
            candidate = f"{name}-{count}"
        taken.add(as_readers_see(candidate))
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


def grader_sources(unit):
    """A digest of the code that grades ``unit``'s submissions: its reference, its rubric, cases and job code, and
    the grader's own intake, sandbox and core (what grades, not what teaches)."""
    digest = hashlib.sha256()
    sources = [unit.reference_path]
    sources += sorted(path for part in ("intake", "sandbox", "core") for path in (ROOT / "autograder" / part).glob("*.py"))
    sources += sorted(path for path in unit.folder.rglob("*.py") if not {"__pycache__", "self_checks"} & set(path.parts)
                      and path != unit.lesson_path)
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def _default_seed(grader):
    """What a results folder records of the hidden cases' seed: the grader's seed, or with a course secret the
    secret's fingerprint (each student's seed comes from it)."""
    secret = getattr(grader, "course_secret", None)
    if secret:
        return f"per-student {seeds.secret_fingerprint(secret)}"
    seed = getattr(grader, "seed", None)
    return grader.unit.rubric.SEED if seed is None else seed


def grading_settings(grader, seed=None, timing_mode=None):
    """Everything besides the submission that can change its grade, as plain data (recorded in each results
    file, so that a later run can say what changed): the unit; the seed of the hidden cases (``seed``, by default
    the grader's: see _default_seed); the limits of each job; the sandbox tier; the timing tier's mode without a
    GPU, the device and the clock it times with; the grader's code (grader_sources) and the versions of Python,
    torch and numpy, whose arithmetic the comparisons and the timing rest on."""
    from autograder.core import timing

    unit = grader.unit
    mode = timing_mode or getattr(grader, "timing_mode", None) or _limits.TIMING_WITHOUT_GPU
    limits = getattr(grader, "limits", None)
    kept = {} if limits is None else {key: value for key, value in dataclasses.asdict(limits).items()
                                      if key != "sandboxed"}  # the tier: "sandbox" below says it in full
    device, _ = timing.timing_device(mode)
    clock = "wall"
    if device == "cpu":
        clock = timing.timing_clock(getattr(getattr(grader, "server", None), "tier", None))[0] or "none"
    versions = {"python": platform.python_version()}
    for library in ("torch", "numpy"):
        module = sys.modules.get(library)
        versions[library] = str(getattr(module, "__version__", "")) if module else ""
    return {
        "unit": unit.name,
        "seed": _default_seed(grader) if seed is None else seed,
        "limits": kept,
        "sandbox": str(getattr(grader, "tier", "")),
        "timing": {"without_gpu": mode, "device": device or "none", "clock": clock},
        "grader": {"code": grader_sources(unit), **versions},
    }


def grading_fingerprint(settings):
    """A digest of ``settings`` (grading_settings) and of the results file's format."""
    return hashlib.sha256(json.dumps([FORMAT, settings], sort_keys=True, default=str).encode()).hexdigest()


# How a setting is named to the instructor: the command line's flag where it has one.
_FLAGS = {"wall_seconds": "--timeout", "task_seconds": "--task-timeout", "memory_bytes": "--memory-gb",
          "without_gpu": "--without-gpu", "seed": "--seed"}


def _shown(key, value):
    if key == "memory_bytes" and isinstance(value, (int, float)):
        return f"{value / 1024**3:g}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def settings_changes(saved, current):
    """What differs between two grading_settings, one phrase each ("limits: --timeout 60 -> 30"), for the
    instructor. A results file of an earlier grader, without settings, is said to be one."""
    if not isinstance(saved, dict):
        return ["graded by an earlier version of the grader"]
    changes = []
    for part in ("unit", "seed", "sandbox"):
        if saved.get(part) != current.get(part):
            changes.append(f"{part} {_shown(part, saved.get(part))} -> {_shown(part, current.get(part))}")
    for part, word in (("limits", "limits"), ("timing", "timing tier")):
        before, after = saved.get(part) or {}, current.get(part) or {}
        if not isinstance(before, dict):
            before = {}
        moved = [f"{_FLAGS.get(key, key)} {_shown(key, before.get(key))} -> {_shown(key, after.get(key))}"
                 for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
        if moved:
            changes.append(f"{word}: {', '.join(moved)}")
    before, after = saved.get("grader") or {}, current.get("grader") or {}
    if not isinstance(before, dict):
        before = {}
    if before.get("code") != after.get("code"):
        changes.append("the grader's code or the unit's rubric, cases or reference changed")
    changes += [f"{library} {before.get(library) or '?'} -> {after.get(library) or '?'}"
                for library in ("python", "torch", "numpy") if before.get(library) != after.get(library)]
    return changes or ["its settings could not be compared"]


def result_to_json(result, submission_digest, settings):
    """The per-student file: Gradescope's schema, plus what is needed to read the Result back and what it was
    graded with (``settings``: grading_settings)."""
    data = result.to_gradescope()
    data["autograder"] = {
        "format": FORMAT, "name": result.name, "path": result.path, "notes": result.notes,
        "sandbox": result.sandbox, "grader_fault": result.grader_fault, "seed": result.seed,
        "incidents": [incident for incident, _ in result.incidents],  # the ids; the tracebacks are in FAULT_LOG
        "cases_from": result.cases_from, "unit": result.unit,
        "submission": submission_digest, "grading": grading_fingerprint(settings), "settings": settings,
        "tests": [{"id": t.id, "task": t.task, "score": t.score, "max_score": t.max_score, "output": t.output,
                   **voice.parts_of(t)} for t in result.tests],
    }
    return json.dumps(data, indent=2, default=str)


# Why a saved result is not kept (see saved_result): the submission changed, it was a grader fault, it was graded
# under other settings (with what changed), or the file cannot be read as a result of this grader.
CHANGED, FAULT, OTHER_SETTINGS, UNREADABLE = "changed", "fault", "settings", "unreadable"


def saved_result(unit, text, submission_digest, settings):
    """(the Result saved in ``text``, None) where it was graded from this submission under these settings;
    else (None, (why, [what changed])), why being one of CHANGED, FAULT, OTHER_SETTINGS, UNREADABLE."""
    from autograder.core.grade import Result, TestResult

    try:
        saved = json.loads(text)["autograder"]
        if saved["submission"] != submission_digest:
            return None, (CHANGED, [])
        if saved.get("format") != FORMAT or saved["grading"] != grading_fingerprint(settings):
            return None, (OTHER_SETTINGS, settings_changes(saved.get("settings"), settings))
        if saved.get("grader_fault"):  # not graded through the grader's fault: grade it again
            return None, (FAULT, [])
        tests = [TestResult(t["id"], t["task"], float(t["score"]), float(t["max_score"]), t["output"],
                            **voice.parts_from(t)) for t in saved["tests"]]
        if [t.id for t in tests] != [t.id for t in unit.rubric.TESTS] or saved.get("unit") != unit.name:
            return None, (UNREADABLE, [])
        result = Result(saved["name"], saved["path"], tests, list(saved["notes"]), str(saved.get("sandbox", "")),
                        unit=unit.name)
        seed = saved.get("seed")
        result.seed = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
        result.cases_from = str(saved.get("cases_from") or "")
        result.cases_for_student = seeds.for_student(unit, result.seed)
        return result, None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None, (UNREADABLE, [])


def result_from_json(unit, text, submission_digest, settings):
    """The Result saved in ``text``, or None if it is unreadable or was graded from something else."""
    return saved_result(unit, text, submission_digest, settings)[0]


def regrade_notes(reasons, out_dir):
    """The lines that tell the instructor which saved results a run grades again, and why: ``reasons`` holds a
    (why, [what changed]) of saved_result per saved result not kept."""
    out_dir = inert_line(str(out_dir))
    lines, count = [], {}
    for why, _ in reasons:
        count[why] = count.get(why, 0) + 1
    if count.get(OTHER_SETTINGS):
        changes = {}
        for why, what in reasons:
            if why == OTHER_SETTINGS:
                for change in what:
                    changes[change] = changes.get(change, 0) + 1
        total = count[OTHER_SETTINGS]
        said = "; ".join(change + ("" if times == total else f" (for {times})") for change, times in changes.items())
        lines.append(f"{total} result{'s were' if total != 1 else ' was'} graded under other settings ({said}): "
                     "graded again.")
    if count.get(CHANGED):
        lines.append(f"{count[CHANGED]} submission{'s' if count[CHANGED] != 1 else ''} changed since "
                     f"{'they were' if count[CHANGED] != 1 else 'it was'} graded: graded again.")
    if count.get(FAULT):
        lines.append(f"{count[FAULT]} result{'s were' if count[FAULT] != 1 else ' was'} a grader fault: graded again.")
    if count.get(UNREADABLE):
        lines.append(f"{count[UNREADABLE]} results file{'s' if count[UNREADABLE] != 1 else ''} in {out_dir} could "
                     "not be read as a result of this unit: graded again.")
    return lines


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


def grade_class(grader, paths, out_dir, jobs=1, force=False, progress=None, seed=None, timing_mode=None,
                say=None):
    """Grade ``paths`` into ``out_dir`` (see the module's docstring); returns (results, how many were resumed).

    ``seed`` and ``timing_mode`` are recorded in the settings (by default the grader's: see grading_settings);
    ``say(line)`` tells the instructor which saved results are graded again and why (by default on stderr).
    """
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(".*.tmp"):  # left by a run that was killed while writing
        stale.unlink(missing_ok=True)
    paths = [Path(path) for path in paths]
    names = unique_names(paths)
    taken = set()
    files = [out / file_name(name, taken) for name in names]
    unit = grader.unit
    settings = grading_settings(grader, seed, timing_mode)
    digests = [submission_fingerprint(path) for path in paths]
    results, todo, reasons = [None] * len(paths), [], []
    for index, name in enumerate(names):
        saved = files[index]
        earlier, why = None, None
        if not force and saved.is_file():
            earlier, why = saved_result(unit, saved.read_text(encoding="utf-8", errors="replace"), digests[index],
                                        settings)
        if earlier is not None:
            earlier.name, results[index] = name, earlier
        else:
            todo.append(index)
            if why is not None:
                reasons.append(why)
    for line in regrade_notes(reasons, out):
        say(line)
    if progress:
        for result in results:
            if result is not None:
                progress.step(result.name, result.score, result.max_score, resumed=True)

    def finished(index, result):
        result.name = names[index]
        if result.incidents:
            log_incidents(out, result)
        try:
            write_atomically(files[index], result_to_json(result, digests[index], settings))
        except (OSError, ValueError) as error:  # the disk, not the student: the row stays in memory and the CSV
            result.notes.append(f"Its results file could not be written ({error}).")
        results[index] = result
        if progress:
            progress.step(result.name, result.score, result.max_score)

    # What finished() and the class's files need, imported before the grading threads start (see threads.py)
    threads.import_ahead(modules=[sys.modules[__name__]], notebooks=threads.may_hold_notebooks(paths))
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
