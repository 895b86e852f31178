"""The grading threads of a class run: what they may import is imported before any of them starts, and a watchdog
ends a run that stops making progress. A class run always ends (docs/threat-model.md, invariant 3).

Why nothing is imported once the threads run: on Python 3.10 and 3.11 the cyclic garbage collector runs at any
allocation, in whatever the thread was doing, and one of the callbacks it may run (importlib's, dropping a
module's import lock) waits for the interpreter's import lock. A class run on 3.11.7 was seen to hang for good
there: its main thread in that callback, its grading threads alive (CPython's gh-106883 is of this family; 3.12
runs the collector only between bytecodes, gh-97922). With every module a thread may need already imported, no
thread holds or waits for an import lock while the others run. ``import_ahead`` imports them: the modules of the
grader that are loaded (its core, intake and sandbox, and the unit's package), every module those import inside a
function (but jsonschema's, which takes seconds, only where a submission may hold a notebook: NOTEBOOKS_ONLY), and
every text codec, since a submission's coding line may name any of them, and the modules torch itself imports at
the first call of a check of its own (TORCH_LAZY).
tests/ways_in/test_class_run_ends.py lists the modules imported while grading threads run, over a class of every kind of
submission, and finds none.

Why a watchdog: a thread that never returns (a grader fault, such as a deadlock) would hold the run forever. If no
submission finishes for ``stall_seconds`` (Grader.stall_seconds: well past what one submission may take), each
submission then in progress is given a grader fault's row with an incident id, its thread is abandoned (a daemon,
it keeps no process alive) and a fresh one takes its place; if the next period passes without progress too, every
submission left gets that row, and the run ends. A last resort the watchdog cannot be stopped by: where the process
makes no progress for three periods (its main thread itself stuck), faulthandler writes every thread's stack to
stderr and ends the process, and the next run of the same command resumes it.
"""

import ast
import collections
import encodings
import faulthandler
import importlib
import importlib.util
import os
import pkgutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from autograder.core import parsing
from autograder.intake.load import without_iri_grammars

_SCANNED = ("autograder.core", "autograder.intake", "autograder.sandbox")
_done = set()  # modules whose imports were made already, in this process
_lock = threading.Lock()

POLL_SECONDS = 1.0  # how often the watchdog looks, in real time
HARD_STOP_PERIODS = 3  # the last resort ends the process after this many periods without progress


def _imports_in(module):
    """The absolute names of the modules and names ``module``'s source imports, at any depth: (module, names)."""
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return []
    try:
        tree = parsing.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            try:
                name = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else node.module
            except (ImportError, ValueError):
                continue
            found.append((name, tuple(alias.name for alias in node.names if alias.name != "*")))
    return found


def _load(name, names=()):
    """Import ``name`` and those of ``names`` that are its submodules; what cannot be imported is left (the
    thread that needs it would fail the same way, and its own code says what then)."""
    try:
        module = importlib.import_module(name)
    except Exception:  # noqa: BLE001  (an optional module: seccomp or pyseccomp, zmq without nbgrader)
        return
    for part in names:
        if not hasattr(module, part):
            try:
                importlib.import_module(f"{name}.{part}")
            except Exception:  # noqa: BLE001  (a name the module defines only later, or not on this system)
                pass


def _codecs():
    """Every text codec of the standard library (a coding line or a notebook may name any: latin-1, cp1252,
    shift_jis, utf-16...); those of other systems (mbcs on Windows) are left."""
    for found in pkgutil.iter_modules(encodings.__path__):
        _load(f"encodings.{found.name}")


# Imported ahead only where a submission may hold a notebook: jsonschema, which it brings, takes seconds to import
# (its format checker builds a grammar), and the loader needs it only to word what is wrong with a notebook that
# nbformat's schema refuses.
NOTEBOOKS_ONLY = frozenset({"nbformat.validator"})
_deferred = set()  # of NOTEBOOKS_ONLY, those left by an earlier call
# torch's own lazy imports that a grading thread reaches: its functions written in Python check their arguments with
# torch._check, which imports symbolic_shapes (and sympy with it, 0.4 s) at its first call, as torch.unravel_index
# does when a result is wrong (compare.first_wrong). No grader's start imports it any longer (core/behaviour.py).
TORCH_LAZY = ("torch.fx.experimental.symbolic_shapes",)


def import_ahead(*packages, modules=(), notebooks=True):
    """Import, now, every module a grading thread may import: see the module's docstring. ``packages`` are
    other module prefixes whose loaded modules are scanned too (the unit's package); ``modules`` are modules
    whose functions the threads run (a results folder's writer); ``notebooks``: whether a submission may hold
    a notebook (may_hold_notebooks), else NOTEBOOKS_ONLY is left. Each module is scanned once per process."""
    prefixes = tuple(_SCANNED) + tuple(packages)
    with _lock:
        if "codecs" not in _done:
            _codecs()
            _done.add("codecs")
        if "torch's lazy imports" not in _done:
            for name in TORCH_LAZY:
                _load(name)
            _done.add("torch's lazy imports")
        if notebooks:
            without_iri_grammars()  # jsonschema's import without seconds of grammars nbformat's schema never uses
            for name in sorted(_deferred):
                _load(name)
            _deferred.clear()
        queue = [module for module in modules if module is not None]
        while True:
            queue += [module for name, module in list(sys.modules.items())
                      if module is not None and name not in _done and name.startswith(prefixes)]
            queue = [module for module in queue if module.__name__ not in _done]
            if not queue:
                return
            module = queue.pop()
            _done.add(module.__name__)
            for name, names in _imports_in(module):
                if name in NOTEBOOKS_ONLY and not notebooks and name not in sys.modules:
                    _deferred.add(name)
                else:
                    _load(name, names)


def may_hold_notebooks(paths, most=10_000):
    """Whether any of ``paths`` is, or holds within three folders, a file named ``*.ipynb``: names are read,
    links never followed, nothing opened; past ``most`` entries the answer is yes."""
    seen = 0
    for path in map(Path, paths):
        if path.name.endswith(".ipynb"):
            return True
        if path.is_symlink() or not path.is_dir():
            continue
        depth = len(path.parts)
        for folder, subfolders, files in os.walk(path, followlinks=False):
            seen += len(subfolders) + len(files)
            if seen > most or any(name.endswith(".ipynb") for name in files + subfolders):
                return True
            if len(Path(folder).parts) - depth >= 3:
                subfolders.clear()
    return False


class Stalled(Exception):
    """No submission finished for the watchdog's period: what the instructor's log says, with every thread's stack."""


def _stacks():
    """Every thread's stack, as faulthandler writes it (without the interpreter's locks that sys._current_frames
    takes: gh-106883)."""
    try:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as file:
            faulthandler.dump_traceback(file, all_threads=True)
            file.seek(0)
            return file.read()
    except Exception as error:  # noqa: BLE001  (the stacks only help the log)
        return f"(the threads' stacks could not be written: {error!r})"


def run(count, grade, report, *, jobs, stall_seconds, failed, stuck, clock=time.monotonic):
    """Call ``grade(index)`` for each index in range(``count``), ``jobs`` at a time, each on a daemon thread;
    ``report(index, result)`` as each ends, from its thread. Returns the results in order.

    ``failed(index, error)`` is the result where ``grade`` raised; ``stuck(index, error)`` where the watchdog gave
    up on it (``error``: a Stalled naming the period, with every thread's stack). A thread the watchdog gave up on
    that returns later changes nothing. ``clock`` tells the watchdog the time (a test's clock, to stall at will);
    the waits between its looks are real time.
    """
    results = [None] * count
    queue = collections.deque(range(count))
    state = threading.Condition()
    running, settled = set(), set()  # being graded; given a result (reported, or being reported)
    # last: when a thread last finished a submission (the watchdog's own rows are no progress); graded: how many
    progress = {"last": clock(), "graded": 0, "reported": 0, "error": None}

    def finish(index, result, graded):
        results[index] = result
        try:
            if report is not None:
                report(index, result)
        except BaseException as error:  # noqa: BLE001  (the caller's, raised again once the run has ended)
            progress["error"] = progress["error"] or error
        with state:
            progress["reported"] += 1
            if graded:
                progress["graded"] += 1
                progress["last"] = clock()
            state.notify_all()

    def worker():
        while True:
            with state:
                if not queue:
                    return
                index = queue.popleft()
                running.add(index)
            try:
                result = grade(index)
            except BaseException as error:  # noqa: BLE001  (grade() never raises; if it did, the row stays)
                result = failed(index, error)
            with state:
                if index in settled:
                    return  # the watchdog gave up on it, and another thread took this one's place
                settled.add(index)
                running.discard(index)
            finish(index, result, graded=True)

    def start():
        threading.Thread(target=worker, name="grading", daemon=True).start()

    hard_stop = _HardStop(HARD_STOP_PERIODS * stall_seconds)
    try:
        for _ in range(min(max(1, jobs), count)):
            start()
        periods_without_progress, seen = 0, 0
        while True:
            with state:
                if progress["reported"] == count:
                    break
                state.wait(POLL_SECONDS)
                if progress["graded"] != seen:
                    seen, periods_without_progress = progress["graded"], 0
                    hard_stop.arm()
                if progress["reported"] == count or clock() - progress["last"] < stall_seconds:
                    continue
                periods_without_progress += 1
                given_up = sorted(running - settled)
                if periods_without_progress > 1:  # the threads that took their places made no progress either
                    given_up += list(queue)
                    queue.clear()
                settled.update(given_up)
                running.difference_update(given_up)
                progress["last"] = clock()
            error = Stalled(f"no submission finished for {stall_seconds:g} s"
                            + (" twice in a row: every submission left is given up" if periods_without_progress > 1
                               else ": the submissions in progress are given up") + ". Every thread's stack:\n"
                            + _stacks())
            for index in given_up:
                finish(index, stuck(index, error), graded=False)
            if periods_without_progress == 1:
                for _ in given_up:
                    start()
            hard_stop.arm()
    finally:
        hard_stop.cancel()
    if progress["error"] is not None:
        raise progress["error"]
    return results


class _HardStop:
    """The last resort: faulthandler's own thread, which needs no lock of the interpreter's, writes every thread's
    stack and ends the process ``seconds`` after the last arm(). Where stderr is no file (a test's capture), none."""

    def __init__(self, seconds):
        self.seconds = max(float(seconds), 60.0)
        self.stream = sys.__stderr__
        self.arm()

    def arm(self):
        if self.stream is None:
            return
        try:
            faulthandler.dump_traceback_later(self.seconds, exit=True, file=self.stream)
        except (AttributeError, ValueError, OSError, RuntimeError):
            self.stream = None

    def cancel(self):
        faulthandler.cancel_dump_traceback_later()
