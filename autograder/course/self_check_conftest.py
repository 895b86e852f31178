"""Loads your functions for the self-checks: ``pytest -k MODULE_TASK`` (or another task word).

The checks test the functions defined in ``MODULE_NAME.ipynb`` when
this folder has it, else in ``MODULE_NAME.py``; ``--source FILE``
picks another notebook or .py file. A notebook's code cells run in order, each
on its own, so an error in one cell does not hide the functions of the others;
magics, shell lines, the locked test cells and the pictures are left out.
"""

import os
import sys
import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULE = "MODULE_NAME"  # the module your functions are in
DEFAULT_SOURCES = (f"{MODULE}.ipynb", f"{MODULE}.py")
_loaded = {}


def pytest_addoption(parser):
    parser.addoption("--source", metavar="FILE",
                     help="the notebook or .py file whose functions to check "
                          f"(default: {MODULE}.ipynb here, else {MODULE}.py)")


def _source_path(config):
    given = config.getoption("--source")
    if given:
        path = Path(given).expanduser().resolve()
        if not path.is_file():
            raise pytest.UsageError(f"--source {given}: no such file")
        return path
    for name in DEFAULT_SOURCES:
        if (HERE / name).is_file():
            return HERE / name
    raise pytest.UsageError(f"found neither {' nor '.join(DEFAULT_SOURCES)} in {HERE}; use --source FILE")


def pytest_configure(config):
    from notebook_loader import LoadError, load

    os.environ.setdefault("MPLBACKEND", "Agg")  # a plot in your code must not open a window
    path = _source_path(config)
    try:
        submission = load(path)
    except LoadError as error:
        raise pytest.UsageError(str(error)) from None
    module = types.ModuleType(MODULE)
    module.__file__ = str(path)
    errors = []
    for chunk in submission.chunks:
        try:
            exec(compile(chunk["source"], chunk["label"], "exec"), module.__dict__)
        except Exception as error:  # keep going: the other cells may define what a task needs
            line = getattr(error, "lineno", None)
            where = f", line {line}" if isinstance(error, SyntaxError) and line else ""
            errors.append(f"{chunk['label']}{where} raised {type(error).__name__}: {error}")
    sys.modules[MODULE] = module
    _loaded.update(path=path, errors=errors, notes=submission.skipped)


def pytest_report_header(config):
    return [f"checking the functions defined in {_loaded['path'].name}"] + [f"  note: {n}" for n in _loaded["notes"]]


def pytest_terminal_summary(terminalreporter):
    if _loaded.get("errors"):
        terminalreporter.section(f"code in {_loaded['path'].name} that failed to run", sep="-")
        for error in _loaded["errors"]:
            terminalreporter.line(error)


# Which task each function of the assignment belongs to (the grader's rubric says the same).
TASK_OF = {}  # {function or method: task}, written in by the build


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(NotImplementedError):
        task = item.module.__name__.removeprefix("test_")
        raised_in = call.excinfo.traceback[-1].name  # the function that still raises it
        helper_task = TASK_OF.get(raised_in, task)
        if helper_task != task:  # this task's function is written, but it calls another task's that is not
            report.longrepr = (
                f"Task {task} calls {raised_in}, of task {helper_task}, which is not written yet (it still raises "
                f"NotImplementedError). Write {raised_in} first (pytest -k {helper_task} checks it), then run "
                f"pytest -k {task} again. (The grader grades task {task} with its own stand-in for "
                f"{raised_in}, so {task}'s points do not depend on it.)"
            )
            return
        report.longrepr = (
            f"Task {task} is not written yet: its function still raises NotImplementedError.\n"
            f"Fill it in, in {_loaded['path'].name}, where it says # YOUR CODE HERE: delete the line "
            f"raise NotImplementedError(...), write the body, then run pytest -k {task} again."
        )
