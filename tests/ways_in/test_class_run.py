"""Invariants 3 and 6, as properties of a whole class run: hostile members change nothing for honest ones.

Hypothesis draws a class: honest students (the reference, one-mistake submissions, the blank stubs) mixed
with hostile ones (attacks from the red-team corpus, and files no honest upload looks like: a link to the
reference, a FIFO, a notebook nested 100 000 deep, cell metadata that is a list, a name full of escapes, a
spreadsheet formula for a name). The class is graded with the real command line, two jobs at once, the
timing tier on. Whatever the draw:

* the run exits 0 and writes a row for every submission, grades.csv and the summary;
* every honest student gets exactly the score, test for test, they get when graded alone;
* nothing is left running, and nothing is written outside the results folder.
"""

import csv
import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.course.build import ROOT, make_stub, strip_markers
from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES
from autograder.sandbox.server import bubblewrap
from red_team_corpus import BUSY_THREADS, corpus, processes_named
from conftest import REFERENCE, UNIT

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap (bwrap) is not installed here")

REFERENCE_TEXT = strip_markers(REFERENCE.read_text(encoding="utf-8"))
STUB_TEXT = make_stub(REFERENCE.read_text(encoding="utf-8"), UNIT)
HONEST = {"reference": REFERENCE_TEXT, "blank": STUB_TEXT}
HONEST.update({mistake.name: apply(mistake, REFERENCE_TEXT) for mistake in MISTAKES[::3]})
# Attacks that end by themselves within a second or two (the hanging ones are in test_red_team.py).
SOURCE_ATTACKS = ("forges_the_first_frame", "escape_sequences_in_messages", "every_function_raises_value_error",
                  "many_processes", "fills_its_private_folders", "os_exit_in_a_call", "floods_output",
                  "detached_daemon", "torch_function_subclass", "children_beyond_the_memory_limit")
BUSY = REFERENCE_TEXT + BUSY_THREADS


def _notebook(cells, metadata=None):
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
            "cells": [{"cell_type": "code", "id": f"c{i}", "source": source, "metadata": metadata or {},
                       "outputs": [], "execution_count": None} for i, source in enumerate(cells)]}


def _write_hostile(folder, kind, index, marker):
    """Write one hostile member into the class folder; returns the name its row will carry."""
    name = f"h{index:02d}_{kind}"
    if kind in SOURCE_ATTACKS:
        (folder / f"{name}.py").write_text(STUB_TEXT + corpus(folder.parent / marker)[kind].source)
    elif kind == "busy_threads":
        (folder / f"{name}.py").write_text(BUSY)
    elif kind == "symlink_to_reference":
        (folder / name).mkdir()
        (folder / name / "positional_encodings.py").symlink_to(REFERENCE)
    elif kind == "fifo":
        (folder / name).mkdir()
        os.mkfifo(folder / name / "positional_encodings.py")
    elif kind == "deep_notebook":
        (folder / f"{name}.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    elif kind == "metadata_is_a_list":
        notebook = _notebook([REFERENCE_TEXT], metadata=["nbgrader", {"grade": True}])
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook))
    elif kind == "escapes_in_its_name":
        name = f"h{index:02d}_\x1b]0;owned\x07\r100 of 100"
        (folder / name).mkdir()
        (folder / name / "positional_encodings.py").write_text(STUB_TEXT)
    elif kind == "formula_for_a_name":
        name = f"=HYPERLINK(\"example.invalid\",\"h{index:02d}\")+1"
        (folder / f"{name}.py").write_text(STUB_TEXT)
    return name


HOSTILE = SOURCE_ATTACKS + ("busy_threads", "symlink_to_reference", "fifo", "deep_notebook", "metadata_is_a_list",
                            "escapes_in_its_name", "formula_for_a_name")


def _files(folder):
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if not path.is_dir() or path.is_symlink())


def _run(folder, out):
    environment = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out), "--jobs", "2",
                           "--timeout", "25", "--task-timeout", "5", "--without-gpu", "cpu"],
                          cwd=ROOT, env=environment, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """Each honest kind graded on its own, by the same command: the scores a class run must reproduce."""
    scores = {}
    for kind, text in HONEST.items():
        folder = tmp_path_factory.mktemp(f"alone-{kind}")
        (folder / "class").mkdir()
        (folder / "class" / f"{kind}.py").write_text(text)
        done = _run(folder / "class", folder / "results")
        assert done.returncode == 0, done.stderr[-2000:]
        saved = json.loads((folder / "results" / f"{kind}.json").read_text())
        scores[kind] = {test["id"]: test["score"] for test in saved["autograder"]["tests"]}
    return scores


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow])
@given(honest=st.lists(st.sampled_from(sorted(HONEST)), min_size=2, max_size=4),
       hostile=st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=5, unique=True))
def test_hostile_classmates_change_no_honest_score_and_the_run_completes(alone, tmp_path_factory, honest, hostile):
    root = tmp_path_factory.mktemp("class-run")
    marker = f"class-{uuid.uuid4().hex[:10]}"
    (root / marker).mkdir()
    folder = root / "class"
    folder.mkdir()
    names = {}
    for index, kind in enumerate(honest):
        (folder / f"s{index:02d}_{kind}.py").write_text(HONEST[kind])
        names[f"s{index:02d}_{kind}"] = kind
    hostile_names = [_write_hostile(folder, kind, index, marker) for index, kind in enumerate(hostile)]
    before = _files(folder)
    repository = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                                text=True).stdout
    out = root / "results"
    done = _run(folder, out)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:3] == ["submission", "total", "max_score"]
    assert len(rows) - 1 == len(honest) + len(hostile), rows
    assert (out / "summary.txt").is_file()
    assert len(list(out.glob("*.json"))) == len(honest) + len(hostile)
    for path in out.glob("*.json"):
        saved = json.loads(path.read_text())["autograder"]
        kind = names.get(saved["name"])
        if kind is None:
            assert saved["name"] not in names
            continue
        scores = {test["id"]: test["score"] for test in saved["tests"]}
        assert scores == alone[kind], (saved["name"], {t: (scores[t], alone[kind][t]) for t in scores
                                                       if scores[t] != alone[kind][t]})
        assert not saved["grader_fault"]
    for row in rows[1:]:
        assert not row[0].startswith(("=", "+", "-", "@")), row[0]
        assert "\x1b" not in row[0] and "\r" not in row[0]
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    deadline = time.monotonic() + 10
    while processes_named(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_named(marker) == []
    assert list((root / marker).iterdir()) == []
    assert _files(folder) == before  # the class folder is as it was: nothing written beside the submissions
    assert subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                          text=True).stdout == repository
    assert {path.name for path in root.iterdir()} == {marker, "class", "results"}
    assert hostile_names  # drawn, written and graded


def test_the_class_run_leaves_no_control_group_behind():
    """Every job's group, and the run's own, are removed when the run ends (a killed run's, at the next start)."""
    from autograder.sandbox.cgroups import Tree, Unavailable

    try:
        tree = Tree.detect()
    except Unavailable:
        pytest.skip("no control groups here")
    try:
        parents = {parent.parent for parent in tree.parents.values()}
    finally:
        tree.close()
    left = [path for parent in parents for path in parent.glob("autograder-*")
            if not any(path.name.startswith(f"autograder-{pid}-") for pid in _alive_graders())]
    assert left == []


def _alive_graders():
    return [int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit()]
