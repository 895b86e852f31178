"""One parse at a time (autograder/core/parsing.py): the grader grades submissions in threads, and CPython's parser
keeps one depth count for the whole interpreter. A parse that a collection interrupts, beside another thread's
parse, ends in ``SystemError: AST constructor recursion depth mismatch``, and the grader made the whole submission
a grader fault. Here: what grading threads parse, run in threads with the collector run often and a finalizer that
lets another thread in, never fails; and no module of the kit parses anywhere else.
"""

import ast
import gc
import threading
import time
from pathlib import Path

import pytest

from autograder.core import mutants, parsing, recognize, units
from autograder.core.grade import grader_fault
from autograder.core.loop_check import findings
from autograder.intake.load import load

KIT = Path(__file__).resolve().parents[2] / "autograder"


class _GilReleasingGarbage:
    """A cycle whose collection runs Python code that lets another thread in, as a grader's closed files and
    finished processes may when the collector runs in the middle of a parse."""

    def __init__(self):
        self.me = self

    def __del__(self):
        time.sleep(0.0001)


def _litter():
    for _ in range(3):
        _GilReleasingGarbage()  # collected during the next parse, when the collector next runs


def _run_with_frequent_collections(threads):
    """Start ``threads`` and wait for them, with the garbage collector run often (so that it runs in the middle of a
    parse, and a finalizer lets another thread in)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(100, 10, 10)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*thresholds)


def _each(failures, what, repeats, step):
    """A thread's work: ``step(repeat)`` ``repeats`` times, each failure kept as a grading thread would have died."""
    def work():
        for repeat in range(repeats):
            _litter()
            try:
                step(repeat)
            except Exception as error:  # noqa: BLE001 -- what a grading thread would have died of
                failures.append(f"{what}: {error!r}")
    return threading.Thread(target=work)


def test_the_loop_check_of_submissions_graded_at_once_in_threads_never_fails(reference_text):
    path = ["shaw_scores", "clipped_relative_positions"]
    expected = findings(reference_text, path)
    failures, outcomes = [], []

    def check(number):
        # a text of its own each time: the check keeps the programs it read
        return lambda repeat: outcomes.append(findings(f"{reference_text}\n# {number}.{repeat}\n", path))

    _run_with_frequent_collections([_each(failures, "the loop check", 25, check(n)) for n in range(4)])
    assert failures == []
    assert outcomes == [expected] * 100


@pytest.mark.parametrize("unit_name", ["positional_encodings", "long_context"])
def test_what_a_grading_thread_parses_never_fails_beside_another_thread(unit_name, tmp_path):
    """What a grading thread parses: the error model's mutants (built by the thread that first needs them, from the
    finished reference, which for a unit that borrows is itself made by parsing the lender's), what the submission
    defines (core/recognize.py), the loop check, and a grader fault's traceback. Each beside the others. Before
    core/parsing.py, the finished reference of long_context was parsed outside the lock and failed so."""
    unit = units.get(unit_name)
    text = unit.finished_reference
    tasks = [task for task in unit.rubric.TASK_NAMES if task != "timing"][:2]
    path = [next(iter(unit.rubric.TASK_OF_FUNCTION))]  # a function of the unit's, and what it reaches
    expected = findings(text, path)
    submission_path = tmp_path / "submission.py"
    submission_path.write_text(text, encoding="utf-8")
    submission = load(submission_path)
    defined = sorted(recognize.definitions(submission))
    failures, counts = [], {}

    def build(task):
        def step(_):
            mutants._mutants_cached.cache_clear()
            counts.setdefault(task, set()).add(len(mutants.mutants(unit, task)))
        return step

    def check(number):
        def step(repeat):
            assert findings(f"{unit.finished_reference}\n# {number}.{repeat}\n", path) == expected
        return step

    def recognise(_):
        assert sorted(recognize.definitions(submission)) == defined

    def fault(_):
        try:
            eval(compile("(1 +\n 2) / 0", "<a line the traceback module underlines>", "eval"))  # noqa: S307
        except ZeroDivisionError as error:
            _, (_, record) = grader_fault("a submission", "a test of the grader's faults", error)
            assert "ZeroDivisionError" in record

    try:
        _run_with_frequent_collections([_each(failures, f"building {task}'s mutants", 5, build(task))
                                        for task in tasks]
                                       + [_each(failures, "the loop check", 30, check(n)) for n in range(2)]
                                       + [_each(failures, "recognition", 30, recognise),
                                          _each(failures, "a grader fault", 30, fault)])
    finally:
        mutants._mutants_cached.cache_clear()
    assert failures == []
    assert all(len(sizes) == 1 and min(sizes) > 0 for sizes in counts.values()), counts  # the same mutants each time


def _calls(tree):
    """(line, dotted name) of every call in ``tree`` whose function is a dotted name, with the `with` items that
    hold it."""
    found = []

    def visit(node, held):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            held = held + tuple(ast.unparse(item.context_expr) for item in node.items)
        if isinstance(node, ast.Call):
            found.append((node.lineno, ast.unparse(node.func), held))
        for child in ast.iter_child_nodes(node):
            visit(child, held)

    visit(tree, ())
    return found


_TRACEBACK_TEXT = {"traceback.format_exception", "traceback.format_exc", "traceback.print_exc",
                   "traceback.print_exception", "traceback.format_tb", "traceback.print_tb", "traceback.format_stack",
                   "traceback.print_stack"}


def test_no_module_of_the_kit_parses_but_through_core_parsing():
    """Every ``ast.parse`` of the kit is core/parsing.py's; a traceback made into text (the traceback module parses
    the lines it underlines) outside the sandbox's own processes is made inside ``parsing.alone()``."""
    wrong = []
    for path in sorted(KIT.rglob("*.py")):
        name = path.relative_to(KIT).as_posix()
        if name == "core/parsing.py":
            continue
        for line, called, held in _calls(parsing.parse(path.read_text(encoding="utf-8"))):
            if called == "ast.parse":
                wrong.append(f"{name}:{line}: {called}")
            if called in _TRACEBACK_TEXT and not name.startswith("sandbox/") \
                    and "parsing.alone()" not in held:
                wrong.append(f"{name}:{line}: {called} outside parsing.alone()")
    assert wrong == []
