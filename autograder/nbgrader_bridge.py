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
   (0 points), and the points as the cell's result when only part of them were
   earned (nbgrader's partial credit). Whatever the kernel printed or raised in those cells, including
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
    if test.task == rubric.TIMING.name:
        return _time_in_kernel(test, namespace)
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


def _time_in_kernel(test, namespace):
    """The timing tier without the kit's config: the same gate, static check and bands, timed in the kernel.

    Its clock is the kernel's, which the notebook's code could replace; TrustedGrades times from outside.
    """
    import inspect
    import statistics
    import time

    from autograder.compare import loops_in
    from autograder.grade import TestResult
    from solutions import positional_encodings as reference
    from autograder.timing import fraction_for, share_words

    path = next(path for path in rubric.TIMED_PATHS if path.test == test.id)
    failing = [other.id for task in path.requires for other in rubric.tests_of(task)
               if not run_test(other.id, namespace).passed]
    if failing:
        return TestResult(test.id, test.task, 0, test.points, f"Not timed: {', '.join(failing)} must pass first.")
    loops = []
    for name in path.functions:
        try:
            loops += loops_in(inspect.getsource(namespace[name]), [name])
        except (OSError, TypeError, KeyError):
            pass
    if loops:
        return TestResult(test.id, test.task, 0, test.points, f"No points: a Python loop ({loops[0]}).")
    sizes = rubric.TIMING_SIZES["cpu"]
    spec = {"path": path.name, "device": "cpu", "dtype": "float32", "seed": rubric.SEED,
            "max_relative": rubric.TIMING_MAX_RELATIVE, "num_buckets": rubric.TIMING_NUM_BUCKETS,
            **{key: sizes[key] for key in ("batch", "heads", "length", "head_dim")}}
    mine, theirs = worker._timed_call(namespace, spec), worker._timed_call(vars(reference), spec)
    mine(), theirs()
    ratios = []
    for _ in range(rubric.TIMING_REPEATS):
        started = time.perf_counter()
        mine()
        middle = time.perf_counter()
        theirs()
        ratios.append((middle - started) / max(time.perf_counter() - middle, 1e-9))
    ratio = statistics.median(ratios)
    fraction = fraction_for(ratio)
    return TestResult(test.id, test.task, test.points * fraction, test.points,
                      f"{share_words(fraction).capitalize()}: {ratio:.2f}x the reference's time (cpu, in the kernel).")


def hidden_check(test_id):
    """Grade rubric test ``test_id`` on the caller's globals (the notebook's namespace).

    Raises AssertionError (0 points) when the test fails; returns the points when only part of them
    were earned, so that nbgrader reads them as the cell's partial credit.
    """
    result = run_test(test_id, sys._getframe(1).f_globals)
    if result.score <= 0:
        raise AssertionError(f"{test_id} (0 of {result.max_score:g} points): {result.output}")
    print(f"{test_id} ({result.score:g} of {result.max_score:g} points): {result.output}")
    return None if result.passed else result.score


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
            if test.score > 0:
                text = f"{test.id} ({test.score:g} of {test.max_score:g} points): {test.output}\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
                if not test.passed:  # part of the points: nbgrader reads a number as partial credit
                    cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": f"{test.score:g}"},
                                                               execution_count=None))
            else:
                message = f"{test.id} (0 of {test.max_score:g} points): {test.output}"
                cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue=message,
                                                       traceback=[f"AssertionError: {message}"])]
        notes = "".join(f"\n  {note}" for note in result.notes)
        self.log.info("The kit's grader, out of the kernel: %g of %g points%s", result.score, result.max_score, notes)
        return nb, resources
