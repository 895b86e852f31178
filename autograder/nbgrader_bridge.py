"""How ``nbgrader autograde`` reaches the kit's grader. Two ways, the second one decides.

1. In the kernel. Each graded cell of the course notebook holds a hidden
   region that calls ``hidden_check("<test id>")``: the rubric test's hidden
   cases, run on the notebook's functions with the same probes, stand-ins and
   comparison as ``python -m autograder grade``. A failure raises an
   AssertionError whose message is the feedback. This is what a course without
   the kit's nbgrader config gets; it runs in the student's kernel, where the
   student's code could reach in and change it.
2. Out of the kernel. ``TrustedGrades``, registered in the course's
   ``nbgrader_config.py`` just before nbgrader's ``SaveAutoGrades``, grades the
   notebook's code with the kit's grader in its own child process and writes
   the verdict into each graded cell as its only output: a line of text when
   the test passed (full points), an error with the feedback when it failed
   (0 points). Whatever the kernel printed or raised in those cells, including
   a visible check that failed or a check that was tampered with, no longer
   counts, so the gradebook holds exactly the scores of
   ``python -m autograder grade``.
"""

import contextlib
import io
import sys
import tempfile
import warnings
from pathlib import Path

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


def _nbgrader_preprocessor_base():
    try:
        from nbgrader.preprocessors import NbGraderPreprocessor
    except ImportError:  # the kit is usable without nbgrader; only the course needs it
        return object
    return NbGraderPreprocessor


class TrustedGrades(_nbgrader_preprocessor_base()):
    """An autograde preprocessor: each graded cell's output is the kit's verdict, reached out of the kernel."""

    _grader = None  # one per nbgrader process: the hidden cases are built once for the whole class

    def preprocess(self, nb, resources):
        import nbformat

        from autograder.grade import Grader

        if TrustedGrades._grader is None:
            TrustedGrades._grader = Grader()
        with tempfile.TemporaryDirectory(prefix="trusted-grades-") as folder:
            path = Path(folder) / f"{rubric.ASSIGNMENT}.ipynb"
            path.write_text(nbformat.writes(nb), encoding="utf-8")
            result = TrustedGrades._grader.grade(path)
        by_id = {test.id: test for test in result.tests}
        for cell in nb.cells:
            grade_id = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
            if cell.cell_type != "code" or grade_id not in by_id:
                continue
            test = by_id[grade_id]
            if test.passed:
                text = f"{test.id} ({test.score:g} of {test.max_score:g} points): {test.output}\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
            else:
                message = f"{test.id} (0 of {test.max_score:g} points): {test.output}"
                cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue=message,
                                                       traceback=[f"AssertionError: {message}"])]
        notes = "".join(f"\n  {note}" for note in result.notes)
        self.log.info("The kit's grader, out of the kernel: %g of %g points%s", result.score, result.max_score, notes)
        return nb, resources
