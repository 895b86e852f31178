"""Hostile submissions, graded with the class: each scores 0, the reference beside them full marks.

The corpus is tests/red_team_corpus.py: each attack appended to the blank stubs, so it has no honest points
to keep. The grader compares on its own side, strips tensor subclasses, never unpickles what comes back,
and (with bubblewrap) keeps the code away from everything but its work folder. The same corpus goes
through `nbgrader autograde` in test_nbgrader_course.py; more cases that keep part of their marks are in
test_bad_submissions.py (exits, hangs, crashes), test_sandbox.py (files, network, daemons) and
test_timing_tier.py (clocks).
"""

import subprocess
import time
import uuid

import pytest

from autograder.build import ROOT
from autograder.sandbox import bubblewrap
from red_team_corpus import corpus, processes_named

NAMES = list(corpus(ROOT / "unused"))


@pytest.fixture(scope="module")
def red_team(quick_grader, tmp_path_factory, stub_text, reference_text):
    folder = tmp_path_factory.mktemp("red_team")
    traces = folder / f"red-team-{uuid.uuid4().hex[:10]}"
    traces.mkdir()
    attacks = corpus(traces)
    paths = []
    for name, attack in attacks.items():
        path = folder / f"{name}.py"
        path.write_text(stub_text + "\n" + attack.source)
        paths.append(path)
    (folder / "reference.py").write_text(reference_text)
    paths.append(folder / "reference.py")
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    results = {result.name: result for result in quick_grader.grade_many(paths, jobs=2)}
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    deadline = time.monotonic() + 5  # a killed process may take a moment to go
    while processes_named(traces.name) and time.monotonic() < deadline:
        time.sleep(0.1)
    return results, attacks, traces, before.stdout, after.stdout


@pytest.mark.parametrize("name", NAMES)
def test_hostile_submission_scores_0(red_team, name):
    results, attacks, _, _, _ = red_team
    if attacks[name].sandboxed_only and bubblewrap() is None:
        pytest.skip("bubblewrap (bwrap) is not installed here: without it the code can read the reference")
    result = results[name]
    assert result.score == 0, {test.id: test.output for test in result.tests if test.score}
    assert len(result.tests) == len(results["reference"].tests)


def test_the_reference_keeps_full_marks_in_the_same_run(red_team):
    results, _, _, _, _ = red_team
    assert results["reference"].score == 100, [t.output for t in results["reference"].tests if not t.passed]


def test_nothing_the_corpus_left_was_unpickled_changed_outside_or_left_running(red_team):
    _, _, traces, before, after = red_team
    assert list(traces.iterdir()) == []
    assert processes_named(traces.name) == []
    assert before == after  # the repository, ignored files included, is as it was


def test_the_forged_results_are_reported_not_trusted(red_team):
    results, _, _, _, _ = red_team
    outputs = "\n".join(test.output for test in results["forged_results"].tests)
    # Every verdict is the grader's own: its fake answers (a tensor of shape (1,)) compared, or the forged
    # files refused. Which one depends on whether the grader came across the files: when it sees them before
    # the worker has said it loaded, it takes them for replies, refuses them and stops the child.
    assert any(sign in outputs for sign in ("has shape (1,)", "could not be read", "stopped while loading")), outputs
