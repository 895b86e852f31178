"""How ``nbgrader autograde`` reaches the kit's hidden checks.

Each graded cell of the course notebook ends in a hidden region that calls
``hidden_check("<test id>")``. It runs that rubric test's hidden cases on the
functions the notebook has defined, through the same probes, stand-ins and
comparison as ``python -m autograder grade``, so a test passes in the
gradebook exactly when it passes on the command line. A failing test raises
an AssertionError whose message is the feedback (nbgrader then gives the cell
0 points); a passing one prints a line and raises nothing (full points).

This runs inside the student's kernel, so it is only as safe as nbgrader
itself: code in the notebook could reach in and change it.
"""

import contextlib
import io
import sys
import warnings

import torch

from autograder import rubric, worker

_built = {}


def _cases_and_plan():
    if "cases" not in _built:
        from autograder.cases import build_cases
        from autograder.sandbox import serialize_plan

        _built["cases"] = build_cases(rubric.SEED)
        _built["plan"] = serialize_plan(_built["cases"])
    return _built["cases"], _built["plan"]


def run_test(test_id, namespace):
    """Score one rubric test on the functions in ``namespace``; returns the TestResult."""
    from autograder.grade import score_tests

    test = rubric.TEST_BY_ID[test_id]
    cases, plan = _cases_and_plan()
    # A fresh copy of the inputs for every call: the student's code may change a tensor in place.
    probes = torch.load(io.BytesIO(plan), weights_only=True)
    probes = [probe for task in probes["tasks"] if task["task"] == test.task for probe in task["probes"]
              if probe["id"].startswith(test.id + "/")]
    # nbgrader gives a cell 0 points for any text on stderr: keep the student's warnings out of it.
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = {probe["id"]: worker.run_probe(namespace, probe, chunks=[]) for probe in probes}
    [result] = score_tests([test], cases[test.task], results)
    return result


def hidden_check(test_id):
    """Grade rubric test ``test_id`` on the caller's globals (the notebook's namespace)."""
    result = run_test(test_id, sys._getframe(1).f_globals)
    if not result.passed:
        raise AssertionError(f"{test_id} (0 of {result.max_score:g} points): {result.output}")
    print(f"{test_id} ({result.score:g} of {result.max_score:g} points): {result.output}")
