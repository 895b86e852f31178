"""Grade a whole class into a results folder, one submission at a time, so that nothing is lost.

``grade_class`` grades each submission path with ``jobs`` at once and writes
``<name>.json`` for it atomically (a temporary name, then a rename) the moment
it is graded. Each file records what was graded (a fingerprint of the
submission's files) and with what (a fingerprint of the rubric, the reference,
the hidden cases and the seed). A run that finds a file with both fingerprints
unchanged takes the grade from it instead of grading again, unless ``force``:
so a run killed halfway is resumed by running the same command again, and
only a changed submission, or a changed rubric, is graded again.

At the end come ``grades.csv`` (a row per student, a column per test) and the
class summary (``summary.txt``, ``summary.png``; see summary.py).
"""

import hashlib
import json
import shutil
import sys
import threading
import time
from pathlib import Path

from autograder import rubric
from autograder.build import REFERENCE, ROOT
from autograder.load import submission_name
from autograder.report import write_atomically

FORMAT = 1  # of the per-student JSON; a file of another format is graded again
MAX_HASHED_BYTES = 64 * 1024**2  # a student folder larger than this is fingerprinted by its file list only


def unique_names(paths):
    """A report name for each path: its submission name, numbered from the second time it is seen."""
    seen, names = {}, []
    for path in paths:
        name = submission_name(path)
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(f"{name}-{count + 1}" if count else name)
    return names


def submission_fingerprint(path):
    """A digest of what a submission holds: a file's bytes, or a folder's files (names and bytes)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
    budget = MAX_HASHED_BYTES
    for file in files:
        digest.update(str(file.relative_to(path) if file != path else file.name).encode() + b"\0")
        try:
            size = file.stat().st_size
            if size <= budget:
                budget -= size
                digest.update(file.read_bytes())
            else:
                digest.update(f"{size} bytes".encode())
        except OSError as error:
            digest.update(f"unreadable {error.errno}".encode())
    return digest.hexdigest()


def grading_fingerprint(seed, timing_mode):
    """A digest of what decides a grade besides the submission: rubric, reference, cases, grader, seed."""
    digest = hashlib.sha256(f"{FORMAT} {seed} {timing_mode}".encode())
    sources = [REFERENCE, ROOT / "autograder" / "rubric.py", ROOT / "autograder" / "compare.py",
               ROOT / "autograder" / "grade.py", ROOT / "autograder" / "worker.py", ROOT / "autograder" / "timing.py"]
    sources += sorted((ROOT / "autograder" / "cases").glob("*.py"))
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def result_to_json(result, submission_digest, grading_digest):
    """The per-student file: Gradescope's schema, plus what is needed to read the Result back."""
    data = result.to_gradescope()
    data["autograder"] = {
        "format": FORMAT, "name": result.name, "path": result.path, "notes": result.notes,
        "submission": submission_digest, "grading": grading_digest,
        "tests": [{"id": t.id, "task": t.task, "score": t.score, "max_score": t.max_score, "output": t.output}
                  for t in result.tests],
    }
    return json.dumps(data, indent=2)


def result_from_json(text, submission_digest, grading_digest):
    """The Result saved in ``text``, or None if it is unreadable or was graded from something else."""
    from autograder.grade import Result, TestResult

    try:
        saved = json.loads(text)["autograder"]
        if (saved["format"], saved["submission"], saved["grading"]) != (FORMAT, submission_digest, grading_digest):
            return None
        tests = [TestResult(t["id"], t["task"], float(t["score"]), float(t["max_score"]), t["output"])
                 for t in saved["tests"]]
        if [t.id for t in tests] != [t.id for t in rubric.TESTS]:
            return None
        return Result(saved["name"], saved["path"], tests, list(saved["notes"]))
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


def grade_class(grader, paths, out_dir, jobs=1, force=False, progress=None, seed=rubric.SEED,
                timing_mode=rubric.TIMING_WITHOUT_GPU):
    """Grade ``paths`` into ``out_dir`` (see the module's docstring); returns (results, how many were resumed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(".*.tmp"):  # left by a run that was killed while writing
        stale.unlink(missing_ok=True)
    paths = [Path(path) for path in paths]
    names = unique_names(paths)
    grading = grading_fingerprint(seed, timing_mode)
    digests = [submission_fingerprint(path) for path in paths]
    results, todo = [None] * len(paths), []
    for index, (path, name) in enumerate(zip(paths, names)):
        saved = out / f"{name}.json"
        earlier = None if force or not saved.is_file() else result_from_json(
            saved.read_text(encoding="utf-8", errors="replace"), digests[index], grading)
        if earlier is not None:
            earlier.name, results[index] = name, earlier
            if progress:
                progress.step(name, earlier.score, earlier.max_score, resumed=True)
        else:
            todo.append(index)

    def finished(index, result):
        result.name = names[index]
        write_atomically(out / f"{names[index]}.json", result_to_json(result, digests[index], grading))
        results[index] = result
        if progress:
            progress.step(result.name, result.score, result.max_score)

    grader.grade_many([paths[index] for index in todo], jobs=jobs,
                      on_result=lambda position, result: finished(todo[position], result))
    if progress:
        progress.close()
    return results, len(paths) - len(todo)
