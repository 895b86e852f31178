"""A class at a time: 60 submissions with --jobs 2, killed partway and resumed; what a re-run grades again.

The expected scores come from what each generated submission is: the reference (every point, the
timing tier given since it is not measured here), the blank stubs (nothing), or the reference with
one of the demo's mistakes (its own task loses points, every other correctness task keeps all).
"""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.units.positional_encodings import rubric
from autograder.ways_in.batch import grade_class, unique_names
from autograder.course.build import ROOT
from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES

# Each kind of submission (the reference, the blank stubs, each of the demo's mistakes) four times: a resumed run
# that grades some kind wrong, or grades a student again, shows on every copy. (200 took 150 s of a worker's time.)
CLASS_SIZE = 60
KILL_AFTER = 20  # results on disk when the first run is killed


def _kinds(reference_text, stub_text):
    kinds = {"reference": reference_text, "blank": stub_text}
    kinds.update({mistake.name: apply(mistake, reference_text) for mistake in MISTAKES})
    return kinds


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, reference_text, stub_text):
    folder = tmp_path_factory.mktemp("class")
    kinds = _kinds(reference_text, stub_text)
    names = list(kinds)
    kind_of = {}
    for number in range(CLASS_SIZE):
        student = f"student_{number:03d}"
        kind_of[student] = names[number % len(names)]
        (folder / "submitted" / student).mkdir(parents=True)
        (folder / "submitted" / student / "positional_encodings.py").write_text(kinds[kind_of[student]])
    return folder, kind_of


def _command(folder):
    return [sys.executable, "-m", "autograder", "grade", str(folder / "submitted"), "--out", str(folder / "out"),
            "--jobs", "2", "--without-gpu", "give"]


def _ours(scratch):
    """Processes this test's grader started (their working folder is the test's own temporary folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "cwd") == str(scratch):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def killed_then_resumed(classroom):
    folder, _ = classroom
    scratch = folder / "scratch"
    scratch.mkdir()
    environment = dict(os.environ, TMPDIR=str(scratch))
    out = folder / "out"
    first = subprocess.Popen(_command(folder), cwd=ROOT, env=environment, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while len(list(out.glob("student_*.json"))) < KILL_AFTER and time.monotonic() < deadline:
        assert first.poll() is None, first.stderr.read()
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)  # no chance to clean up: as if the machine had gone down
    first.wait()
    time.sleep(1)
    before = {path.name: path.stat().st_mtime_ns for path in out.glob("student_*.json")}
    leftovers = []
    for _ in range(50):  # the sandboxes die with their parent; give the kernel a moment
        leftovers = [pid for pid in _ours(scratch) if pid != os.getpid()]
        if not leftovers:
            break
        time.sleep(0.1)
    second = subprocess.run(_command(folder), cwd=ROOT, env=environment, capture_output=True, text=True, timeout=900)
    return out, before, leftovers, second


def test_the_first_run_was_killed_halfway_and_left_nothing_running(killed_then_resumed):
    _, before, leftovers, _ = killed_then_resumed
    assert KILL_AFTER <= len(before) < CLASS_SIZE
    assert leftovers == []


def test_the_second_run_keeps_what_was_graded_and_grades_the_rest(killed_then_resumed):
    out, before, _, second = killed_then_resumed
    assert second.returncode == 0, second.stderr
    assert f"{CLASS_SIZE - len(before)} submission(s) graded" in second.stderr
    assert f"{len(before)} already graded" in second.stderr
    after = {path.name: path.stat().st_mtime_ns for path in out.glob("student_*.json")}
    assert len(after) == CLASS_SIZE
    assert {name: after[name] for name in before} == before  # not written again
    assert not list(out.glob(".*.tmp"))


def test_every_student_has_the_score_of_what_they_handed_in(killed_then_resumed, classroom):
    out, _, _, _ = killed_then_resumed
    _, kind_of = classroom
    mistakes = {mistake.name: mistake for mistake in MISTAKES}
    with open(out / "grades.csv", newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(kind_of)
    for student, kind in kind_of.items():
        data = json.loads((out / f"{student}.json").read_text())
        assert data["score"] == float(rows[student]["total"])
        by_task = {}
        for test in data["autograder"]["tests"]:
            by_task[test["task"]] = by_task.get(test["task"], 0) + test["score"]
        if kind == "reference":
            assert data["score"] == 100, student
        elif kind == "blank":
            assert data["score"] == 0, student
        else:
            wrong = mistakes[kind].task
            assert by_task[wrong] < rubric.task_points(wrong), (student, kind)
            for task in rubric.TASK_NAMES:
                if task != wrong:
                    assert by_task[task] == rubric.task_points(task), (student, kind, task)


def test_the_summary_is_written_for_the_whole_class(killed_then_resumed, classroom):
    out, _, _, _ = killed_then_resumed
    _, kind_of = classroom
    text = (out / "summary.txt").read_text()
    assert f"{CLASS_SIZE} submissions" in text
    references = sum(kind == "reference" for kind in kind_of.values())
    full_marks = next(line for line in text.splitlines() if line.strip().startswith("100 |"))
    assert full_marks.split()[-1] == str(references)
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_changed_submission_is_graded_again_and_force_grades_all(grader, tmp_path, reference_text, stub_text):
    for name, text in (("ada", reference_text), ("bob", stub_text), ("cy", stub_text)):
        (tmp_path / "in" / name).mkdir(parents=True)
        (tmp_path / "in" / name / "positional_encodings.py").write_text(text)
    paths = sorted((tmp_path / "in").iterdir())
    results, resumed = grade_class(grader, paths, tmp_path / "out", jobs=2)
    assert resumed == 0 and [r.score for r in results][1:] == [0, 0]
    (tmp_path / "in" / "bob" / "positional_encodings.py").write_text(reference_text)  # bob hands in again
    results, resumed = grade_class(grader, paths, tmp_path / "out", jobs=2)
    assert resumed == 2 and results[1].score == results[0].score
    results, resumed = grade_class(grader, paths, tmp_path / "out", jobs=2, force=True)
    assert resumed == 0


def test_two_students_with_the_same_file_name_get_two_rows():
    assert unique_names([Path("a/positional_encodings.py"), Path("b/positional_encodings.py"), Path("c/x.py")]) == [
        "positional_encodings", "positional_encodings-2", "x"]
