"""A class run always ends (docs/threat-model.md, invariant 3): nothing is imported while its grading threads run,
and a run that stops making progress ends with a row for every entry.

Why imports matter: a class run on Python 3.11.7 hung for good, its main thread waiting for the import lock inside
importlib's module-lock callback, run by the garbage collector while grading threads were alive (CPython's
gh-106883 family). The first test grades a class of every kind of submission through the real command line, from
a fresh interpreter, with an audit hook that lists each module loaded while any thread besides the main one is
alive; it must list none. The class holds what makes the grader reach for a module late: a notebook nbformat's
schema refuses (the loader words the complaint with jsonschema), source files whose coding lines name rare
codecs, a link, a hang, a Python loop in a timed path, and per-student hidden cases (a course secret: each
student's cases are built on a grading thread).

The watchdog is tested with a stall injected into the real grader (one submission's grading blocks until the
test lets it go) and the watchdog's clock injected (it jumps past the stall's bound once every other submission
is written), so that the tests are deterministic on a busy machine and wait for nothing real.
"""

import csv
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from autograder.core import grade
from autograder.course.build import ROOT
from autograder.ways_in import cli
from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES
from conftest import UNIT, notebook

LOOP_PATH = '''
def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    rows = [(q[..., i:i + 1, :] @ k.transpose(-1, -2)) * scale for i in range(q.shape[-2])]
    return torch.cat(rows, dim=-2) + bias
'''


def _every_kind(folder, reference_text, stub_text):
    """A class folder holding one submission of each kind that leads the grader down another path."""
    def hand_in(student, text, file_name=f"{UNIT.module_name}.py", encoding="utf-8"):
        (folder / student).mkdir(parents=True)
        (folder / student / file_name).write_bytes(text.encode(encoding) if isinstance(text, str) else text)

    hand_in("reference", reference_text)
    hand_in("blank", stub_text)
    for mistake in MISTAKES[::6]:
        hand_in(mistake.name, apply(mistake, reference_text))
    hand_in("syntax_error", reference_text.replace("def clipped_relative_positions(",
                                                   "def clipped_relative_positions((", 1))
    hand_in("raises_at_import", reference_text + "\nraise RuntimeError('stop')\n")
    hand_in("hangs", reference_text + "\ndef sinusoidal_table(*args, **kwargs):\n    while True:\n        pass\n")
    hand_in("python_loop", reference_text + LOOP_PATH)
    hand_in("cp1252", "# -*- coding: cp1252 -*-\n# \u201cquoted\u201d\n" + reference_text, encoding="cp1252")
    hand_in("koi8", "# -*- coding: koi8_r -*-\n# \u043f\u0440\u0438\u0432\u0435\u0442\n" + reference_text,
            encoding="koi8_r")
    hand_in("shift_jis", "# -*- coding: shift_jis -*-\n# \u3053\u3093\u306b\u3061\u306f\n" + reference_text,
            encoding="shift_jis")
    hand_in("undeclared_latin1", "# caf\u00e9\n" + reference_text, encoding="latin-1")
    hand_in("notebook", notebook([reference_text]), file_name=f"{UNIT.module_name}.ipynb")
    refused = json.loads(notebook([reference_text]))
    refused["cells"][0]["outputs"] = [{"output_type": "stream"}]  # no "name": nbformat's schema refuses it
    hand_in("refused_notebook", json.dumps(refused), file_name=f"{UNIT.module_name}.ipynb")
    (folder / "link").mkdir()
    (folder / "link" / f"{UNIT.module_name}.py").symlink_to(folder / "reference" / f"{UNIT.module_name}.py")


def test_no_module_is_imported_while_the_grading_threads_run(tmp_path, reference_text, stub_text):
    folder = tmp_path / "class"
    _every_kind(folder, reference_text, stub_text)
    secret = tmp_path / "secret"
    assert cli.main(["course-secret", str(secret)]) == 0
    run = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "helpers" / "class_run_imports.py"), str(folder),
                          "--out", str(tmp_path / "out"), "--unit", UNIT.name, "--jobs", "2", "--timeout", "20",
                          "--task-timeout", "3", "--course-secret", str(secret)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["status"] == 0, run.stderr[-3000:]
    late = sorted({module for module, _, _ in report["late"]})
    assert not late, (f"{len(late)} modules were imported while grading threads ran: {late[:40]}\n"
                      f"e.g. {report['late'][:5]}")
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["submission"]: float(row["total"]) for row in csv.DictReader(handle)}
    assert set(rows) == {entry.name for entry in folder.iterdir()}
    assert rows["reference"] == rows["notebook"] == rows["cp1252"] == rows["koi8"] == rows["shift_jis"] == 100
    assert rows["refused_notebook"] == rows["link"] == rows["blank"] == 0


# ---- The watchdog ----

class Stall:
    """Injected into the real grader: grading the submission named ``stuck`` blocks until ``release``."""

    def __init__(self, stuck):
        self.stuck = stuck
        self.entered, self.released, self.left = threading.Event(), threading.Event(), threading.Event()
        self.original = grade.Grader.grade

    def grade(self, grader, path, *args, **kwargs):
        if Path(path).name == self.stuck:
            self.entered.set()
            self.released.wait(600)
            try:
                return self.original(grader, path, *args, **kwargs)
            finally:
                self.left.set()
        return self.original(grader, path, *args, **kwargs)


class JumpingClock:
    """The watchdog's clock: it stands still until ``moves()`` is true, then each look is a million seconds after
    the one before (the watchdog's bound is minutes), so the next look the watchdog takes sees a stall."""

    def __init__(self, moves):
        self.moves, self.now, self.lock = moves, 0.0, threading.Lock()

    def __call__(self):
        with self.lock:
            if self.moves():
                self.now += 1e6
            return self.now


def test_a_class_run_stuck_on_one_submission_ends_with_every_row_and_an_incident_id(tmp_path, reference_text,
                                                                                   monkeypatch):
    folder, out = tmp_path / "class", tmp_path / "out"
    students = ["ada", "bo", "stuck", "cy"]
    for student in students:
        (folder / student).mkdir(parents=True)
        (folder / student / f"{UNIT.module_name}.py").write_text(reference_text)
    stall = Stall("stuck")
    monkeypatch.setattr(grade.Grader, "grade", lambda grader, path, *a, **k: stall.grade(grader, path, *a, **k))

    def others_written():  # every other submission's file written, and the stuck one's grading begun
        return stall.entered.is_set() and len([path for path in out.glob("*.json")
                                               if path.name != "stuck.json"]) == len(students) - 1

    monkeypatch.setattr(grade, "_clock", JumpingClock(others_written), raising=False)
    outcome = {}

    def class_run():
        outcome["status"] = cli.main(["grade", str(folder), "--out", str(out), "--unit", UNIT.name, "--jobs", "2",
                                      "--without-gpu", "give"])

    runner = threading.Thread(target=class_run, daemon=True)
    try:
        runner.start()
        runner.join(300)
        assert not runner.is_alive(), "the class run did not end: it waits for the stuck submission for good"
        assert outcome["status"] == 0
        with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
            rows = {row["submission"]: float(row["total"]) for row in csv.DictReader(handle)}
        assert rows == {"ada": 100, "bo": 100, "cy": 100, "stuck": 0}
        assert (out / "summary.txt").is_file() and "4 submissions" in (out / "summary.txt").read_text()
        saved = json.loads((out / "stuck.json").read_text())
        assert saved["autograder"]["grader_fault"] is True
        incident = saved["autograder"]["incidents"]
        assert len(incident) == 1 and all(f"(incident {incident[0]})" in test["output"] for test in saved["tests"])
        assert "stopped making progress" in saved["tests"][0]["output"]
        log = (out / "grader-faults.log").read_text()
        assert f"incident {incident[0]}" in log and "no submission finished for" in log
    finally:
        stall.released.set()
    # The stuck thread, let go, grades its submission: its late result changes nothing.
    assert stall.left.wait(120)
    time.sleep(0.5)
    assert json.loads((out / "stuck.json").read_text())["autograder"]["incidents"] == incident
    runner.join(5)


def _blocked_forever(released):
    def grade_one(index):
        released.wait(600)
        return ("late", index)
    return grade_one


def test_a_run_that_makes_no_progress_at_all_gives_up_on_everything_left_and_ends():
    from autograder.core import threads

    released = threading.Event()
    reported = []
    try:
        started = time.monotonic()
        results = threads.run(5, _blocked_forever(released), lambda index, result: reported.append(index), jobs=2,
                              stall_seconds=600, failed=lambda index, error: ("failed", index),
                              stuck=lambda index, error: ("stuck", index, str(error)), clock=JumpingClock(lambda: True))
        assert time.monotonic() - started < 60
    finally:
        released.set()
    assert sorted(reported) == list(range(5))
    assert [result[:2] for result in results] == [("stuck", index) for index in range(5)]
    assert all("no submission finished for 600 s" in result[2] for result in results)
    time.sleep(0.5)  # the blocked threads, let go, return late: nothing is reported twice
    assert sorted(reported) == list(range(5))


def test_a_stall_gives_up_on_the_stuck_submission_only_and_grades_the_rest():
    from autograder.core import threads

    released, order = threading.Event(), []

    def grade_one(index):
        if index == 1:
            released.wait(600)
            return ("late", index)
        return ("graded", index)

    try:  # the clock moves once every other submission is graded
        results = threads.run(5, grade_one, lambda index, result: order.append(index), jobs=2, stall_seconds=600,
                              failed=lambda index, error: ("failed", index),
                              stuck=lambda index, error: ("stuck", index), clock=JumpingClock(lambda: len(order) == 4))
    finally:
        released.set()
    assert results == [("graded", 0), ("stuck", 1), ("graded", 2), ("graded", 3), ("graded", 4)]
    assert sorted(order) == list(range(5))


def test_the_stall_bound_is_well_past_what_one_submission_may_take():
    # A submission's job may be tried three times (grade.MACHINE_ATTEMPTS), each up to its wall limit, its timing
    # tier may take its own budget and the reference's setup, and it may wait for the machine while another is
    # timed: the bound leaves half as much again as all of that, at the default limit and at larger ones.
    from types import SimpleNamespace

    from autograder.core.timing import SETUP_SECONDS
    from autograder.sandbox import limits
    from autograder.sandbox.server import Limits

    for wall in (limits.WALL_SECONDS, 120.0, 600.0):
        one = grade.MACHINE_ATTEMPTS * wall + SETUP_SECONDS + limits.TIMING_TIER_SECONDS * 2
        bound = grade.Grader.stall_seconds(SimpleNamespace(limits=Limits(wall_seconds=wall)))
        assert bound >= 1.5 * (one + SETUP_SECONDS + limits.TIMING_TIER_SECONDS * 2), (wall, bound)
