"""Hostile submissions, graded with the class: each scores 0, the reference beside them full marks.

Each hostile file is the blank stubs plus an attack, so it has no honest points to keep. The grader
compares on its own side, strips tensor subclasses, never unpickles what comes back, and (with bubblewrap)
keeps the code away from everything but its work folder. More of the corpus is in test_bad_submissions.py
(exits, hangs, crashes), test_sandbox.py (files, network, daemons) and test_timing_tier.py (clocks).
"""

import subprocess
import uuid

import pytest

from autograder.build import ROOT

MARKER = f"red-team-{uuid.uuid4().hex[:10]}"
ANSWER_ALL = '''

def _fake(*args, **kwargs):
    return _ANSWER


sinusoidal_table = clipped_relative_positions = shaw_scores = t5_relative_position_bucket = _fake
t5_bias = biased_scores = _fake
'''

ATTACKS = {
    # Every comparison a grader in this process would use, made to agree.
    "patched_comparisons": '''
import builtins, numpy, numpy.testing, torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.testing.assert_allclose = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
_import = builtins.__import__
builtins.__import__ = lambda name, *args, **kwargs: _import(name, *args, **kwargs)
_ANSWER = torch.zeros(1)
''' + ANSWER_ALL,
    # A tensor that claims to equal anything, whatever function is applied to it.
    "torch_function_subclass": '''
import torch


class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__, torch.isclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})

    def __eq__(self, other):
        return True


_ANSWER = torch.zeros(3, 3).as_subclass(Agreeable)
''' + ANSWER_ALL,
    # Look up the call stack for the expected output; return the biggest tensor found there.
    "stack_walk": '''
import sys, torch, gc


def _fake(*args, **kwargs):
    found = []
    frame = sys._getframe(1)
    while frame is not None:
        found += [value for value in frame.f_locals.values() if isinstance(value, torch.Tensor)]
        frame = frame.f_back
    found += [obj for obj in gc.get_objects() if isinstance(obj, torch.Tensor)]
    return max(found, key=lambda tensor: tensor.numel()) if found else torch.zeros(1)


sinusoidal_table = clipped_relative_positions = shaw_scores = t5_relative_position_bucket = _fake
t5_bias = biased_scores = _fake
''',
    # Claim full marks on stdout, and leave forged result files where the worker writes its own:
    # one holds a pickle that would run a command if anything unpickled it.
    "forged_results": f'''
import json, os, pickle, torch
print(json.dumps({{"score": 100, "max_score": 100, "tests": []}}))


class Payload:
    def __reduce__(self):
        return (os.system, ("touch /work/{MARKER}-unpickled; touch /tmp/{MARKER}-unpickled",))


for task in ("sinusoidal", "learned", "relative_positions", "shaw", "t5_bucket", "t5_bias", "biased_scores"):
    for name in (f"result-{{task}}.pt", "results.json"):
        with open(name, "wb") as handle:
            pickle.dump({{"forged": Payload()}}, handle)
_ANSWER = torch.zeros(1)
''' + ANSWER_ALL,
    # Far more memory than allowed, then a flood of output, in every call.
    "memory_and_flood": '''
import sys, torch


def _fake(*args, **kwargs):
    sys.stdout.write("x" * 50_000_000)
    sys.stderr.write("y" * 50_000_000)
    return torch.empty(64 * 1024**3, dtype=torch.uint8)


sinusoidal_table = clipped_relative_positions = shaw_scores = t5_relative_position_bucket = _fake
t5_bias = biased_scores = _fake
''',
    # Ignore SIGTERM and loop forever, in a call.
    "ignores_sigterm": '''
import signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)


def sinusoidal_table(*args, **kwargs):
    while True:
        pass
''',
}


@pytest.fixture(scope="module")
def red_team(quick_grader, tmp_path_factory, stub_text, reference_text):
    folder = tmp_path_factory.mktemp("red_team")
    paths = []
    for name, attack in ATTACKS.items():
        path = folder / f"{name}.py"
        path.write_text(stub_text + "\n" + attack)
        paths.append(path)
    (folder / "reference.py").write_text(reference_text)
    paths.append(folder / "reference.py")
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    results = {result.name: result for result in quick_grader.grade_many(paths, jobs=2)}
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    return results, folder, before.stdout, after.stdout


@pytest.mark.parametrize("name", list(ATTACKS))
def test_hostile_submission_scores_0(red_team, name):
    results, _, _, _ = red_team
    result = results[name]
    assert result.score == 0, {test.id: test.output for test in result.tests if test.score}
    assert len(result.tests) == len(results["reference"].tests)


def test_the_reference_keeps_full_marks_in_the_same_run(red_team):
    results, _, _, _ = red_team
    assert results["reference"].score == 100, [t.output for t in results["reference"].tests if not t.passed]


def test_nothing_the_corpus_left_was_unpickled_or_changed_outside(red_team):
    _, folder, before, after = red_team
    assert not list(folder.glob(f"{MARKER}*")) and not list(ROOT.glob(f"{MARKER}*"))
    assert not any(MARKER in path.name for path in __import__("pathlib").Path("/tmp").glob(f"{MARKER}*"))
    assert before == after  # the repository, ignored files included, is as it was


def test_the_forged_results_are_reported_not_trusted(red_team):
    results, _, _, _ = red_team
    outputs = "\n".join(test.output for test in results["forged_results"].tests)
    assert "not implemented yet" in outputs or "could not be read" in outputs
