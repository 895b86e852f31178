"""Every entry of a class folder is accounted for, and a grader fault shows the student an incident id, never
the grader's own traceback.

Invariant (docs/threat-model.md, "every entry has a row or a reason"): for any class folder, each entry directly
inside it (any name: dot-names, spaces, accents, names that collide once sanitised; files, folders, empty ones,
links, FIFOs) is either graded, with a row in grades.csv and its JSON, or listed with the reason in skipped.txt
(and on stderr); never both, never neither.

Invariant ("a grader fault is an incident id to the student"): an exception inside the grader while it grades one
submission gives that submission a plain sentence with an incident id; the traceback and the exception's text
go to the instructor's log only (stderr, and grader-faults.log in --out), never into the feedback, the JSON's
``output``, grades.csv or the platforms' results.

The class runs go through the real command line (``python -m autograder grade DIR --out OUT``) with a stand-in
for the sandboxed grader that reads each submission with the real loader (so a link, a FIFO or an empty folder
gets the row the loader gives it) and scores what it read in full; the faults are injected into the real
Grader (the session's), at the step each property draws.
"""

import csv
import dataclasses
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import grade, report
from autograder.intake.inert import inert_line
from autograder.intake.load import LoadError, load
from autograder.sandbox.server import RunOutcome
from autograder.ways_in import cli, gradescope, prairielearn
from conftest import UNIT

SECRET = "HIDDEN-CASE sinusoidal_table(50, 16) expected 0.8414709848 at [0, 1]"


# ---- A class run through the command line, with a stand-in for the sandbox ----

class NoServer:
    def __init__(self, *_, **__):
        pass

    def close(self):
        pass


class ReadingGrader:
    """Stands in for Grader in a class run: reads each submission with the real loader; full marks for what it
    could read, a row that says why for what it could not."""

    tier = "stand-in"

    def __init__(self, unit, seed=None, **_):
        self.unit = unit
        self.seed = unit.rubric.SEED if seed is None else seed

    def grade(self, path, **_):
        name = path.stem if path.suffix in (".py", ".ipynb") else path.name
        try:
            load(path, self.unit.file_names)
        except (LoadError, OSError) as error:
            return grade._all_failed(self.unit, name, path, f"Could not read the submission: {error}")
        tests = [grade.TestResult(t.id, t.task, t.points, t.points, "Passed.") for t in self.unit.rubric.TESTS]
        return grade.Result(name, str(path), tests, unit=self.unit.name)

    def grade_many(self, paths, jobs=1, on_result=None):
        results = []
        for index, path in enumerate(paths):
            results.append(self.grade(Path(path)))
            if on_result:
                on_result(index, results[-1])
        return results

    def close(self):
        pass


def _stand_in(patch, grader_class=ReadingGrader):
    patch.setattr("autograder.sandbox.server.ForkServer", NoServer)
    patch.setattr("autograder.sandbox.server.resolve_sandbox", lambda sandbox: "off")
    patch.setattr("autograder.core.grade.Grader", grader_class)
    patch.setattr("autograder.core.summary.write_summary", lambda results, out: [])  # no picture: speed


def class_run(folder, out, patch):
    """``grade FOLDER --out OUT --unit positional_encodings``, in process with the stand-in grader; returns
    (the rows of grades.csv, the JSON per student, skipped.txt's (name, reason) lines)."""
    _stand_in(patch)
    try:
        assert cli.main(["grade", str(folder), "--out", str(out), "--unit", UNIT.name, "--jobs", "1"]) == 0
    except SystemExit as stopped:  # nothing to grade: exit 2, each entry listed with why
        assert stopped.code == 2
        rows = []
    else:
        with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))[1:]
    saved = [json.loads(path.read_text(encoding="utf-8")) for path in out.glob("*.json")]
    listing = out / "skipped.txt"
    lines = listing.read_text(encoding="utf-8").splitlines() if listing.exists() else []
    skipped = [tuple(line.split("\t", 1)) for line in lines if not line.startswith("#")]
    return rows, saved, skipped


def assert_every_entry_accounted_for_once(folder, rows, saved, skipped):
    entries = sorted(os.listdir(folder))
    graded = Counter(Path(data["autograder"]["path"]).name for data in saved)
    listed = Counter(name for name, _ in skipped)
    assert all(reason.strip() for _, reason in skipped), skipped
    assert len(rows) == len(saved) == sum(graded.values()), (rows, saved)
    assert len({row[0] for row in rows}) == len(rows), f"two rows share a name: {[row[0] for row in rows]}"
    assert not +graded - Counter(entries), f"graded entries that are not in the folder: {graded}"
    assert len(saved) + len(skipped) == len(entries), (
        f"entries {entries}: graded {sorted(graded)}, listed as skipped {sorted(listed)}")
    missing = Counter(inert_line(name) for name in entries if name not in graded) - listed
    assert not missing, f"entries with neither a row nor a reason: {sorted(missing)}"


# ---- Regression tests: each failed before the fix ----

def test_every_entry_of_a_class_folder_has_a_row_or_a_reason(tmp_path, monkeypatch, reference_text):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(reference_text)
    (folder / ".bob.py").write_text(reference_text)  # a student's dot-name: no row before, and no word of it
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / "notes.txt").write_text("hello")
    os.mkfifo(folder / "pipe")
    rows, saved, skipped = class_run(folder, tmp_path / "out", monkeypatch)
    assert_every_entry_accounted_for_once(folder, rows, saved, skipped)
    reasons = dict(skipped)
    assert "starts with" in reasons[".bob.py"] and "named pipe" in reasons["pipe"], reasons


def test_two_submissions_never_share_a_row_name(tmp_path, monkeypatch, reference_text):
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("x.py", "x.ipynb", "x-2.py"):  # "x" twice makes "x-2", which a student's own name already is
        (folder / name).write_text(reference_text)
    rows, saved, skipped = class_run(folder, tmp_path / "out", monkeypatch)
    assert_every_entry_accounted_for_once(folder, rows, saved, skipped)


@pytest.fixture()
def reference_file(tmp_path, reference_text):
    path = tmp_path / "positional_encodings.py"
    path.write_text(reference_text)
    return path


def student_facing(result):
    """Everything of a Result a student may see, in every form a way in shows it."""
    return "\n".join([
        "\n".join(result.notes), "\n".join(test.output for test in result.tests),
        json.dumps(result.to_gradescope()), report.feedback(result), report.grades_csv([result]),
        json.dumps(gradescope.to_results(result, "positional_encodings.py")),
        json.dumps(prairielearn.to_results(result, "positional_encodings.py"))])


def assert_only_an_incident_id_shown(result, raised, log):
    shown = student_facing(result)
    assert result.grader_fault
    for leak in (SECRET, "Traceback", 'File "', type(raised).__name__ + "("):
        assert leak not in shown, f"{leak!r} reaches the student:\n{shown[:3000]}"
    ids = set(re.findall(r"incident ([0-9a-f]{8})", shown))
    assert ids, f"no incident id shown to the student:\n{shown[:2000]}"
    for incident in ids:  # each id shown has its traceback in the instructor's log
        assert f"incident {incident}" in log and "Traceback" in log, log[-3000:]


def test_a_grader_fault_shows_the_student_an_incident_id_and_not_the_traceback(grader, reference_file, monkeypatch,
                                                                               capsys):
    error = KeyError(SECRET)

    def broken(*_, **__):
        raise error

    monkeypatch.setattr(grade, "run_submission", broken)
    result = grader.grade(reference_file)
    log = capsys.readouterr().err
    assert_only_an_incident_id_shown(result, error, log)
    assert SECRET in log  # the instructor gets the whole of it


# ---- Properties ----

NAME = st.text(alphabet="ab.-_ 2éЖ\t", min_size=1, max_size=6).filter(lambda name: name not in (".", ".."))
KIND = st.sampled_from(["py", "ipynb", "txt", "bare", "folder", "empty_folder", "nested", "link", "dangling_link",
                        "fifo", "unreadable_folder"])


def _write_entry(folder, name, kind, text):
    path = folder / name
    if kind in ("py", "ipynb", "txt"):
        path = folder / f"{name}.{kind}"
    if os.path.lexists(path):
        return
    if kind in ("py", "txt", "bare"):
        path.write_text(text)
    elif kind == "ipynb":
        path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}))
    elif kind in ("folder", "unreadable_folder"):
        path.mkdir()
        (path / "positional_encodings.py").write_text(text)
        if kind == "unreadable_folder" and os.geteuid() != 0:  # root reads it all the same
            path.chmod(0)
    elif kind == "empty_folder":
        path.mkdir()
    elif kind == "nested":
        (path / "hw" / "deeper").mkdir(parents=True)
        (path / "hw" / "deeper" / "mine.py").write_text(text)
        (path / ".hidden.py").write_text(text)
    elif kind == "link":
        path.symlink_to(folder.parent / "outside.py")
    elif kind == "dangling_link":
        path.symlink_to(folder.parent / "nowhere")
    elif kind == "fifo":
        os.mkfifo(path)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(NAME, KIND), min_size=1, max_size=8))
def test_every_entry_of_a_generated_class_folder_is_graded_or_listed_once(tmp_path_factory, entries):
    root = tmp_path_factory.mktemp("class")
    (root / "outside.py").write_text("x = 1\n")
    folder = root / "class"
    folder.mkdir()
    for name, kind in entries:
        _write_entry(folder, name, kind, "x = 1\n")
    with pytest.MonkeyPatch.context() as patch:
        try:
            rows, saved, skipped = class_run(folder, root / "out", patch)
        finally:
            for path in folder.iterdir():
                if path.is_dir() and not path.is_symlink():
                    path.chmod(0o700)
    assert_every_entry_accounted_for_once(folder, rows, saved, skipped)


STEPS = ("cases", "load", "run", "check", "timing")
ERRORS = st.sampled_from([KeyError, ValueError, RuntimeError, TypeError, AssertionError, IndexError,
                          ZeroDivisionError, OSError, MemoryError])
MESSAGES = st.sampled_from([SECRET, f"bad value {SECRET!r}", f"\x1b[31m{SECRET}\nsecond line", f"{SECRET}\r"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(step=st.sampled_from(STEPS), kind=ERRORS, message=MESSAGES)
def test_no_exception_text_of_the_grader_reaches_the_student(grader, reference_file, capsys, step, kind, message):
    error = kind(message)

    def raising(*_, **__):
        raise error

    def ran(*_, **__):
        return RunOutcome(loaded={"errors": [], "defined": []})

    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        if step == "cases":
            patch.setattr(grader, "cases_for", raising)
        elif step == "load":
            patch.setattr(grade, "load", raising)
        elif step == "run":
            patch.setattr(grade, "run_submission", raising)
        else:
            patch.setattr(grade, "run_submission", ran)
            if step == "check":
                cases, plan = grader.cases_for(grader.seed)
                broken = {task: [dataclasses.replace(case, check=raising) for case in task_cases]
                          for task, task_cases in cases.items()}
                patch.setattr(grader, "cases_for", lambda seed: (broken, plan))
            patch.setattr(grade.timing, "grade_tier", raising)
        result = grader.grade(reference_file)
    assert_only_an_incident_id_shown(result, error, capsys.readouterr().err)


# ---- The ways in: the CLI's results folder, Gradescope, PrairieLearn ----

class Borrowed:
    """The session's real Grader, lent to a platform's grade_upload (which closes what it makes)."""

    real = None

    def __init__(self, unit, **_):
        self.tier = self.real.tier

    def grade(self, path, **kwargs):
        return self.real.grade(path, **kwargs)

    def close(self):
        pass


@pytest.fixture()
def faulty(grader, monkeypatch):
    def broken(*_, **__):
        raise KeyError(SECRET)

    monkeypatch.setattr(grade, "run_submission", broken)
    monkeypatch.setattr(Borrowed, "real", grader)
    monkeypatch.setattr("autograder.core.grade.Grader", Borrowed)
    return grader


def test_a_class_run_keeps_the_traceback_in_the_instructor_s_log(tmp_path, reference_text, faulty, capsys):
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(reference_text)
    (folder / "bob.py").write_text(reference_text)

    class Lent(Borrowed):
        seed = faulty.seed
        unit = UNIT

        def grade_many(self, paths, jobs=1, on_result=None):
            return self.real.grade_many(paths, jobs=jobs, on_result=on_result)

    with pytest.MonkeyPatch.context() as patch:
        _stand_in(patch, Lent)
        assert cli.main(["grade", str(folder), "--out", str(tmp_path / "out"), "--unit", UNIT.name]) == 0
    said = capsys.readouterr()
    out = tmp_path / "out"
    shown = said.out + (out / "grades.csv").read_text() + "".join(
        json.dumps(json.loads(path.read_text())) for path in out.glob("*.json"))
    assert SECRET not in shown and "Traceback" not in shown, shown[:3000]
    log = (out / "grader-faults.log").read_text()
    ids = set(re.findall(r"incident ([0-9a-f]{8})", shown))
    assert len(ids) == 2 and all(f"incident {incident}" in log for incident in ids), (ids, log[:2000])
    assert log.count(SECRET) >= 2 and "Traceback" in log
    assert "grader-faults.log" in said.err


def test_gradescope_shows_the_incident_id_and_hides_the_log(tmp_path, reference_text, faulty, monkeypatch, capsys):
    monkeypatch.setenv(gradescope.UNIT_VARIABLE, UNIT.name)
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "positional_encodings.py").write_text(reference_text)
    assert gradescope.run(root) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    said = capsys.readouterr()
    shown = json.dumps(results)
    assert SECRET not in shown and "Traceback" not in shown, shown[:3000]
    assert results["stdout_visibility"] == "hidden" and results["score"] == 0
    [incident] = set(re.findall(r"incident ([0-9a-f]{8})", shown))
    assert f"incident {incident}" in said.out + said.err and SECRET in said.out + said.err


def test_prairielearn_shows_the_incident_id_and_keeps_the_traceback_in_the_job_log(tmp_path, reference_text, faulty,
                                                                                   capsys):
    root = tmp_path / "grade"
    (root / "student").mkdir(parents=True)
    (root / "student" / "positional_encodings.py").write_text(reference_text)
    (root / "tests").mkdir()
    (root / "tests" / "unit").write_text(UNIT.name + "\n")
    assert prairielearn.run(root) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    said = capsys.readouterr()
    shown = json.dumps(results)
    assert SECRET not in shown and "Traceback" not in shown, shown[:3000]
    [incident] = set(re.findall(r"incident ([0-9a-f]{8})", shown))
    assert f"incident {incident}" in said.out + said.err and SECRET in said.out + said.err
