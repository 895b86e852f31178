"""Grade submissions: load, run in a child process, compare on the trusted side, score.

``Grader`` builds the hidden cases and their expected outputs once, then
grades any number of submissions with them. Every submission gets a Result
with a row for each rubric test, whatever the submission does.
"""

import dataclasses
import inspect
import os
import re
import sys
import threading
import time
import traceback
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from secrets import token_hex

from autograder.sandbox import cgroups, limits as _limits, users
from autograder.core import diagnosis, form_slips, mutants, parsing, recognize, seeds, threads, timing, units, voice
from autograder.intake.inert import inert
from autograder.core.cases import build_cases, hints_of, lesson_of, likely
from autograder.core.cases import Verdict
from autograder.intake.load import LoadError, load, submission_name
from autograder.sandbox.server import (BUBBLEWRAP, JOB_USERS, KIT_FOLDERS, ForkServer, Limits, Plan, SandboxMissing, ServerFailed,
                                resolve_sandbox, run_submission, serialize_plan, visible_to_jobs)

CASE_SETS_KEPT = 64  # hidden case sets kept built (one per seed: per student with a course secret)
CASES_AHEAD = 4  # with a course secret, students whose cases are built ahead of their grading (grade_many)
MACHINE_ATTEMPTS = 3  # a job that the machine could not start is tried this many times before the row says so
_clock = time.monotonic  # the class run's watchdog's clock (a test's clock stalls a run at will)


@dataclass
class TestResult:
    id: str
    task: str
    score: float
    max_score: float
    output: str  # everything the test says, as the grader renders it: the student's text in it only quoted
    grader_fault: bool = False  # the grader could not check an output: not the student's doing
    # The parts of ``output``, typed (autograder/core/voice.py): what the grader decided, its diagnosis, and the
    # student's exception. Readers take the grader's parts from these, never from the text.
    kind: str = ""  # voice.PASSED, WRONG, RAISED, ...; "" for a row built without a kind
    diagnosis: voice.Diagnosis = field(default_factory=voice.Diagnosis)
    error: voice.StudentError = None

    @property
    def passed(self):
        return self.score >= self.max_score


@dataclass
class Result:
    name: str
    path: str
    tests: list
    notes: list = field(default_factory=list)
    sandbox: str = ""  # how the code was contained: the sandbox tier and its limits
    grader_fault: bool = False  # not graded through a fault of the grader's, not of the submission
    seed: int = None  # the seed of the hidden cases it was graded with (see autograder/core/seeds.py)
    cases_from: str = ""  # where that seed came from, and how to grade the submission again with it (instructor's)
    cases_for_student: str = ""  # what the student is told of the hidden cases (seeds.for_student): no seed
    unit: str = ""  # the unit of study it was graded as (autograder/units/)
    # (incident id, record) of each grader fault met: the record (the exception and its traceback, which may
    # quote a hidden case) is for the instructor's log only; the student's text holds the id alone.
    incidents: list = field(default_factory=list)

    @property
    def score(self):
        return sum(test.score for test in self.tests)

    @property
    def max_score(self):
        return sum(test.max_score for test in self.tests)

    def task_score(self, task):
        return sum(test.score for test in self.tests if test.task == task)

    def to_gradescope(self):
        """The Gradescope results.json schema (score, max_score, tests with name/score/max_score/status/output)."""
        return {
            "score": self.score,
            "max_score": self.max_score,
            "output": "\n".join(self.notes + ([self.cases_for_student] if self.cases_for_student else [])),
            "tests": [
                {"name": test.id, "number": test.task, "score": test.score, "max_score": test.max_score,
                 "status": "passed" if test.passed else "failed", "output": test.output}
                for test in self.tests
            ],
        }


_FAULT_LOCK = threading.Lock()
TRY_AGAIN = "grade it again, and if it fails again, tell your instructor this incident id"


def grader_fault(name, what, error=None):
    """A fault of the grader's own while grading ``name``: (the plain sentence the student reads, with an
    incident id; (the id, the record for the instructor's log)).

    The record (``what``, the exception and its traceback, which may quote a hidden case or the reference) is
    written to stderr at once, the instructor's log on every way in, and kept in ``Result.incidents`` for a
    results folder's log (batch.FAULT_LOG); it never goes into a test's output or a note.
    """
    incident = token_hex(4)
    detail = ""
    if error is not None:
        with parsing.alone():  # the traceback module parses each line it underlines: see core/parsing.py
            detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    record = inert(f"GRADER FAULT, incident {incident}, while grading {name}: {what}\n{detail}".rstrip())
    with _FAULT_LOCK:
        print(record, file=sys.stderr, flush=True)
    return f"{what}, through no fault of the submission (incident {incident}): {TRY_AGAIN}.", (incident, record)


def _fault_result(unit, name, path, what, error=None):
    """Every test at 0 through a fault of the grader's: the student reads ``what`` and an incident id."""
    message, incident = grader_fault(name, what, error)
    result = _all_failed(unit, name, path, message, kind=voice.GRADER_FAULT)
    result.grader_fault, result.incidents = True, [incident]
    return result


def _all_failed(unit, name, path, message, notes=(), kind=voice.NOT_GRADED):
    tests = [TestResult(test.id, test.task, 0, test.points, message, kind=kind) for test in unit.rubric.TESTS]
    return Result(name, str(path), tests, list(notes) + [message], unit=unit.name)


def _located(where, labels):
    """(the label of a cell or file, its line number, the line's text) of a worker's "LABEL, line N: TEXT", or
    None. The label is matched against the submission's own, since a cell's label may hold ", line" itself."""
    for label in labels:
        head = f"{label}, line "
        if where.startswith(head):
            number, _, text = where[len(head):].partition(": ")
            if number.isdigit():
                return label, number, text.strip()
    return None


def source_lines(chunks):
    """``where`` -> (label, number, the line as the grader read it from ``chunks``), or None: the line an
    exception came from, by the label and number a job reports, but its text from the submission itself (a job
    may report any text)."""
    lines = {}
    for chunk in chunks:  # the pieces of a .py file that did not compile share its label and its numbering
        kept = lines.setdefault(chunk["label"], [])
        for number, line in enumerate(chunk["source"].split("\n")):
            kept += [""] * (number + 1 - len(kept))
            if line.strip() and not kept[number].strip():
                kept[number] = line
    labels = list(lines)
    # The classes the submission's text names: an exception of one of these quotes no hidden case by its name.
    named = set(re.findall(r"\bclass\s+([A-Za-z_]\w*)", "\n".join(chunk["source"] for chunk in chunks)))

    def find(where):
        found = _located(where or "", labels)
        if found is None:
            return None
        label, number, _ = found
        text = lines[label][int(number) - 1].strip() if 0 < int(number) <= len(lines[label]) else ""
        return label, number, text
    find.classes = named
    return find



def _steps(outcome):
    """An outcome and the steps of a module's outcome (its __init__, its forward): where a name may be missing or
    an error raised."""
    return [outcome] + [value for value in outcome.values() if isinstance(value, dict)]


def _error_in(outcome):
    """The first error an outcome's steps raised, or None."""
    return next((step["error"] for step in _steps(outcome) if isinstance(step.get("error"), dict)), None)


def _stubbed(outcome):
    """Whether an outcome raised NotImplementedError: at its top level or in a step of a module's, or in every call
    of a sequence (a behaviour contract's calls one after another)."""
    if not isinstance(outcome, dict):
        return False
    calls = outcome.get("calls")
    if isinstance(calls, list):
        return bool(calls) and all(_stubbed(call) for call in calls)
    return "NotImplementedError" in ((_error_in(outcome) or {}).get("mro") or ())


def _student_error(outcome, case, find):
    """The StudentError of an outcome that raised (at its top level, or in a step of a module's: its __init__,
    its forward), or None."""
    error = _error_in(outcome) if isinstance(outcome, dict) else None
    if error is None:
        return None
    found = find(error.get("where")) if find is not None else None
    line = f"{found[0]}, line {found[1]}: {found[2]}" if found and found[2] else (
        f"{found[0]}, line {found[1]}" if found else "")
    kind = str(error.get("type", ""))
    known = kind if kind in voice.KNOWN_CLASSES or kind in getattr(find, "classes", ()) else ""
    return voice.StudentError(kind, str(error.get("message", "")), line, lesson_of(error), known)


def _names_in(probe):
    """Every function or class name a probe calls (the names a job may report missing)."""
    if isinstance(probe, dict):
        return {value for key, value in probe.items() if key == "name" and isinstance(value, str)} | {
            name for value in probe.values() for name in _names_in(value)}
    if isinstance(probe, (list, tuple)):
        return {name for value in probe for name in _names_in(value)}
    return set()


def _named_as_probed(results, cases):
    """``results`` where an outcome that says a name is missing names one its probe calls: any other name a job
    reports is the student's text, which could hold anything (a hidden value spelt as a name); it is replaced by
    the probe's own name."""
    fixed = dict(results)
    for case in cases:
        outcome = fixed.get(case.id)
        if isinstance(outcome, dict) and "missing" in outcome and outcome["missing"] not in _names_in(case.probe):
            fixed[case.id] = {"missing": str(case.probe.get("name", "your function"))}
    return fixed


def _kind_of(outcome):
    """What the grader decided of a case that failed, from what came back: it did not run, its function is missing
    or not written, it raised, or it returned a wrong output."""
    if outcome is None:
        return voice.NOT_RUN
    if any("missing" in step for step in _steps(outcome)):
        return voice.MISSING
    error = _error_in(outcome)
    if error is not None:
        return voice.NOT_IMPLEMENTED if "NotImplementedError" in error.get("mro", ()) else voice.RAISED
    return voice.WRONG


def _load_notes(submission, loaded):
    """What did not load, each said once, before what was left out: where a student finds it, and the line itself
    on a line of its own (never inside parentheses, which a line of code may leave open), as the grader read it
    from the submission. The error's message is the student's: quoted, on one line (voice.quote)."""
    notes, find = [], source_lines(submission.chunks)
    for error in (loaded or {}).get("errors", []):
        chunk, where = error["chunk"], error["where"] or ""
        found = find(where)
        line = f"\n    {found[2]}" if found and found[2] else ""
        if found and found[0] == chunk:
            at = f"{chunk}, line {found[1]}"
        elif found:  # raised in a function of another cell that this one called
            at = f"{chunk}, in {found[0]}, line {found[1]}"
        else:
            at = chunk
        message = f": {voice.quote(error['message'])}" if error["message"] else ""
        kind = voice.class_name(error["type"], getattr(find, "classes", ()))
        if "SyntaxError" in error["mro"] and found and found[0] == chunk:
            what = "of that cell" if ", code cell " in chunk else "of that statement"  # a .py file: cut at statements
            notes.append(f"{at} is not valid Python ({kind}{message}), so none {what} ran:{line}\n"
                         "What it defines is missing, and graded as not written; fix that line and run the cell "
                         "again.")
        elif "SystemExit" in error["mro"]:
            notes.append(f"{at} called sys.exit() while loading:{line or ' (no line of yours)'}\n"
                         "Grading went on with what was defined before it. Remove that call.")
        else:
            notes.append(f"{at} raised {kind}{message} while loading:{line or ' (no line of yours)'}\n"
                         "What it would have defined from there on is missing.")
    return notes + list(submission.skipped)


def score_tests(unit, tests, cases, results, *, failure=None, notes=(), incidents=None, lines=None, verdicts=None):
    """Score rubric ``tests`` from the outputs of their ``cases``: all the points when every case passes.

    ``results`` maps case id to what the student's code returned (as the worker
    encodes it); ``failure`` says why a task has no results at all (it hung).
    A test with ``needs`` gives its points only when the test it needs (of the same task, scored first)
    passed or failed with a named mistake: see units.Test. ``unit`` is the unit the tests are of.
    Where no known mistake explains a failure, the feedback adds under which condition the task's cases fail
    (diagnosis.condition, over every case of the task that ran, probes included: they are worth nothing).
    An output the grader could not check is a grader fault: its test says so with an incident id, and the
    fault's record is appended to ``incidents`` (see grader_fault).
    Each row carries its parts typed (voice.py): its kind, its Diagnosis, and the StudentError of a call that
    raised, whose line is read from the submission by ``lines`` (source_lines) where it is given.
    ``verdicts``, where given, is a dict this fills with {case id: (its Verdict or None, a fault's message)} for
    every case it checked: a caller that reads the same outcomes again (the error model) checks none twice.
    """
    graded, works, charged = [], {}, {}  # charged: {named mistake: the test that took its points}
    results = _named_as_probed(results, cases)
    verdicts = {} if verdicts is None else verdicts

    def verdict_of(case):
        if case.id not in verdicts:
            try:
                verdicts[case.id] = case.check(results.get(case.id)), ""
            except Exception as error:  # the case's label is a hidden case: in the instructor's log only
                message, incident = grader_fault(f"the case {case.label}",
                                                 "The grader could not check an output of this test", error)
                if incidents is not None:
                    incidents.append(incident)
                verdicts[case.id] = None, message
        return verdicts[case.id]

    def observed(test_id=None):
        found = []
        for case in cases:
            if case.features and results.get(case.id) is not None and test_id in (None, case.test):
                verdict, _ = verdict_of(case)
                if verdict is not None:
                    found.append((case.features, not verdict.passed, verdict.raised))
        return found

    def when(test_id):
        """Under which condition the cases fail: among the test's own cases first, then the task's."""
        return diagnosis.condition(observed(test_id), observed(), hints=hints_of(unit, tests[0].task))

    def named_throughout(test_id, verdict):
        """The verdict naming a mistake that every failing case of the test that ran shows (of those that explain
        this case's output, the first), or None: a mistake is named only then."""
        shown = [explanation for explanation, _ in verdict.explanations()]
        for case in cases:
            if case.test == test_id and results.get(case.id) is not None:
                other, _ = verdict_of(case)
                if other is not None and not other.passed:
                    also = {explanation for explanation, _ in other.explanations()}
                    shown = [explanation for explanation in shown if explanation in also]
        if not shown:
            return None
        message = dict(verdict.explanations())[shown[0]].replace(likely(shown[:1]), likely(shown), 1)
        return Verdict(False, message, mistake=shown[0], raised=verdict.raised, unnamed=verdict.unnamed,
                       explained=tuple(pair for pair in verdict.explanations() if pair[0] in shown), how=verdict.how,
                       first_wrong=verdict.first_wrong)

    for test in tests:
        functions = " and ".join(unit.rubric.TASK_BY_NAME[test.task].functions)
        if failure:
            graded.append(TestResult(test.id, test.task, 0, test.points, f"{functions} did not finish: {failure}.",
                                     kind=voice.DID_NOT_FINISH))
            continue
        problems, remarks, named, unchecked, first = [], [], "", False, None
        for case in (case for case in cases if case.test == test.id and case.scored):
            verdict, fault = verdict_of(case)
            if verdict is None:
                unchecked = True
                problems.append(fault)
            counted = next((explanation for explanation, _ in verdict.explanations() if explanation in charged),
                           None) if verdict is not None and not verdict.passed else None
            if counted:
                # One mistake, charged once: the case shows the mistake an earlier test of the task took its
                # points for, and nothing else.
                # Said without the case's call: a passed test's text shows at once, and the call is the hidden case.
                said = f"A case of this test shows the mistake already counted in {charged[counted]}, and no other."
                if said not in remarks:
                    remarks.append(said)
                continue
            if verdict is not None and not verdict.passed:
                if verdict.mistake:
                    # a mistake that explains this case but not all the test's failures is not the mistake made
                    verdict = named_throughout(test.id, verdict) or Verdict(
                        False, verdict.unnamed, raised=verdict.raised, how=verdict.how, first_wrong=verdict.first_wrong)
                problems.append(verdict.message)
                named, first = verdict.mistake, (case, verdict)
            elif verdict is not None and verdict.message and verdict.message not in remarks:
                remarks.append(verdict.message)
            if problems:
                break  # the first failing case is the one worth reading
        if problems and named:
            charged.setdefault(named, test.id)
        works[test.id] = not problems or bool(named)
        if not problems and test.needs and not works.get(test.needs, False):
            problems.append(f"{functions} refuses these arguments as it should, but it does not work on valid "
                            f"ones ({test.needs} fails, and no known mistake explains it): the points for "
                            "checking arguments go to a function that also computes its result.")
        if problems:
            output, kind, parts, error = problems[0], voice.WRONG, {}, None
            if first is not None:
                case, verdict = first
                outcome = results.get(case.id)
                kind = _kind_of(outcome)
                error = _student_error(outcome, case, lines) if kind == voice.RAISED else None
                parts["first_wrong"] = verdict.first_wrong
                if named:
                    parts["mistakes"] = tuple(mistake for mistake, _ in verdict.explanations())
                else:
                    parts["how"] = verdict.how
                    if verdict.raised:
                        sizes = diagnosis.sizes_in_error((error.message if error else ""), case.sizes)
                        if sizes:
                            output += f"\nThe sizes in that message: {sizes}."
                            parts["sizes"] = sizes
                    condition = when(test.id)
                    if condition:
                        output += f"\nWhen it goes wrong: {condition}"
                        parts["when"] = condition
            elif unchecked:
                kind = voice.GRADER_FAULT
            # The notes themselves are read once, before every test.
            if (kind == voice.MISSING or (error is not None and error.type == "NameError")) and notes:
                output += "\nWhy it is missing: the notes at the top say which of your code did not run."
            graded.append(TestResult(test.id, test.task, 0, test.points, output, unchecked, kind=kind,
                                     diagnosis=voice.Diagnosis(**parts), error=error))
        else:
            graded.append(TestResult(test.id, test.task, test.points, test.points,
                                     "Passed: " + test.checks + "." + "".join("\n" + r for r in remarks),
                                     kind=voice.PASSED))
    return graded


def _control_groups():
    """The cgroup tree for this grading run's jobs, or None with the weaker limits said out loud."""
    try:
        return cgroups.Tree.detect()
    except cgroups.Unavailable as why:
        print(f"NOTE: no control group per job here ({why}). Each process of a job is limited on its own "
              "(address space, CPU time, file size); the job as a whole is not: its memory, its number of "
              "processes and its CPU share are bounded only by those, by its private folders' sizes and by "
              "its time limit. Grade as root, or delegate a cgroup v2 folder (AUTOGRADER_CGROUP), for "
              "per-job limits.", file=sys.stderr)
        return None


GRADER_THREADS = 1  # torch's threads in the grading process itself (its jobs set their own: server.child_environment)


def grading_process_threads():
    """Torch in this process on GRADER_THREADS thread: called by the commands that grade (the command line, the
    platforms' entry points, nbgrader's TrustedGrades) before their grader starts; a Grader made in a program of
    one's own leaves that program's threads alone.

    The grader's own tensor work is small (building the hidden cases, comparing outputs): the CPUs are its jobs'.
    With torch's default of a thread per CPU, that work ran beside the jobs on more threads than there are CPUs; in
    Gradescope's default container of half a CPU, the grader's start took 7.8 s against 6.5 s on one thread
    (benchmarks/RESULTS.md, issue 38's tenth session). No verdict depends on it: the jobs, whose work is timed and
    compared, have one thread each whatever this process has.
    """
    import torch

    torch.set_num_threads(GRADER_THREADS)


class Grader:
    """Grades one unit's submissions with one set of hidden cases; ``timing`` is what to do without a GPU."""

    def __init__(self, unit, seed=None, limits=None, timing_mode=_limits.TIMING_WITHOUT_GPU, sandbox="required",
                 server=None, secrets=(), course_secret=None):
        """``unit``: a units.Unit, or its name. ``seed``: of the hidden cases (default: the unit's rubric's).

        ``sandbox``: "required" (the strongest sandbox the machine allows, or SandboxMissing), "auto" (that,
        or a warning and none), "off", or a tier's name (see sandbox.resolve_sandbox).

        ``server``: a ForkServer started earlier (see ``sandbox.start_early``), to be used and closed by this
        grader. ``secrets``: files and folders, beyond the kit's own, that no job may read (a platform's
        hidden tests, earlier results); where jobs run as users of their own (tier C), a job's user must be
        unable to open any of them, or the grader refuses to start (SandboxMissing says what to change).
        ``course_secret`` (bytes, see autograder/core/seeds.py): each student's hidden cases come from a seed of their
        own, derived from it and their identity; without it, every student's come from ``seed``.
        """
        self.unit = unit = units.get(unit) if isinstance(unit, str) else unit
        seed = unit.rubric.SEED if seed is None else seed
        self.limits = limits or Limits()
        self.limits.sandboxed = server.tier if server is not None else resolve_sandbox(sandbox)
        self.seed, self.course_secret = seed, course_secret
        tier = self.limits.sandboxed
        # Every job is a fork of it. Started first: it imports torch while the hidden cases are built here (the two
        # take about as long, on two CPUs side by side), and ``ready()`` below waits for it.
        self.server = server or ForkServer(tier, ready=False)
        self._case_sets, self._case_lock = OrderedDict(), threading.Lock()
        try:
            self.cases, self.plan = self.cases_for(seed)
        except BaseException:
            self.server.close()
            raise
        self.timing_mode = timing_mode
        self.groups = _control_groups()
        # RLIMIT_NPROC counts per user (and user namespace): a job's own, but never root, which it ignores.
        self.limits.processes_by_rlimit = self.groups is None and (
            tier == JOB_USERS or (tier == BUBBLEWRAP and os.getuid() != 0))
        self.server.groups = self.groups
        if tier == JOB_USERS:
            # The kit, the platform's secrets, and any copy of the answers elsewhere on the machine (a bundle
            # unpacked in another folder, the kit installed into the Python environment) that others may read.
            try:  # checked as a job's user, leased like any job's: another grader on this machine may hold some
                checker = self.server.users.acquire()
            except (users.PoolFailed, OSError) as error:
                self.server.close()
                raise SandboxMissing(f"No job user is free on this machine ({error}): another grader holds them "
                                     "all. Grade again when it is done, or give each grader ids of its own "
                                     f"({users.UIDS_VARIABLE}).") from None
            try:
                hidden = users.unreadable_problem([*KIT_FOLDERS, *secrets, *self.server.users.copies()], checker.uid)
            finally:
                self.server.users.release(checker)
            if hidden:
                self.server.close()
                raise SandboxMissing(f"Jobs cannot run as users of their own here: {hidden}.")
        if tier == BUBBLEWRAP:
            shown = visible_to_jobs(secrets)
            if shown:
                self.server.close()
                raise SandboxMissing(f"{', '.join(shown)} would be in every job's view: the sandbox mounts the "
                                     "system's and the Python environment's folders for jobs to read. Keep the "
                                     "course secret, the submissions and the results elsewhere.")
        self.server.ready()
        self.references = timing.ReferenceChildren(
            unit.finished_reference, self.limits, self.server, unit)
        # The code the unit borrows from other units, read here, before any grading thread: it is parsed, and
        # a parse beside a thread's parse can fail (a CPython bug: see core/parsing.py).
        self.given_chunks = unit.given_chunks
        recognize.prepare()  # the same: the code units hand out, parsed once, before any grading thread
        # How a refused entry's row names what it was graded as (core/recognize.py): a way in may say it its way.
        self.graded_as = f"it is graded as {unit.name}"
        self.machine = timing.ReadersWriter()  # correctness runs share it; a timing run has it alone
        # The error model (core/mutants.py): the reference's mutants, run on a failing task's cases in jobs of their
        # own, their outcomes kept per seed.
        self.model = mutants.Model(unit, self.limits, self.server, run_submission, Plan)
        self.tier = {BUBBLEWRAP: "bubblewrap, namespaces per job" if self.server.isolate else "bubblewrap per job",
                     JOB_USERS: "a user of its own per job, seccomp filter (no namespaces here)"}.get(tier, "NO SANDBOX") \
            + (f", {self.groups.description}" if self.groups else ", per-process limits only (no cgroups"
               + ("; processes per job by RLIMIT_NPROC)" if self.limits.processes_by_rlimit else ")"))
        weakref.finalize(self, self.references.close)
        weakref.finalize(self, self.server.close)
        if self.groups is not None:
            weakref.finalize(self, self.groups.close)

    def close(self):
        """Stop the fork servers: the students' and the reference's (kept between submissions)."""
        self.references.close()
        self.server.close()
        if self.groups is not None:
            self.groups.close()

    def cases_for(self, seed):
        """The hidden cases of ``seed`` and their plan: built once, kept for the seeds used most recently."""
        with self._case_lock:
            if seed in self._case_sets:
                self._case_sets.move_to_end(seed)
                return self._case_sets[seed]
        cases = build_cases(self.unit, seed)
        built = cases, serialize_plan(cases, self.unit)
        with self._case_lock:
            self._case_sets[seed] = built
            while len(self._case_sets) > CASE_SETS_KEPT:
                self._case_sets.popitem(last=False)
        return built

    def seed_of(self, identity):
        """(seed, where it came from) for the student ``identity``."""
        if self.course_secret is None:
            return self.seed, seeds.describe(self.unit, self.seed)
        seed = seeds.student_seed(self.course_secret, identity)
        return seed, seeds.describe(self.unit, seed, identity, per_student=True)

    def grade(self, path, student=None, seed=None):
        """Grade one submission path (file or student folder). Never raises, whatever the submission holds.

        Its hidden cases come from ``seed`` where one is given (to grade it again as before), else from the
        seed of ``student`` (its identity on the platform; by default the submission's name): see seed_of.

        A fault of the grading machine (it could not start a job: out of processes or memory) is retried;
        one that persists, and any other fault of the grader's own, gives a row that says so, marked
        ``grader_fault`` so that a resumed class run grades it again.
        """
        path = Path(path)
        try:
            name = submission_name(path)
        except Exception:
            name = "submission"
        try:
            drawn, cases_from = (seed, seeds.describe(self.unit, seed)) if seed is not None else self.seed_of(
                name if student is None else student)
            cases, plan = self.cases_for(drawn)
        except Exception as error:  # the grader's fault: the row says so, the log says what
            result = _fault_result(self.unit, name, path, "The grader could not build the hidden cases", error)
            result.sandbox = self.tier
            return result
        for attempt in range(1, MACHINE_ATTEMPTS + 1):
            try:
                result = self._grade(path, name, cases, plan, drawn)
            except ServerFailed as error:
                if attempt < MACHINE_ATTEMPTS:
                    time.sleep(0.5 * attempt)
                    continue
                result = _fault_result(self.unit, name, path, "Not graded: the grading machine could not run it",
                                       error)
            except Exception as error:  # a fault of the grader's, not the student's: keep the row, say so
                result = _fault_result(self.unit, name, path, "The grader failed on this submission", error)
            result.sandbox, result.seed, result.cases_from = self.tier, drawn, cases_from
            result.cases_for_student = seeds.for_student(self.unit, drawn)
            return result

    def _grade(self, path, name, cases, plan, seed=None):
        rubric = self.unit.rubric
        try:
            submission = load(path, self.unit.file_names)
        except LoadError as error:  # the loader turns what is the student's doing into a LoadError; any other
            return _all_failed(self.unit, name, path, f"Could not read the submission: {error}")  # error is ours
        # Another unit's submission is not graded as this one: it would earn what that unit's code happens to earn
        # here (the code a unit hands out finished, above all). Read as data, before anything runs.
        defined = recognize.definitions(submission)
        other = recognize.other_unit(submission, self.unit, defined)
        if other is not None:
            return _all_failed(self.unit, submission.name, path, recognize.looks_like(*other, self.graded_as),
                               submission.skipped)
        handed_out = recognize.handed_out(self.unit, submission, defined)  # {task: why it earns nothing}
        # The code this unit borrows from other units, run after the student's own: the other units' references
        # are what the student's functions call, whatever their file holds under those names (units.Unit.borrowed).
        submission = dataclasses.replace(submission, chunks=submission.chunks + self.given_chunks)
        with self.machine.shared():
            outcome = run_submission(submission, plan, rubric.TASK_NAMES, self.limits, self.server)
        if outcome.load_failure:
            # What the code printed before it was sent any hidden input (RunOutcome.stderr), each line marked as
            # the student's: none can pass for a line of the grader's ("Likely mistake: ...").
            stderr = outcome.stderr.strip()
            detail = "\nLast output of your code:\n" + voice.block(stderr) if stderr else ""
            return _all_failed(self.unit, submission.name, path, f"Not graded: {outcome.load_failure}{detail}",
                               submission.skipped)
        notes = _load_notes(submission, outcome.loaded)
        tests, incidents, lines = [], [], source_lines(submission.chunks)
        for task in rubric.TASK_NAMES:
            verdicts = {}
            scored = score_tests(self.unit, rubric.tests_of(task), cases[task], outcome.results.get(task, {}),
                                 failure=outcome.failures.get(task), notes=notes, incidents=incidents, lines=lines,
                                 verdicts=verdicts)
            if task not in handed_out and task not in outcome.failures:
                with self.machine.shared():
                    scored = self._named_by_model(seed, task, cases[task], outcome.results.get(task, {}), scored,
                                                  verdicts, lambda what, error: incidents.append(
                                                      grader_fault(name, what, error)[1]))
            if task in handed_out:  # the code another unit hands out finished, handed in as this task's answer
                scored = [TestResult(test.id, test.task, 0, test.max_score, handed_out[task], kind=voice.HANDED_OUT)
                          for test in scored]
            tests.extend(scored)
        fault = False
        try:
            verdicts = timing.grade_tier(self.unit, submission, {test.id for test in tests if test.passed},
                                         self.timing_mode, self.references, self.machine, self.limits, self.server)
            tests.extend(TestResult(test.id, test.task, test.points * fraction, test.points, "\n".join(said),
                                    kind=voice.TIMED) for test, fraction, said in verdicts)
        except Exception as error:  # the grader's fault, not the student's: the correctness rows stand
            fault = True
            message, incident = grader_fault(name, "The timing tier failed on this submission", error)
            incidents.append(incident)
            tests.extend(TestResult(test.id, test.task, 0, test.points, message, True, kind=voice.GRADER_FAULT)
                         for test in rubric.tests_of("timing"))
        result = Result(submission.name, str(path), tests, notes, unit=self.unit.name, incidents=incidents)
        result.grader_fault = fault or any(test.grader_fault for test in tests)
        return result

    def _named_by_model(self, seed, task, cases, results, scored, verdicts, fault):
        """``scored`` with a name in each failing test that names no mistake: the error model's (core/mutants.py:
        the mutants of the task's reference whose outcome is the student's on every case of the task), else a slip
        of form the outcomes show (core/form_slips.py: an input changed in place, a dtype's rule, a meta-only
        failure, a refusal). A declared
        mistake, where one is named, stays the name; the points are the same either way. ``verdicts``: what
        score_tests found of each case it checked ({case id: (Verdict or None, message)}), not checked again.
        ``fault(what, error)``: told of an exception of the model's or of form_slips' own. A name only adds words, so
        the rows stand as scored and the student reads nothing of it; the instructor's log gets the incident."""
        # NotImplementedError is the stub's, unless the task's other calls ran: torch raises it too (copying out
        # of a meta tensor).
        stub = all(_stubbed(outcome) for outcome in results.values() if isinstance(outcome, dict))
        kinds = (voice.WRONG, voice.RAISED) + (() if stub else (voice.NOT_IMPLEMENTED,))
        # A test that fails only for the test it needs (its own cases pass) is not explained again here.
        probed = _named_as_probed(results, cases)  # as score_tests read them
        # Each case's check runs once in a grading, whoever asks (score_tests, the model, form_slips).
        passes = mutants.student_verdicts(probed, verdicts)

        own_cases_pass = {test.id: all(passes(case) for case in cases if case.test == test.id and case.scored)
                          for test in scored}
        unnamed = [test for test in scored if not test.passed and test.kind in kinds and not test.diagnosis.mistakes
                   and not own_cases_pass[test.id]]
        # A declared mistake named in one of the task's failing tests is the task's name: no single edit (or pair)
        # explains every case of a task with a second mistake beside it, and the one it could give is that
        # mistake again in other words. The model's jobs would cost a class of declared mistakes time for nothing.
        if not unnamed or any(test.diagnosis.mistakes for test in scored if not test.passed):
            return scored
        said = None
        if self.model is not None:  # None: a grader made without the model (benchmarks/error_model.py)
            try:  # the edit of the reference's line, where one gives the student's outputs
                words = self.model.explain(seed, task, cases, probed, passes)
            except Exception as error:  # the names only add words: without them, the row stands as scored
                words = ()
                fault(f"The error model failed while naming the mistake of task {task} (no points changed)", error)
            said = mutants.likely_line(words) if words else None
        if said is None:  # else a slip of form the outcomes show outright (core/form_slips.py)
            try:
                said = form_slips.explain(cases, probed, {test.id for test in unnamed}, self._parameters(task), passes)
            except Exception as error:
                said = None
                fault(f"form_slips failed while naming the mistake of task {task} (no points changed)", error)
        if said is None:
            return scored
        return [dataclasses.replace(test, output=f"{test.output}\nLikely mistake: {said}",
                                    diagnosis=dataclasses.replace(test.diagnosis, mistakes=(said,)))
                if any(test is one for one in unnamed) else test for test in scored]

    def _parameters(self, task):
        """{function: the names of its parameters} of ``task``'s functions in the reference."""
        found = {}
        for name in self.unit.rubric.TASK_BY_NAME[task].functions:
            try:
                found[name] = list(inspect.signature(getattr(self.unit.reference, name)).parameters)
            except (TypeError, ValueError, AttributeError):
                found[name] = []
        return found

    def stall_seconds(self):
        """How long a class run may go without any submission finished before the watchdog gives up on those in
        progress (autograder/core/threads.py): _limits.CLASS_STALL_SECONDS, or more where the submissions' time
        limit is raised (_limits.CLASS_STALL_FACTOR times it)."""
        return max(_limits.CLASS_STALL_SECONDS, _limits.CLASS_STALL_FACTOR * self.limits.wall_seconds)

    def grade_many(self, paths, jobs=1, on_result=None):
        """Grade paths with ``jobs`` at a time; results in the order of ``paths``.

        ``on_result(index, result)`` is called as each one is graded, from the thread that graded it (or, for a
        submission the watchdog gave up on, from this one). Every module a grading thread may import is imported
        first (a caller whose on_result imports more says so with threads.import_ahead), and a run that stops
        making progress ends all the same, each submission it was stuck on a grader fault's row with an incident
        id: see autograder/core/threads.py.
        """
        paths = list(paths)
        if not paths:
            return []
        threads.import_ahead(self.unit.package, notebooks=threads.may_hold_notebooks(paths))

        def failed(index, error):  # grade() never raises; if it ever did, the row stays all the same
            return _fault_result(self.unit, str(paths[index]), paths[index], "The grader failed on this submission",
                                 error)

        def stuck(index, error):
            try:
                name = submission_name(paths[index])
            except Exception:  # noqa: BLE001
                name = "submission"
            result = _fault_result(self.unit, name, paths[index], "Not graded: the grader stopped making progress "
                                   "on this submission", error)
            result.sandbox = self.tier
            return result

        ahead, done = threading.Semaphore(CASES_AHEAD), threading.Event()

        def prefetch():
            """With a course secret, the hidden cases of the next students are built while the jobs run: a seed's
            cases cost the grader's own process about a tenth of a submission, which its jobs' CPUs leave idle."""
            for path in paths[jobs:]:  # the first ones are built by the threads that grade them, at once
                ahead.acquire()
                if done.is_set():
                    return
                try:
                    self.cases_for(self.seed_of(submission_name(path))[0])
                except Exception:  # noqa: BLE001  (grade() builds them again, and says what went wrong)
                    pass

        def one(index):
            ahead.release()
            return self.grade(paths[index])

        if self.course_secret is not None and len(paths) > 1:
            threading.Thread(target=prefetch, name="hidden cases ahead", daemon=True).start()
        try:
            return threads.run(len(paths), one, on_result, jobs=jobs, stall_seconds=self.stall_seconds(),
                               failed=failed, stuck=stuck, clock=_clock)
        finally:
            done.set()
            ahead.release()
