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

Before either, nbgrader runs the whole notebook in a kernel, with the instructor's rights, for the
pictures and printed output of the feedback. ``BoundedExecute`` runs it in place of nbgrader's
``Execute`` so that nothing a notebook does there can cost a submission its row or hold up the class:
a time budget for the whole notebook, a kernel that dies or hangs ends the kernel's run and not the
submission's, outputs capped as they arrive, the worker's memory limit on the kernel, and whatever the
kernel leaves running killed when it is done.
"""

import contextlib
import ctypes
import io
import json
import logging
import math
import os
import resource
import signal
import stat
import sys
import tempfile
import time
import warnings
from pathlib import Path
# torch and the job's side (sandbox/worker.py) are imported where a check runs, not here: nbgrader loads this module
# with the course's config for every command (generate_assignment, generate_feedback, ...), and they would cost each
# of those commands about 1.3 s of CPU for nothing.
from autograder.sandbox import limits
from autograder.core import units

try:  # the kit is usable without nbgrader; only the course needs it
    from nbgrader.preprocessors import Execute as _Execute, NbGraderPreprocessor as _Preprocessor
    from traitlets import Float, Integer, List, Unicode
except ImportError:
    _Execute = _Preprocessor = object

    def Integer(default, **_):  # noqa: N802  (traitlets' names: without them, plain class attributes)
        return default

    Float = Unicode = Integer

_built = {}


def _cases_and_plan(unit):
    if unit.name not in _built:
        from autograder.core.cases import build_cases
        from autograder.sandbox.server import serialize_plan

        cases = build_cases(unit)
        _built[unit.name] = cases, serialize_plan(cases, unit)
    return _built[unit.name]


def _job_code(unit):
    """The unit's job.py as the worker runs it beside the student's code (a module of its own)."""
    from autograder.sandbox import worker

    return worker._unit_code({"unit_code": unit.job_source})


def run_test(test_id, namespace):
    """Score one rubric test (of whichever unit has it: test ids are unique across units) on the functions in
    ``namespace``; returns the TestResult."""
    import torch

    from autograder.core.grade import score_tests
    from autograder.sandbox import worker

    unit = units.of_test(test_id)
    rubric = unit.rubric
    test = rubric.TEST_BY_ID[test_id]
    # The code this unit borrows from other units, as the grader's jobs run it: after the notebook's own cells, so
    # that the other units' references are what the student's functions call (units.Unit.borrowed).
    for chunk in unit.given_chunks:
        exec(compile(chunk["source"], f"<{chunk['label']}>", "exec"), namespace)
    if test.task == rubric.TIMING.name:
        return _time_in_kernel(unit, test, namespace)
    cases, plan = _cases_and_plan(unit)
    # A fresh copy of the inputs for every call: the student's code may change a tensor in place.
    probes = torch.load(io.BytesIO(plan.data), weights_only=True)
    # The task's tests up to this one, in the rubric's order: a test may need another (rubric.Test.needs), and a
    # mistake charged in an earlier test is not charged again here (grade.score_tests).
    task_tests = rubric.tests_of(test.task)
    scored = list(task_tests[:task_tests.index(test) + 1])
    probes = [probe for task in probes["tasks"] if task["task"] == test.task for probe in task["probes"]
              if any(probe["id"].startswith(one.id + "/") for one in scored)]
    # nbgrader gives a cell 0 points for any text on stderr: keep the student's warnings out of it.
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        job = _job_code(unit)
        results = {probe["id"]: worker.run_probe(namespace, probe, [], job) for probe in probes}
    return score_tests(unit, scored, cases[test.task], results)[-1]


def _time_in_kernel(unit, test, namespace):
    """The timing tier without the kit's config: the same gate, static check and bands, timed in the kernel.

    Its clock is the kernel's, which the notebook's code could replace; TrustedGrades times from outside.
    """
    import statistics
    import time

    from autograder.core.loop_check import _sources_of, findings
    from autograder.core.grade import TestResult
    from autograder.core.timing import fraction_for, helper_stand_ins, share_words, value_tests, withheld_words
    from autograder.sandbox import worker

    rubric, reference = unit.rubric, unit.reference
    path = next(path for path in rubric.TIMED_PATHS if path.test == test.id)
    failing = [other.id for other in value_tests(rubric, path.requires) if not run_test(other.id, namespace).passed]
    if failing:
        return TestResult(test.id, test.task, 0, test.points, withheld_words(rubric, path, test, failing))
    # A helper that is wrong, blank or missing is charged in its own task: the path runs with its stand-in, as the
    # kit's timing tier runs it.
    helpers = value_tests(rubric, tuple(task for task, _, _ in path.helpers))
    passed = {other.id for other in helpers if run_test(other.id, namespace).passed}
    stand_ins, _ = helper_stand_ins(rubric, path, passed)
    # The notebook's cells as they ran (IPython keeps them), so that helpers and bindings are followed too.
    sources = _sources_of(namespace[path.functions[0]]) if path.functions[0] in namespace else None
    found = findings(sources, list(path.functions)) if sources else [
        ("refused", f"{path.functions[0]}: its source is not found")]
    refused = [text for kind, text in found if kind == "refused"]
    if refused:
        return TestResult(test.id, test.task, 0, test.points,
                          f"No points: the static check cannot read how the score path is made ({refused[0]}).")
    # Every path is counted, loops seen or not, as the kit's own timing tier does: a loop no text shows runs too.
    grew = _loops_over_positions(unit, path, namespace, stand_ins)
    if grew:
        seen = found[0][1] if found else "the static check saw none: it runs where no loop is written"
        return TestResult(test.id, test.task, 0, test.points, f"No points: a Python loop over positions ({seen}). {grew}")
    sizes = rubric.TIMING_SIZES["cpu"]
    spec = {"path": path.name, "device": "cpu", "dtype": "float32", "seed": rubric.SEED, **dict(path.settings),
            **{key: sizes[key] for key in ("batch", "heads", "length", "head_dim")}, "stand_ins": stand_ins}
    job = _job_code(unit)
    inputs = worker._timing_inputs(job, spec, rubric.SEED)
    mine = lambda path=worker._score_path(namespace, spec, job): path(*inputs)  # noqa: E731
    theirs = lambda path=worker._score_path(vars(reference), spec, job): path(*inputs)  # noqa: E731
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


def _loops_over_positions(unit, path, namespace, stand_ins=None):
    """The count of the timing tier (loop_check.py, ``counted``), in the kernel: the path run at each of the
    timing tier's ``count_lengths`` (fixed ones, the timed one, some drawn for this count), the lines of the
    notebook's own code and the tensor operations counted. Returns "" when the count does not change with the
    length, else what the counts were."""
    import random

    from autograder.core import loop_check
    from autograder.core.timing import count_lengths, count_spec
    from autograder.sandbox import worker

    rubric, job = unit.rubric, _job_code(unit)
    lengths = count_lengths(rubric, "cpu", random.SystemRandom(), path.count_from)
    spec = count_spec(rubric, path, stand_ins, "cpu", lengths)
    score_path = worker._score_path(namespace, spec, job)
    counts = []
    # Once, set aside, at a length counted nowhere else: each counted call is then the first at its length.
    aside = next(length for length in range(lengths[0] + 1, lengths[-1] + 2) if length not in lengths)
    score_path(*worker._timing_inputs(job, {**spec, "length": aside}, rubric.SEED))
    for number, length in enumerate(lengths):
        inputs = worker._timing_inputs(job, {**spec, "length": length}, rubric.SEED + number)
        _, count, intact = loop_check.count_in_process(lambda: score_path(*inputs), loop_check.student_code)
        if not intact:
            return "The count of the path's steps was interfered with (its trace function changed)."
        counts.append((length, count))
        if loop_check.count_changes(counts):
            return (f"Counted in one call at each sequence length: {loop_check.counts_words(counts)}; the count "
                    "changes with the length.")
    return ""


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


def _unit_of(nb, graded):
    """The unit an nbgrader assignment grades: the one it is named after (each unit is an assignment of the same
    name), or, for an assignment the instructor renamed, the one whose tests its grade cells are (nbgrader puts
    the source's grade cells back before grading, so a student cannot change which). Never a guess: a notebook
    that names no unit's tests, or tests of two, stops with what to do."""
    named = [name for name in (graded.get("assignment"), graded.get("notebook")) if name in units.names()]
    if named:
        return units.get(named[0])
    ids = {((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id") for cell in nb.cells}
    found = {units.of_test(test_id).name for test_id in ids if units.test_named(test_id) is not None}
    if len(found) == 1:
        return units.get(found.pop())
    raise ValueError(f"The kit cannot tell which unit the assignment {graded.get('assignment')!r} grades: its grade "
                     f"cells are tests of {' and '.join(sorted(found)) or 'no unit'}. Name the assignment after its "
                     f"unit ({', '.join(units.names())}), and keep the grade cells the kit's release made.")


def _linked_submission(resources):
    """Why the submitted notebook nbgrader read is not the student's own file (a link), or "".

    nbgrader opens ``submitted/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb`` following links: a student who hands in a
    symbolic link to the instructor's source notebook (or a hard link to it) would be graded on the answers.
    The file and the two folders above it are the student's; none of them may be a link.
    """
    folder = (resources.get("metadata") or {}).get("path")
    notebook = (resources.get("nbgrader") or {}).get("notebook")
    if not folder or not notebook:
        return ""
    path = Path(folder) / f"{notebook}.ipynb"
    for part in (path, path.parent, path.parent.parent):
        try:
            info = os.lstat(part)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            return f"{part.name} is a symbolic link; hand in the notebook itself."
        if part == path and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
            return f"{part.name} is not a plain file of its own (a hard link or a special file); hand in the notebook itself."
    return ""


class TrustedGrades(_Preprocessor):
    """An autograde preprocessor: each graded cell's output is the kit's verdict, reached out of the kernel."""

    wall_seconds = Float(limits.WALL_SECONDS, help="Time limit of one submission in the grader").tag(config=True)
    task_seconds = Float(limits.TASK_SECONDS, help="Time limit of one task in the grader").tag(config=True)
    course_secret_file = Unicode("", help="The course secret (python -m autograder course-secret FILE): each "
                                          "student's hidden cases are then their own. Or set "
                                          "$AUTOGRADER_COURSE_SECRET_FILE.").tag(config=True)

    _graders = {}  # one per unit and nbgrader process: the hidden cases are built once for the whole class

    def preprocess(self, nb, resources):
        import nbformat

        from autograder.core.grade import Grader, grading_process_threads
        from autograder.sandbox.server import Limits

        unit = _unit_of(nb, resources.get("nbgrader") or {})
        if unit.name not in TrustedGrades._graders:
            grading_process_threads()  # nbgrader's own process: torch is the grader's alone here
            from autograder.core import seeds

            bounds = Limits(wall_seconds=self.wall_seconds, task_seconds=self.task_seconds)
            secret_file = self.course_secret_file or os.environ.get(seeds.SECRET_FILE_VARIABLE, "")
            TrustedGrades._graders[unit.name] = Grader(unit, limits=bounds,
                                                       course_secret=seeds.course_secret(secret_file or None),
                                                       secrets=[secret_file] if secret_file else [])
            # A notebook of another unit handed in here scores nothing and says so (core/recognize.py, in Grader).
            TrustedGrades._graders[unit.name].graded_as = f"this is the {unit.name} assignment"
        grader = TrustedGrades._graders[unit.name]
        linked = _linked_submission(resources)
        if linked:  # nbgrader has read it already, following the link: its content is not the student's
            from autograder.core.grade import _all_failed

            result = _all_failed(unit, "submission", "", f"Could not read the submission: {linked}")
        else:
            with tempfile.TemporaryDirectory(prefix="trusted-grades-") as folder:
                path = Path(folder) / f"{unit.module_name}.ipynb"
                path.write_text(nbformat.writes(nb), encoding="utf-8")
                student = (resources.get("nbgrader") or {}).get("student")
                result = grader.grade(path, student=f"nbgrader:{student}" if student else None)
        by_id = {test.id: test for test in result.tests}
        from autograder.core import voice

        for cell in nb.cells:
            grade_id = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
            if cell.cell_type != "code" or grade_id not in by_id:
                continue
            test = by_id[grade_id]
            said = voice.verdict_text(test, unit.rubric.TEST_BY_ID.get(test.id))  # as the feedback pages say it
            if test.score > 0:
                text = f"{said}\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
                if not test.passed:  # part of the points: nbgrader reads a number as partial credit
                    cell.outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": f"{test.score:g}"},
                                                               execution_count=None))
            else:
                message = said
                cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue=message,
                                                       traceback=[f"AssertionError: {message}"])]
        notes = "".join(f"\n  {note}" for note in result.notes + ([result.cases_from] if result.cases_from else []))
        self.log.info("The kit's grader, out of the kernel: %g of %g points%s", result.score, result.max_score, notes)
        return nb, resources


# The kernel's run under `nbgrader autograde`: bounded, and never the end of a submission.

CELL_TEXT_CHARACTERS = limits.OUTPUT_BYTES  # printed text one cell may add to the notebook, as the CLI keeps
CELL_OUTPUT_CHARACTERS = 2 * 1024**2  # everything one cell may add; the course's largest picture is 260 KB


def _runs(cell):
    return cell.cell_type == "code" and bool(cell.source.strip())


def _size(msg_type, content):
    """How many characters an output message would add to the notebook."""
    if msg_type == "stream":
        return len(content.get("text") or "")
    if msg_type == "error":
        return len(str(content.get("evalue") or "")) + sum(len(str(line)) for line in content.get("traceback") or [])
    return sum(len(value) if isinstance(value, str) else len(json.dumps(value))
               for value in (content.get("data") or {}).values())


def _note(text):
    import nbformat

    return nbformat.v4.new_output("stream", name="stdout", text=f"[grader] {text}\n")


class _StudentsDoing(logging.LoggerAdapter):
    """nbclient's log with its ERROR lines (a cell ran out of time, the kernel died) as warnings.

    They report what a student's code did, not a failure of the grading run: the submission keeps its row.
    """

    def log(self, level, msg, *args, **kwargs):
        super().log(min(level, logging.WARNING), msg, *args, **kwargs)


def _processes():
    """{pid: (state, parent pid)} of every process in /proc; empty where there is no /proc."""
    found = {}
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return found
    for entry in entries:
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            found[int(entry.name)] = (fields[0], int(fields[1]))
    return found


def _tree(roots, processes):
    """``roots`` and every process below them."""
    children = {}
    for pid, (_, parent) in processes.items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


_PR_SET_CHILD_SUBREAPER = 36


@contextlib.contextmanager
def _strays_killed(log):
    """Whatever the kernel leaves running (a detached daemon) is killed when the block ends.

    While the block runs, this process is a child subreaper (Linux): a process below it whose parent
    exits, a double-forked daemon in a session of its own included, becomes its child instead of init's.
    Its new children are then the kernel's leftovers, killed with everything below them.
    """
    me = os.getpid()
    ours = {pid for pid, (_, parent) in _processes().items() if parent == me}  # the grader's own children
    try:
        adopting = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        adopting = False
    try:
        yield
    finally:
        killed, deadline = set(), time.monotonic() + 10
        while time.monotonic() < deadline:
            processes = _processes()
            strays = {pid for pid, (state, parent) in processes.items()
                      if parent == me and pid not in ours and state not in "ZX"}
            if not strays:
                break
            for pid in _tree(strays, processes):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.05)
        for pid in killed:  # those that were our children (the others are reaped by init)
            with contextlib.suppress(OSError):
                os.waitpid(pid, os.WNOHANG)
        if adopting:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        if killed:
            log.warning("Killed %d process(es) the notebook's kernel left running", len(killed))


class BoundedExecute(_Execute):
    """nbgrader's Execute, bounded: no notebook can cost a submission its row or hold up the class.

    * A time budget for the whole notebook (``notebook_seconds``): each cell may run for what is left of it
      (and at most ``Execute.timeout``); once it is spent, the cells after are not run in the kernel.
    * A kernel that dies (``os._exit``, a crash) or does not stop when interrupted ends the kernel's run,
      not the submission's: the cells after get a note and nbgrader goes on to TrustedGrades.
    * What one cell's outputs add to the notebook is capped as they arrive, so a flood never reaches memory
      or disk: printed text to the rubric's ``OUTPUT_BYTES``, everything to ``CELL_OUTPUT_CHARACTERS``.
    * The kernel gets the worker's address-space limit, and whatever it leaves running is killed.
    """

    notebook_seconds = Integer(limits.NOTEBOOK_SECONDS, help="Seconds the whole notebook may run in the kernel; "
                               "the cells after are not run there").tag(config=True)
    kernel_memory_bytes = Integer(limits.MEMORY_BYTES, help="Address-space limit of the kernel").tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        from nbclient.client import NotebookClient

        # What nbconvert's ExecutePreprocessor.preprocess does, with the kernel's failures caught.
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        if not isinstance(self.log, _StudentsDoing):
            self.log = _StudentsDoing(self.log, {})
        self._deadline = time.monotonic() + self.notebook_seconds
        self._ran, self._text_kept, self._all_kept, self._left_out = set(), 0, 0, 0
        stopped = ""
        with _strays_killed(self.log):
            try:
                with self.setup_kernel():
                    self._limit_kernel()
                    stopped = self._run_cells(resources)
            except Exception as error:  # the kernel did not start, or did not stop cleanly
                stopped = stopped or f"the kernel failed ({error!r})"
                # Before any cell ran, no student's code was involved: the grading machine needs a look.
                (self.log.warning if self._ran else self.log.error)("The notebook's kernel failed: %r", error)
        if stopped:
            for index, cell in enumerate(self.nb.cells):
                if _runs(cell) and index not in self._ran:
                    cell.outputs = [_note(f"Not run in the kernel: {stopped}. Your grade does not depend on "
                                          "it: the grader runs your functions apart.")]
            self.log.warning("The kernel stopped early: %s; the grades come from the kit's grader all the same",
                             stopped)
        self.set_widgets_metadata()
        return self.nb, self.resources

    def _run_cells(self, resources):
        """Run the cells in order until the budget is spent or the kernel is lost; returns why it stopped."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        info = self.wait_for_reply(self.kc.kernel_info())
        if info is None:
            self._stop_kernel()
            return "the kernel did not answer"
        self.nb.metadata["language_info"] = info["content"]["language_info"]
        for index, cell in enumerate(self.nb.cells):
            if not _runs(cell):
                continue
            if time.monotonic() >= self._deadline:
                self._stop_kernel()
                return f"the notebook's time budget of {self.notebook_seconds} s ran out"
            self._ran.add(index)
            self._text_kept = self._all_kept = self._left_out = 0
            try:
                self.preprocess_cell(cell, resources, index)
            except DeadKernelError:
                cell.outputs.append(_note("The kernel died while this cell ran (os._exit(), a crash?)."))
                return "the kernel died"
            except CellTimeoutError:
                cell.outputs.append(_note("This cell ran past its time limit and the kernel did not stop when "
                                          "interrupted, so it was shut down."))
                self._stop_kernel()
                return "the kernel did not stop when interrupted"
            finally:
                self._cap_errors(cell)
                if self._left_out:
                    cell.outputs.append(_note(f"{self._left_out} more characters of output were left out: a cell "
                                              f"may print {CELL_TEXT_CHARACTERS} and add {CELL_OUTPUT_CHARACTERS} "
                                              "in all."))
            if time.monotonic() >= self._deadline:
                cell.outputs.append(_note(f"The notebook's time budget of {self.notebook_seconds} s in the kernel "
                                          "ran out while this cell ran."))
        return ""

    def _limit_kernel(self):
        pid = getattr(self.km.provisioner, "pid", None)
        if pid is None or hasattr(self.km, "memory_bytes"):  # a sandboxed kernel is limited inside its sandbox
            return
        for limit, value in ((resource.RLIMIT_AS, self.kernel_memory_bytes), (resource.RLIMIT_CORE, 0)):
            try:
                resource.prlimit(pid, limit, (value, value))
            except (OSError, ValueError) as error:
                self.log.warning("Could not limit the kernel's resources: %r", error)

    def _stop_kernel(self):
        from jupyter_core.utils import run_sync

        try:
            run_sync(self.km.shutdown_kernel)(now=True)
        except Exception as error:  # it may be gone already
            self.log.warning("Could not shut the kernel down: %r", error)

    def _get_timeout(self, cell):
        # Each cell gets what is left of the notebook's budget, and at most its own limit.
        timeout = super()._get_timeout(cell)
        left = max(1, math.ceil(self._deadline - time.monotonic()))
        return left if timeout is None else min(timeout, left)

    def output(self, outs, msg, display_id, cell_index):
        # Called for each output message as it arrives: what does not fit is never kept.
        content, msg_type = msg["content"], msg["msg_type"]
        size = _size(msg_type, content)
        room = CELL_OUTPUT_CHARACTERS - self._all_kept
        if msg_type == "stream":
            room = min(room, CELL_TEXT_CHARACTERS - self._text_kept)
        if size > room:
            if msg_type != "stream" or room <= 0:
                self._left_out += size
                return None
            self._left_out += size - room
            msg = {**msg, "content": {**content, "text": content["text"][:room]}}
            size = room
        self._all_kept += size
        if msg_type == "stream":
            self._text_kept += size
        return super().output(outs, msg, display_id, cell_index)

    def _update_display_id(self, display_id, msg):
        # A display updated in place may not grow past what one cell may add.
        if _size(msg["msg_type"], msg["content"]) <= CELL_OUTPUT_CHARACTERS:
            super()._update_display_id(display_id, msg)

    def _cap_errors(self, cell):
        # nbgrader copies the error of the kernel's reply into the cell, past output(): cap it here.
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error" and _size("error", output) > CELL_TEXT_CHARACTERS:
                output["evalue"] = str(output.get("evalue", ""))[:CELL_TEXT_CHARACTERS // 2]
                lines, room = [], CELL_TEXT_CHARACTERS // 2
                for line in output.get("traceback") or []:
                    lines.append(str(line)[:room])
                    room -= len(lines[-1])
                    if room <= 0:
                        break
                output["traceback"] = lines


class NamedContents(_Preprocessor):
    """The feedback's own contents: one line per rubric test, by name, with its points, linked to its cell.

    nbgrader's feedback page lists every graded cell as "Test cell"; this puts a markdown cell at the top
    that names each test, says what it checks and how many of its points the student got. Its text is the
    rubric's and the scores GetGrades read, nothing of the student's, so it needs no cleaning.
    """

    # nbconvert's output priority, accepted as configurable so that traitlets does not warn that this step does not
    # know it (the same as nbgrader_inert.FeedbackStep; a way in does not import another).
    if _Preprocessor is not object:
        display_data_priority = List(_Preprocessor.class_traits()["display_data_priority"].default()).tag(config=True)

    def preprocess(self, nb, resources):
        import nbformat

        rows = ["| test | what it checks | points |", "|---|---|---|"]
        for cell in nb.cells:
            grade = (cell.get("metadata") or {}).get("nbgrader") or {}
            test = units.test_named(grade.get("grade_id"))
            if test is None or not grade.get("grade"):
                continue
            score = grade.get("score")
            points = "not graded" if score is None else f"{float(score):g} of {test.points}"
            checks = test.checks.replace("|", "\\|")  # a bar would end the table's cell
            rows.append(f"| [{test.id}](#{test.id}) | {checks} | {points} |")
        if len(rows) > 2:
            heading = "## Your results, test by test\n\nEach name links to its cell below.\n\n"
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(heading + "\n".join(rows)))
        return nb, resources
