"""The timing tier: the student's score path against the reference, timed from the grader's side.

Each unit names its timed paths (``TIMED_PATHS`` in its rubric; how each is
called and its inputs drawn, in its job.py). A path is timed only when
the correctness tests of its own tasks pass (a wrong helper is replaced by the
grader's stand-in for the timing, in both jobs: it has cost its own task's
points already), and gets no points when its functions, the helper's
included, run a Python loop over positions: a static check of the source finds
the loops written there (and refuses what it cannot read), and every path, loops
seen or not, is run at growing sequence lengths (fixed ones, the timed one, and
some drawn for each count) with its steps counted, so that a loop no text shows
(iteration driven from C, recursion through an operator) loses the tier, and a
loop whose count does not change with the length (over heads, over (q, k)) is
timed like any other code (``count_loops``; loop_check.py says how it counts).
Both are reported on lines of their own.

The rubric's rule for a path that computes the wrong thing (one of the ``requires`` tasks fails a value test):
its timing points are withheld, and the timing row says so, with the figure, as a charge of its own. The path is
not timed with the grader's reference in place of the wrong function: on every timed path that function is the
path (shaw_scores, t5_bias or biased_scores, alibi_bias, the rotary functions), so the time would be the
reference's, points for code that does not work (DESIGN.md, invariant 8); nor is the wrong code timed, since a
wrong path may be fast because it leaves work out. A helper of another task is different: it is a part of the
path, the rest stays the student's, so a stand-in keeps the timing about their code. Otherwise:

* Two jobs run the same worker (``worker.py``, serve mode): one with the
  student's code, one with the reference and nothing else. The whole tier of a
  submission, from loading its code to ending its job, holds the machine
  exclusively: nothing of another student's runs meanwhile, and nothing of
  this one's outlives it.
* Each timed call gets inputs of its own, made inside the window the grader times: the grader sends
  "call" with a fresh seed and a length drawn for that call, and the job makes the inputs from them (windows
  of a pool of random numbers at offsets and scales drawn from the seed, in fresh storage: one cheap pass over
  each input, the same in both jobs) and calls the path, from the command sent to the reply received; one job
  at a time, alternating which goes first. No clock of the student's process is read, no code of the
  submission runs between a call's inputs and its reply untimed, and caching on the inputs' identity or
  content gains nothing. A call is charged the larger of that time and its job's CPU time, read from outside
  (``ServeChild._charged``): the reference's job runs on one thread, and a job that spreads its work over more
  threads or processes shortens only the first. The figure is the median of the per-pair ratios
  student/reference; pairs stop early once every ratio lies on the same side of every band's limit.
* After each pair, entries of both outputs at indices drawn only then must
  agree, read by the job's main thread, which never runs the submission's code (worker.py says how).
  Between its reply and the next command the student's job must do nothing:
  no other process, and no CPU time on threads other than the runner's (read
  in /proc before each command); work done in the background would go untimed.
* Peak memory of one call beyond what the job held before it (its inputs, made in the call, count alike in
  both jobs), on a call after the first (what a path does once, an import or
  a table built, is not what each call needs): the job's control group's
  high-water mark (all its processes, read and restarted from outside the
  job); without control groups, the kernel's high-water mark of the process
  (``/proc/PID/status``, restarted through ``clear_refs``), watched from outside through the call
  (``MemoryWatch``), so that nothing the job does to that mark lowers the figure; on CUDA the allocator's peak.
"""

import contextlib
import inspect
import json
import math
import os
import random
import select
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from autograder.sandbox import limits as _limits, protocol
from autograder.core import units, voice
from autograder.core import loop_check
from autograder.core.loop_check import count_changes, counts_words, findings, refuse_imports_of
from autograder.intake.inert import inert_line
from autograder.sandbox.server import JOB_USERS, ServerFailed, _descendants, frame, send_all, tail

refuse_imports_of(units.module_names())  # a submission's code is known in its job by its unit's module name
SAMPLES = 96  # output entries compared after each timed pair (and after the call measured for memory)
SETUP_SECONDS = 60.0  # start, import torch, build the inputs and warm up


class ChildFailed(Exception):
    """The child died, broke the protocol, or ran past its time; the message says which, for the student."""


class BackgroundWork(ChildFailed):
    """The student's job was seen working between two commands: a thread on a CPU, or a process of its own. Once
    may be the machine's noise (a pool's thread still spinning down on a loaded machine): the path is then timed
    again from the start in fresh jobs, and only a second sighting stands (``grade_tier``)."""


class BudgetSpent(ChildFailed):
    """The student's job spent the timing tier's budget of this submission (``TierBudget``)."""


class TierBudget:
    """The time the student's job may spend in one submission's timing tier: ``seconds`` plus ``factor`` times
    what the reference's job spent on the same commands, by the grader's wall clock (what holds the machine)."""

    def __init__(self, seconds, factor):
        self.seconds, self.factor = seconds, factor
        self.student = self.reference = 0.0

    def allowed(self):
        return self.seconds + self.factor * self.reference

    def left(self):
        return self.allowed() - self.student

    def charge(self, reference, seconds):
        if reference:
            self.reference += seconds
        else:
            self.student += seconds

    def spent_words(self):
        return (f"the timing tier's time for a submission ran out: its job spent {self.student:.1f} s of the "
                f"{self.allowed():.1f} s allowed ({self.seconds:g} s, plus {self.factor:g} times the "
                f"{self.reference:.1f} s the reference's job took for the same commands). The timing points still "
                "to come are lost; a score path that does its work when it is called, and nothing slow at import "
                "or beside it, stays well inside")


class ReferenceFailed(RuntimeError):
    """The reference's job failed: a fault of the grader's, never charged to the student (see ``grade_tier``)."""


# The counter of a path's steps, as the timing job runs it (see ``count_loops``): its text, sent with the job's code.
COUNTER_CODE = inspect.getsource(loop_check.counted)
REPLY_BYTES = 1 << 20  # the longest reply line kept; a job that sends more breaks the protocol


def memory_limit_name():
    """The process limit that bounds a timing job's memory: RLIMIT_AS, or RLIMIT_DATA where the path is timed on CUDA.

    CUDA reserves address space for all the GPU's memory and the host's at its start (unified addressing), far more
    than the job may use: under RLIMIT_AS its first call fails ("cudaGetDeviceCount ... out of memory", seen on an
    H200, benchmarks/RESULTS.md 2026-12-04). RLIMIT_DATA counts only the memory a process can write (Linux 4.7 on),
    not a reservation, so the host memory a job fills stays bounded; the GPU's memory is measured by the tier.
    """
    return "RLIMIT_DATA" if torch.cuda.is_available() else "RLIMIT_AS"


class ServeChild:
    """A timing job of a fork server, with the code of ``chunks`` loaded; commands and replies are JSON lines."""

    def __init__(self, server, chunks, filename, limits, unit, reference=False):
        self.reference = reference  # a reference job: its failures are the grader's (ReferenceFailed)
        self.broken = False  # a request failed: its state is unknown (a late reply may be on its way), never reuse it
        self._first = None  # the job's first process on this machine, once found (see ``cpu_seconds``)
        self.output = tempfile.TemporaryFile()
        child_limits = {memory_limit_name(): limits.memory_bytes, "RLIMIT_CORE": 0, "RLIMIT_FSIZE": 64 * 1024**2}
        if limits.processes_by_rlimit:
            child_limits["RLIMIT_NPROC"] = limits.processes
        # Traceable: without a control group, the grader reads and restarts its memory high-water mark in /proc.
        self.job = server.spawn({"mode": "serve", "traceable": True, "scratch_bytes": limits.scratch_bytes},
                                self.output.fileno(), self.output.fileno(), limits=limits.for_job())
        header = json.dumps({"filename": filename, "chunks": chunks, "limits": child_limits,
                             "module": unit.module_name, "unit_code": unit.job_source,
                             "counter_code": COUNTER_CODE}).encode()
        self._commands, self._replies = self.job.input, self.job.output
        self._buffer = b""
        if not send_all(self._commands, frame(b"S", header)):  # no code of the submission has run yet
            self.broken = True
            gone = self._gone()
            self.close()
            raise ServerFailed(f"the timing job ended before it was sent its code ({gone})")

    @property
    def alive(self):
        """Whether the job runs and may take another command: False once any request of it has failed."""
        return not self.broken and not self.job.poll()

    def _raise(self, error):
        if self.reference:
            raise ReferenceFailed(f"the reference's timing job failed ({error})") from None
        raise error

    @property
    def worker_pid(self):
        """The job's process id on this machine."""
        return self.job.host_pid

    watch_background = False  # set for a student's job once its timing starts (see ``background``)
    budget = None  # the TierBudget of the submission being timed: every request of either job is charged to it
    clock = "wall"  # or "cpu": each call timed by the runner's CPU time (see ``timing_clock``)

    def cpu_seconds(self):
        """The CPU time of the job's work, read from outside it once none of the runner's threads is on a CPU
        (see ``settled_cpu_seconds``): the runner's, all its threads (those that ended included), and that of the
        processes reaped by the runner or by the job's first process (the init of its PID namespace, where an
        orphan of the job ends up, in the bubblewrap tiers). A process still there is the background check's."""
        try:
            seconds = settled_cpu_seconds(self.worker_pid) + reaped_children_seconds(self.worker_pid)
        except (OSError, TypeError) as error:
            raise ChildFailed(f"its process is gone ({error})") from None
        if self._first is None:
            self._first = self.job._first_host_pid()
        try:
            return seconds + (reaped_children_seconds(self._first) if self._first is not None else 0.0)
        except OSError as error:
            raise ChildFailed(f"its first process is gone ({error})") from None

    def _charged(self, wall, cpu):
        """The seconds a timed call is charged, in both jobs alike: its CPU time where the grader has less than
        a CPU (``clock == "cpu"``); else the larger of its wall-clock time and its CPU time. The reference's job
        runs on one thread (OMP_NUM_THREADS=1), so for it the two agree up to the wait for its reply; a job
        that spreads its work over more threads (torch.set_num_threads, threads of its own, torch's inter-op
        pool) or over child processes it reaps shortens the wall clock, never the CPU time, so it gains
        nothing on more CPUs than the reference has, whatever the machine's affinity or quota allow."""
        return cpu if self.clock == "cpu" else max(wall, cpu)

    def request(self, command, timeout):
        """Send one command and return (reply, seconds from send to reply) by the grader's clock.

        The reply is checked against the protocol's form for that command before anything reads it. While
        ``watch_background`` is set, the job must have done nothing between its last reply and this command.
        A request that fails leaves the job ``broken``: a call that ran past its time may still answer, and
        that late reply must never be read as the answer to a later command. A reference job's failure
        raises ReferenceFailed, the grader's fault, where a student's raises ChildFailed.
        """
        if self.broken:
            self._raise(ChildFailed("its job failed an earlier request"))
        try:
            return self._request(command, timeout)
        except ChildFailed as error:
            self.broken = True
            self._raise(error)

    def _request(self, command, timeout):
        if self.watch_background:
            left = self.background()
            if left:
                raise BackgroundWork(f"while it waited for its next call, its job {left}: the timing tier times "
                                     "your function alone, so leave no thread working and start no process, in the "
                                     "score path or at import")
        budget, limit = self.budget, timeout
        if budget is not None and not self.reference:
            limit = min(timeout, budget.left())
            if limit <= 0:
                raise BudgetSpent(budget.spent_words())
        # A timed call is charged its job's CPU time too, read before the clock starts (the reading waits for the
        # job's threads to leave the CPU): see ``_charged``.
        cpu_before = self.cpu_seconds() if command["command"] == "call" else None
        started = time.perf_counter()
        try:
            return self._exchange(command, timeout, limit, started, cpu_before)
        finally:
            if budget is not None:
                budget.charge(self.reference, time.perf_counter() - started)

    def _exchange(self, command, timeout, limit, started, cpu_before):
        try:
            os.write(self._commands, (json.dumps(command) + "\n").encode())
        except OSError:
            raise ChildFailed(self._gone()) from None
        deadline = started + limit
        while b"\n" not in self._buffer:
            left = deadline - time.perf_counter()
            if left <= 0:
                if limit < timeout:
                    raise BudgetSpent(self.budget.spent_words())
                raise ChildFailed(f"one call took more than {timeout:g} s")
            if len(self._buffer) > REPLY_BYTES:
                raise ChildFailed("its process wrote more than a reply where replies go")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    raise ChildFailed(self._gone())
                self._buffer += chunk
        elapsed = time.perf_counter() - started
        if cpu_before is not None:
            elapsed = self._charged(elapsed, self.cpu_seconds() - cpu_before)
        if self.watch_background:
            self.mark_background()  # what its threads did while it worked on the command is the command's
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = protocol.json_line(line, protocol.TIMING_REPLIES[command["command"]], "its reply")
        except protocol.ProtocolError as error:
            raise ChildFailed(f"its process broke the timing protocol ({error}): your code must not write to "
                              "the grader's pipes") from None
        return reply, elapsed

    def _gone(self):
        self.job.read_line(time.monotonic() + 2)
        if not self.job.ended:
            return "its process stopped answering"
        code = self.job.exit_code
        last = tail(self.output, 600).strip()
        return f"its process ended (exit status {code})" + (f"; its last output: {voice.quote(last)}" if last else "")

    def reset_memory_peak(self):
        """Restart the high-water mark of the job's memory; returns what the job holds now (or None).

        Without a control group, the mark is the runner's own (``VmHWM``), which a process of the job that can
        write its ``clear_refs`` could restart too (a dumpable job: tier B's; or through a call that no audit hook
        sees, such as readline's history file): a thread of the grader's watches it until ``memory_peak``
        (``MemoryWatch``), so the figure is what the job held, whatever the job does to the mark."""
        group = self.job.group
        self._peak_of_group = group is not None and group.reset_memory_peak()
        if self._peak_of_group:
            return group.memory_now()
        self._stop_watch()
        try:
            Path(f"/proc/{self.worker_pid}/clear_refs").write_text("5")
            self._watch = MemoryWatch(self.worker_pid)
            return _proc_status(self.worker_pid, "VmRSS")
        except (OSError, TypeError):
            return None

    def _stop_watch(self):
        watch, self._watch = getattr(self, "_watch", None), None
        if watch is not None:
            watch.stop()
        return watch

    def memory_peak(self):
        """The high-water mark since ``reset_memory_peak``: the job's group's, else the runner's as watched from
        outside (or None)."""
        if getattr(self, "_peak_of_group", False):
            return self.job.group.memory_peak()
        watch = self._stop_watch()
        try:
            final = _proc_status(self.worker_pid, "VmHWM")
        except (OSError, TypeError):
            final = None
        if watch is None:
            return final
        return max(watch.highest, final or 0)

    def background(self):
        """What the job ran off its runner's main thread since the last call of this, as words, or "".

        Another process in the job is reported at once. Threads are allowed (torch's own pool, when a
        submission asks for more than one), as long as they do nothing between calls: CPU time that other
        threads used since the last look, beyond ``QUIET_SECONDS``, would be work done untimed.
        """
        runner = self.worker_pid
        if runner is None:
            return ""
        processes = self.job.processes()  # its control group's, or its user's, or the runner's tree
        # and the runner's children that ended unreaped: a control group no longer lists them, and their CPU time
        # is counted nowhere until they are reaped
        processes |= set(_descendants(runner))
        first = self.job._first_host_pid() if self.job.group is not None else None
        others = sorted(processes - {runner, first})
        if others:
            return f"held {len(others)} other process(es)"
        used = _thread_seconds(runner, skip=runner)
        since, self._background_mark = used - getattr(self, "_background_mark", used), used
        if since > QUIET_SECONDS:
            return f"had other threads working ({1000 * since:.0f} ms of CPU time)"
        return ""

    def mark_background(self):
        """Start counting the other threads' CPU time from now (what they do during a timed call is the call's):
        once none of them is on a CPU, so that a pool's threads spinning down after the command (OpenMP's wait
        policy: they spin for a while before they sleep) are the command's, not work between commands."""
        runner = self.worker_pid
        if runner is not None:
            with contextlib.suppress(OSError, TypeError):
                settled_cpu_seconds(runner)
            self._background_mark = _thread_seconds(runner, skip=runner)

    def close(self):
        self.broken = True
        self._stop_watch()
        self.job.stop()
        self.output.close()


QUIET_SECONDS = 0.002  # CPU time the job's other threads may use between two calls (an idle pool uses none)
SETTLE_SECONDS = 0.5  # how long a CPU-time reading waits for the job's threads to leave the CPU


def settled_cpu_seconds(pid, wait_seconds=SETTLE_SECONDS):
    """Process ``pid``'s CPU time (all its threads, those that ended included), read from outside it.

    The kernel brings a thread's CPU time up to date when the thread leaves the CPU (and at each scheduler
    tick); for a process other than the caller's, the clock leaves out what a thread now on a CPU has run
    since then. Read just after a job's reply, while its runner is still on its way back to waiting for the
    next command, it could miss the whole call: a call shorter than a tick once read 0 s, in a container of
    half a CPU. So the clock is read once no thread of the process is running, and its main thread has not
    run again in between (its count of voluntary switches is the same before and after the reading); after
    ``wait_seconds`` of threads that keep working, it is read as it is (the background check then sees them).
    """
    clock = ((~pid) << 3) | 2  # the process's CPU clock (CPUCLOCK_SCHED)
    deadline = time.monotonic() + wait_seconds
    while True:
        before = _scheduling(pid)
        seconds = time.clock_gettime_ns(clock) / 1e9
        if (before is not None and before == _scheduling(pid)) or time.monotonic() >= deadline:
            return seconds
        time.sleep(0.0002)


def reaped_children_seconds(pid):
    """The CPU time of the child processes of ``pid`` that it has waited for (``/proc/PID/stat``'s cutime and
    cstime), read from outside it. The kernel shows them in whole clock ticks: a reading is short by less than
    two ticks, so a call's share is exact over many calls, not within each."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _scheduling(pid):
    """(voluntary switches of the main thread, states of every thread) of ``pid``, or None while one runs."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
        states = []
        for thread in threads:
            states.append(Path(f"/proc/{pid}/task/{thread}/stat").read_text().rsplit(")", 1)[1].split()[0])
        switches = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                        if line.startswith("voluntary_ctxt_switches:"))
    except (OSError, StopIteration, IndexError):
        return None  # gone, or a thread ended while it was read: read again
    if "R" in states:
        return None
    return switches, tuple(states)


def _thread_seconds(pid, skip):
    """CPU seconds used so far by the threads of process ``pid`` other than ``skip``, read from outside it."""
    total = 0.0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for thread in threads:
        if int(thread) == skip:
            continue
        try:  # nanoseconds on the CPU, where the kernel keeps scheduler statistics; else clock ticks
            total += int(Path(f"/proc/{pid}/task/{thread}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            try:
                fields = Path(f"/proc/{pid}/task/{thread}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                pass
    return total


MEMORY_WATCH_SECONDS = 0.0002  # how often the watch reads the runner's memory in /proc


class MemoryWatch:
    """The memory of the process ``pid``, read in /proc by a thread of the grader's until ``stop``: the highest of
    its resident size and its high-water mark (``VmRSS``, ``VmHWM``) over all the readings.

    The highest reading stands whatever the job does to the mark after it (a write to its ``clear_refs``): all
    that the readings can miss is memory held for less than one interval before the mark was restarted. (A mark
    that goes down is no proof of a restart: the reference's own did, read this way, without control groups.)"""

    def __init__(self, pid):
        self._fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
        self.highest = 0
        self._done = False
        try:
            self._read()
        except OSError:
            os.close(self._fd)
            raise
        self._thread = threading.Thread(target=self._run, name="memory watch", daemon=True)
        self._thread.start()

    def _read(self):
        fields = {}
        for line in os.pread(self._fd, 1 << 14, 0).splitlines():
            name, _, value = line.partition(b":")
            if name in (b"VmHWM", b"VmRSS"):
                fields[name] = int(value.split()[0]) * 1024
        if not fields:  # the process is gone
            raise OSError("no memory figures")
        self.highest = max(self.highest, *fields.values())

    def _run(self):
        while not self._done:
            try:
                self._read()
            except OSError:
                return
            time.sleep(MEMORY_WATCH_SECONDS)

    def stop(self):
        self._done = True
        self._thread.join()
        try:
            self._read()
        except OSError:
            pass
        os.close(self._fd)


def _proc_status(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return None


@dataclass
class Measurement:
    ratio: float  # median of student/reference over the interleaved pairs
    student_ms: float
    reference_ms: float
    pairs: int
    student_bytes: int = None  # peak memory of one call beyond its inputs
    reference_bytes: int = None


def _error_text(reply):
    error = reply["error"]  # the student's text, every part of it: quoted (autograder/core/voice.py)
    where = f" at {inert_line(error['where'])}" if error.get("where") else ""
    text = f"{voice.class_name(error['type'])}: {voice.quote(error['message'])}{where}"
    if "device" in error["message"] and ("cpu" in error["message"] or "cuda" in error["message"]):
        text += (". The inputs were on the GPU: build every new tensor (arange, indices) on the input's device, "
                 "torch.arange(n, device=q.device)")
    return text


class ReadersWriter:
    """Correctness runs share the machine; a timing run has it to itself, so its figures are not other work's."""

    def __init__(self):
        self._condition = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting_writers = 0

    def shared(self):
        return _Hold(self, exclusive=False)

    def exclusive(self):
        return _Hold(self, exclusive=True)


class _Hold:
    def __init__(self, lock, exclusive):
        self.lock, self.exclusive = lock, exclusive

    def __enter__(self):
        lock = self.lock
        with lock._condition:
            if self.exclusive:
                lock._waiting_writers += 1
                lock._condition.wait_for(lambda: not lock._writing and lock._readers == 0)
                lock._waiting_writers -= 1
                lock._writing = True
            else:
                lock._condition.wait_for(lambda: not lock._writing and lock._waiting_writers == 0)
                lock._readers += 1

    def __exit__(self, *exc):
        lock = self.lock
        with lock._condition:
            if self.exclusive:
                lock._writing = False
            else:
                lock._readers -= 1
            lock._condition.notify_all()


def _settled(ratios):
    """Whether more pairs cannot change the verdict: every ratio lies on the same side of every band's limit."""
    if len(ratios) < _limits.TIMING_MIN_PAIRS:
        return False
    return all(min(ratios) > limit or max(ratios) <= limit for limit, _ in _limits.TIMING_BANDS)


def measure(student, reference, spec, rng=None, lengths=None, count=None):
    """Time the spec's path in the two jobs, interleaved; raises ChildFailed with the student's problem.

    ``lengths``: the lengths of its calls (``timed_lengths``, drawn before the path was counted at each of them),
    or None to draw them here. ``count``: (the path's count of steps, the lengths it was counted at), from
    ``count_loops``; after each timed pair the student's path is counted once more (``recount``), so that no
    count of the path's steps is told apart by when it comes. The caller holds the machine exclusively (see
    ``grade_tier``).
    """
    rng = rng or random.SystemRandom()
    lengths = iter(lengths if lengths is not None else timed_lengths(spec, rng))
    pool_seed = rng.getrandbits(48)  # the pool of random numbers the calls' inputs are cut from: new each time
    # The reference first: where it cannot start (the machine, not the student, is at fault: CUDA that does not
    # start, say) the grader's fault is said, and no student loses points for it.
    for child in (reference, student):
        reply, _ = child.request({"command": "setup", "spec": {**spec, "warmup": 0, "seed": pool_seed}}, SETUP_SECONDS)
        if "error" in reply:
            if child is reference:
                raise ReferenceFailed(f"the reference failed on the timing inputs: {_error_text(reply)}")
            raise ChildFailed(f"it raised {_error_text(reply)} on the timing inputs ({_describe(spec)})")
    student.watch_background = True  # from here on nothing of the student's may run between its commands
    student.mark_background()
    extra = {}
    # One call of each first, untimed and unmeasured: what a path does once (import a module, load its kernels,
    # fill a cache of the library's) is not memory that its calls need.
    seed, length = rng.getrandbits(48), next(lengths)
    for child in (reference, student):  # the reference first, as above: a call it cannot make is the grader's fault
        try:
            _run(child, spec, rng, seed, length)
        except ChildFailed as error:
            if child is reference:
                raise ReferenceFailed(f"the reference failed on its first timed call: {error}") from error
            raise
    # Then one call of each, alone, for its peak memory beyond what the job held before the call (its inputs,
    # made in the call, count in both jobs alike), with every large tensor in a fresh mapping for that call, so
    # that none reuses memory freed earlier.
    seed = rng.getrandbits(48)
    for child in (student, reference):
        before = child.reset_memory_peak()
        _, reply = _run(child, spec, rng, seed, spec["length"], fresh_mappings=True)
        if spec["device"].startswith("cuda"):
            sampled, _ = child.request({"command": "sample", "indices": [0]}, SETUP_SECONDS)
            peak, base = sampled.get("cuda_peak"), reply.get("cuda_baseline")
            extra[child] = None if peak is None or base is None else peak - base
        else:
            peak = child.memory_peak()
            extra[child] = None if peak is None or before is None else max(peak - before, 0)
    _check_outputs(student, reference, spec, rng, "the call measured for memory")
    for number in range(spec["warmup"]):
        seed, length = rng.getrandbits(48), next(lengths)
        for child in (student, reference):
            _run(child, spec, rng, seed, length)
    student_times, reference_times = [], []

    def timed_pair(pair):
        """One interleaved pair, alternating which job goes first: (student's seconds, reference's seconds)."""
        seed, length = rng.getrandbits(48), next(lengths)
        order = (student, reference) if pair % 2 == 0 else (reference, student)
        seconds = {}
        for child in order:
            seconds[child], _ = _run(child, spec, rng, seed, length)
        _check_outputs(student, reference, spec, rng, f"timed call {pair + 1}")
        if count is not None:
            recount(student, reference, spec, rng, count, pair)
        if min(seconds.values()) <= 0:  # no call takes no time: the clock failed, the machine's fault
            raise ServerFailed(f"a clock read {min(seconds.values()):g} s for a call of timed pair {pair + 1}")
        student_times.append(seconds[student])
        reference_times.append(seconds[reference])
        return seconds[student], seconds[reference]

    ratios = timed_ratios(timed_pair)
    measurement = Measurement(statistics.median(ratios), 1000 * statistics.median(student_times),
                              1000 * statistics.median(reference_times), len(ratios))
    if extra.get(student) is not None and extra.get(reference) is not None:
        measurement.student_bytes, measurement.reference_bytes = extra[student], extra[reference]
    return measurement


def timed_ratios(timed_pair):
    """The ratios student/reference of the timed pairs: ``timed_pair(number)`` times pair ``number`` and returns
    (student's seconds, reference's seconds). Pairs stop once more could not change the verdict (``_settled``, or a
    median far past the last band); where the median then lies in a limit's noise band (``near_limit``),
    ``TIMING_NEAR_PAIRS`` more are timed, and the verdict is the median of them all (``band_verdict``)."""
    ratios = []
    for pair in range(_limits.TIMING_REPEATS):
        mine, theirs = timed_pair(pair)
        ratios.append(mine / theirs)
        if _settled(ratios) or (pair >= 2 and statistics.median(ratios) > 3 * _limits.TIMING_BANDS[-1][0]):
            break  # more pairs would not change the verdict
    if near_limit(statistics.median(ratios)) is not None:
        for pair in range(len(ratios), len(ratios) + _limits.TIMING_NEAR_PAIRS):
            mine, theirs = timed_pair(pair)
            ratios.append(mine / theirs)
    return ratios


def near_limit(ratio):
    """The band limit whose noise band holds ``ratio`` (from limit / TIMING_NOISE to limit * TIMING_NOISE), or None:
    a ratio there may lie on either side of the limit by the machine's noise alone."""
    for limit, _ in _limits.TIMING_BANDS:
        if limit / _limits.TIMING_NOISE < ratio <= limit * _limits.TIMING_NOISE:
            return limit
    return None


def band_verdict(ratio, pairs=None):
    """(the fraction of a timed test's points, what the feedback adds) for the median ratio ``ratio``.

    The fraction is the band's (``fraction_for``), but for a ratio above a limit and within its noise band, which
    gets the limit's own side: the better verdict, said in the words. Outside every noise band, the words are ""."""
    fraction, limit = fraction_for(ratio), near_limit(ratio)
    if limit is None or ratio <= limit:
        return fraction, ""
    better = fraction_for(limit)
    over = f" over {pairs} interleaved pairs" if pairs else ""
    return better, (f"{ratio:.2f}x lies above the {limit:g}x limit but within the machine's noise of it (up to "
                    f"{limit * _limits.TIMING_NOISE:.3g}x){over}: measured again with more pairs, it stayed there, "
                    f"so it gets the better verdict, {share_words(better)} instead of {share_words(fraction)}.")


def _run(child, spec, rng, seed, length, fresh_mappings=False):
    """One timed call: the job makes the call's inputs from ``seed`` at ``length`` and calls the path, all in the
    window the grader times, from the command sent to the reply received. Returns (seconds, reply)."""
    nonce = rng.getrandbits(62)
    command = {"command": "call", "seed": seed, "length": length, "nonce": nonce}
    if fresh_mappings:
        command["fresh_mappings"] = True
    reply, elapsed = child.request(command, _limits.TIMING_CALL_SECONDS)
    if "error" in reply:
        raise ChildFailed(f"it raised {_error_text(reply)} on the timing inputs ({_describe(spec)})")
    if reply.get("done") != nonce:
        raise ChildFailed("its process answered a call it was not given")
    return elapsed, reply


def recount(student, reference, spec, rng, count, pair):
    """Count the student's path once more, between timed pairs, at a length of the timed ones' range that no call
    of the path has had yet (so that a table kept per length is made, as at each earlier count), and check its
    output against the reference's on the same inputs (a share ``RECOUNT_CHECKED`` of the recounts, drawn). Raises
    ChildFailed when the count is not ``count``'s: a path whose steps depend on when it is called (on some calls
    only, after so many calls) cannot be told from one that loops over positions."""
    expected, used = count
    fresh = [length for length in timed_range(spec) if length not in used]
    length = rng.choice(fresh) if fresh else rng.choice(sorted(used))
    used.add(length)
    seed = rng.getrandbits(48)
    reply, _ = student.request({"command": "count", "seed": seed, "length": length}, SETUP_SECONDS)
    if "error" in reply:
        raise ChildFailed(f"it raised {_error_text(reply)} while its steps were counted after timed pair {pair + 1}")
    if not reply["intact"] or reply["steps"] + reply["operations"] != expected:
        said = ("the count was interfered with" if not reply["intact"] else
                f"counted again after timed pair {pair + 1} (L = {length}), its steps were "
                f"{reply['steps'] + reply['operations']}, where every count before was {expected}")
        raise ChildFailed(f"{said}: a path whose steps change from call to call (work on some calls only, a branch "
                          "on how often it was called) cannot be told from a Python loop over positions")
    if rng.random() >= RECOUNT_CHECKED:
        return
    try:
        _run(reference, spec, rng, seed, length)
    except ChildFailed as error:
        raise ReferenceFailed(f"the reference failed on the inputs of a count: {error}") from None
    _check_outputs(student, reference, spec, rng, f"the call counted after timed pair {pair + 1}")


def timed_lengths(spec, rng):
    """The lengths of the calls ``measure`` makes for ``spec`` (its first call, its warmup calls, its timed pairs;
    the call measured for memory is at the spec's length), each drawn with ``call_length``. They are drawn before
    the path is counted, so that its steps are counted at some of the lengths it is timed at (``COUNT_TIMED``), and
    the recounts between timed pairs run at others of that range."""
    return [call_length(spec, rng)
            for _ in range(1 + spec["warmup"] + _limits.TIMING_REPEATS + _limits.TIMING_NEAR_PAIRS)]


def timed_range(spec):
    """The lengths a timed call of ``spec`` may have: the last eighth below the spec's length, and that length."""
    return range(spec["length"] - spec["length"] // 8, spec["length"] + 1)


def call_length(spec, rng):
    """The sequence length of one timed call, drawn by the grader for that call alone from ``timed_range``, so that
    no two calls need be alike (a path that keeps what it made for an earlier call, by its lengths or its inputs,
    gains nothing) while each costs about what the spec's size does."""
    return rng.choice(timed_range(spec))


def _check_outputs(student, reference, spec, rng, which):
    """The student's output of the last call against the reference's, at SAMPLES entries drawn over the
    reference's output (its shape is asked first: (B, H, L, L) scores in the first units, windows in the
    fourth)."""
    shape, _ = reference.request({"command": "sample", "indices": []}, SETUP_SECONDS)
    if "shape" not in shape:
        raise ReferenceFailed("the reference's timed call did not return a tensor")
    size = math.prod(shape["shape"])
    indices = sorted(rng.sample(range(size), min(SAMPLES, size)))
    mine, _ = student.request({"command": "sample", "indices": indices}, SETUP_SECONDS)
    theirs, _ = reference.request({"command": "sample", "indices": indices}, SETUP_SECONDS)
    if "values" not in theirs:
        raise ReferenceFailed("the reference's timed call did not return a tensor")
    if "error" in mine:
        raise ChildFailed(f"its output could not be read: {_error_text(mine)}")
    if "values" not in mine:
        raise ChildFailed(f"the timed call did not return a plain tensor (it returned a "
                          f"{voice.class_name(mine['value'].get('type_name', 'value'))})")
    if mine["shape"] != theirs["shape"] or mine["dtype"] != theirs["dtype"]:
        raise ChildFailed(f"on the timing inputs it returned {voice.name_of(mine['dtype'])} of shape {tuple(mine['shape'])}, "
                          f"expected {theirs['dtype']} of shape {tuple(theirs['shape'])}")
    got, expected = torch.tensor(mine["values"], dtype=torch.float64), torch.tensor(theirs["values"], dtype=torch.float64)
    loose = spec["dtype"] in ("bfloat16", "float16")
    atol, rtol = (0.25, 0.05) if loose else (1e-3, 1e-3)
    if got.shape != expected.shape or not torch.allclose(got, expected, atol=atol, rtol=rtol):
        raise ChildFailed(f"on the timing inputs its output differs from the reference's ({which})")


def _describe(spec):
    return (f"{spec['device']}, {spec['dtype']}, B={spec['batch']} H={spec['heads']} "
            f"L={spec['length']} dh={spec['head_dim']}")


def share_words(fraction):
    return {1.0: "full points", 0.5: "half the points", 0.0: "no points"}.get(fraction, f"{fraction:g} of the points")


def fraction_for(ratio):
    for limit, fraction in _limits.TIMING_BANDS:
        if ratio <= limit:
            return fraction
    return 0.0


def cpu_allowance():
    """How many CPUs' worth of time this process may use: its affinity, and the tightest CPU quota of its
    control group and those above it (cgroup v2's cpu.max, v1's cpu.cfs_quota_us). Docker's ``--cpus 0.5``
    is such a quota; Gradescope's default container has half a CPU."""
    allowance = float(len(os.sched_getaffinity(0)))
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return allowance
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            roots, files = [Path("/sys/fs/cgroup")], ("cpu.max",)
        elif "cpu" in controllers.split(","):
            roots = [Path("/sys/fs/cgroup") / name for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")]
            files = ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        for root in roots:
            folder = root / path.lstrip("/")
            while True:
                allowance = min(allowance, _quota(folder, files))
                if folder == root or folder.parent == folder:
                    break
                folder = folder.parent
    return allowance


def _quota(folder, files):
    """The CPU quota of one cgroup folder, in CPUs (infinity where there is none or it cannot be read)."""
    try:
        if files == ("cpu.max",):
            quota, period = (folder / "cpu.max").read_text().split()
        else:
            quota, period = ((folder / name).read_text().strip() for name in files)
        if quota in ("max", "-1"):
            return float("inf")
        return int(quota) / int(period)
    except (OSError, ValueError):
        return float("inf")


def timing_clock(tier, allowance=None):
    """("wall" or "cpu", a line for the feedback or "") to time with; or (None, why) to skip the tier.

    The wall clock, from the grader's side, wherever the machine gives the grader a whole CPU or more. Below
    that (a container limited to part of a CPU), a call can be stopped for most of a period by the quota, and
    the wall clock counts the wait: the calls are timed instead by the runner's CPU time, which the quota
    does not stretch. That clock counts all of a job's work only where the job cannot start another
    process, which the job users' filter ensures for a timing job (tier C); elsewhere the tier is skipped
    by the rubric's rule for a machine without a reliable clock (_limits.TIMING_UNRELIABLE_CLOCK).
    """
    allowance = cpu_allowance() if allowance is None else allowance
    if allowance >= 1:
        return "wall", ""
    share = f"{allowance:g} CPU"
    if tier == JOB_USERS:
        return "cpu", (f"Timed by CPU time: this machine gives the grader {share}, so a call's wall-clock time "
                       "would include the waits its CPU quota imposes. The student's and the reference's calls "
                       "are both timed by their own CPU time, read by the grader from outside the job.")
    return None, f"this machine gives the grader {share}, too little for a reliable clock"


def timing_device(mode):
    """("cuda" or "cpu", None) to time on that device, or (None, why) when the tier is skipped."""
    if torch.cuda.is_available():
        return "cuda", None
    if mode == "cpu":
        return "cpu", None
    return None, f"no GPU on this grading machine, and the rubric says {mode!r} without one"


class ReferenceChildren:
    """One reference job per grading thread, started on first use and kept for the whole run.

    A reference job is a fork of the same pristine server as the students' jobs, in namespaces and a control
    group of its own like theirs: it never holds student code, and runs under the same conditions.
    """

    def __init__(self, reference_text, limits, server, unit):
        self.chunks = [{"label": "reference", "source": reference_text}]
        self.limits, self.server, self.unit = limits, server, unit
        self._local = threading.local()
        self._all = []
        self._lock = threading.Lock()

    def get(self):
        child = getattr(self._local, "child", None)
        if child is None or not child.alive:
            self.discard()
            child = ServeChild(self.server, self.chunks, "reference.py", self.limits, self.unit, reference=True)
            self._local.child = child
            with self._lock:
                self._all.append(child)
        return child

    def discard(self):
        """Stop this thread's reference job (if any): the next ``get`` starts a fresh one."""
        child = getattr(self._local, "child", None)
        self._local.child = None
        if child is not None:
            with self._lock:
                if child in self._all:
                    self._all.remove(child)
            child.close()

    def close(self):
        with self._lock:
            for child in self._all:
                child.close()
            self._all.clear()


def static_check(chunks, path, unit):
    """[(kind, text)]: loops (or recursion) in the path's functions and what they reach, and the bindings the
    check cannot follow ("refused"), from the submission's source. In the path's per-head functions (inputs
    that hold no position: a loop there runs once per head) only the bindings the check cannot follow count."""
    sources = [(chunk["label"], chunk["source"]) for chunk in chunks]
    found = findings(sources, list(path.functions))
    if path.per_head:
        found += [finding for finding in findings(sources, list(path.per_head))
                  if finding[0] == "refused" and finding not in found]
    return found


def helper_stand_ins(rubric, path, passed):
    """({helper: its stand-in}, the lines that say so) for the helpers of ``path`` whose value tests are not all in
    ``passed``: a helper that is wrong, left blank or cannot be used at all (its code did not compile, or raised
    before it was defined) has cost its own task's points already; the path is timed with the stand-in in its place,
    in both jobs (worker.path_with_stand_ins)."""
    stand_ins, lines = {}, []
    for task, helper, stand_in in path.helpers:
        wrong = [t.id for t in value_tests(rubric, (task,)) if t.id not in passed]
        if wrong:
            stand_ins[helper] = stand_in
            lines.append(f"Timed with the grader's stand-in for {helper} in its place: {', '.join(wrong)} "
                         "did not pass, and costs its own points only. The rest of the path is yours.")
    return stand_ins, lines


def value_tests(rubric, tasks):
    """The tests of ``tasks`` that check what their functions compute: a path is timed once these pass. A test of
    what a function refuses (one that ``needs`` another) says nothing of the timed call: a missing ValueError is
    charged there, once, not again in the timing tier."""
    return [test for task in tasks for test in rubric.tests_of(task) if not test.needs]


def withheld_words(rubric, path, test, failing):
    """The timing row of a path that is not timed because its correctness tests fail: the rubric's rule, its
    figure, and that it is charged once, here, beside what the mistake costs in its own task."""
    tasks = ", ".join(dict.fromkeys(rubric.TEST_BY_ID[t].task for t in failing))
    return (f"Not timed: every correctness test of this path must pass first, and {', '.join(failing)} did not. "
            f"These timing points need the path's correctness tests: you lose them once, here ({test.points} "
            f"points), besides what the mistake costs in {tasks}. A path is timed only when it computes the right "
            f"thing (the rubric's rule: a wrong path could be fast because it leaves work out); once {tasks} "
            "passes, the path is timed.")


# Said under a loop over positions. The static check finds the loops written in the text; what runs is measured,
# for every path: it is run at growing lengths and its steps counted (autograder/core/loop_check.py, ``counted``).
LOOP_ADVICE = ("A Python loop over positions gets no timing points, whatever its time: the grader runs the score path "
               "at growing sequence lengths and counts, in each call, the lines your code runs and the tensor "
               "operations; a count that changes with the length is a loop over positions. Use tensor operations "
               "(broadcasting, gather, indexing with a tensor of indices). A loop whose count stays the same as the "
               "length grows (over the heads, over (q, k), over a few settings) is timed like any other code.")


COUNT_DRAWN = 3  # lengths drawn afresh for each count, besides the fixed ones and the timed one
COUNT_TIMED = 4  # lengths of the calls about to be timed that the count runs at (drawn among them)
# Counted calls whose output is sampled and checked against the reference's, drawn among a count's calls (and the
# share of the recounts checked): a path that answers the count with something cheap and wrong does so at every
# counted call, since it cannot know which are checked (the grader draws that after the reply).
COUNT_CHECKED = 3
RECOUNT_CHECKED = 1 / 3


def count_lengths(rubric, device, rng, count_from=0, timed=()):
    """The sequence lengths a path's steps are counted at, shortest first: the fixed ``TIMING_COUNT_LENGTHS``, the
    length the tier times at on ``device``, the lengths of the calls it will time (``timed``, drawn before the
    count: see ``timed_lengths``), and ``COUNT_DRAWN`` lengths drawn with ``rng`` for this count alone between the
    shortest and the longest of those; none below the path's ``count_from`` (its count settles there, by its
    declared settings), the timed ones always. A loop that runs only at some lengths (above a threshold, at the
    lengths timed) shows at one of them; no list a submission could know in advance decides where it is counted."""
    timed = {rubric.TIMING_SIZES[device]["length"], *timed}
    fixed = {length for length in rubric.TIMING_COUNT_LENGTHS if length >= count_from} | timed
    low, high = min(fixed | {count_from}), max(fixed)
    drawn = {rng.randint(low + 1, high - 1) for _ in range(COUNT_DRAWN)} if high - low > 2 else set()
    return tuple(sorted(fixed | drawn))


def count_spec(rubric, path, stand_ins=None, device="cpu", lengths=None, dtype="float32"):
    """The timing job's spec for counting ``path``'s steps on ``device`` in ``dtype``: the sizes it is timed at
    there, up to the longest of ``lengths`` (by default ``TIMING_COUNT_LENGTHS``; each count names its own
    length)."""
    sizes = rubric.TIMING_SIZES[device]
    spec = {"path": path.name, "device": device, "dtype": dtype, "seed": rubric.SEED, **dict(path.settings),
            "warmup": 0, "batch": sizes["batch"], "heads": sizes["heads"],
            "length": max(lengths or rubric.TIMING_COUNT_LENGTHS), "head_dim": sizes["head_dim"]}
    if stand_ins:
        spec["stand_ins"] = dict(stand_ins)
    return spec


def count_loops(rubric, path, student, loops, lines, stand_ins=None, rng=None, device="cpu", reference=None,
                timed=(), settled=None):
    """Every timed path, whatever its static check found (``loops``: the loops it saw, maybe none), run in the
    student's job at each of ``count_lengths`` (``timed``: some of the lengths of the calls the tier will time) in
    each dtype it is timed in, with its steps counted (``loop_check.counted``): every line of the submission's code
    that runs, in any of its frames (a callback from C included: a sort key, an iterator's __next__, a
    __deepcopy__), and every torch operation. The outputs of ``COUNT_CHECKED`` counted calls, drawn, are checked
    against ``reference``'s on the same inputs, as a timed call's is. Returns None when the count stays the same at
    every length (the path is then timed; that count, per dtype, goes to ``settled``, for ``measure`` to count calls
    again between the timed ones), else the summary of a path that gets no timing points; the counts go to
    ``lines``. Raises ChildFailed when the job fails a count (a thread started while counting is refused: its work
    would not be counted)."""
    rng = rng or random.SystemRandom()
    lengths = count_lengths(rubric, device, rng, path.count_from, timed)
    counts = []
    for dtype in rubric.TIMING_SIZES[device]["dtypes"]:
        spec = count_spec(rubric, path, stand_ins, device, lengths, dtype)
        for child in (reference, student):
            if child is None:
                continue
            reply, _ = child.request({"command": "setup", "spec": spec}, SETUP_SECONDS)
            if "error" in reply:
                if child is reference:
                    raise ReferenceFailed(f"the reference failed on the inputs of the count: {_error_text(reply)}")
                raise ChildFailed(f"it raised {_error_text(reply)} on the inputs of the count of its steps "
                                  f"({_describe(spec)})")
        counts = []
        checked = set(rng.sample(range(len(lengths) + 1), min(COUNT_CHECKED, len(lengths) + 1)))
        # The first call is counted and set aside: what a path does once (a table built, a module imported) is not
        # a step of each call. It is made at a length counted nowhere else, so that each counted call is the first
        # at its length (a path that keeps a table per length is counted alike at every length). Then one call at
        # each length.
        aside = next(length for length in range(lengths[0] + 1, lengths[-1] + 2) if length not in lengths)
        for number, length in enumerate((aside,) + lengths):
            seed = rng.getrandbits(48)
            reply, _ = student.request({"command": "count", "seed": seed, "length": length}, SETUP_SECONDS)
            if "error" in reply:
                raise ChildFailed(f"it raised {_error_text(reply)} while its steps were counted at L = {length}")
            if not reply["intact"]:
                lines.append(f"Counted at L = {length}: the count was interfered with (the trace function that "
                             "counts, or the tracing of one of your frames, changed while the path ran), so it "
                             "cannot be trusted.")
                return "No points: the count of the score path's steps was interfered with."
            if reference is not None and number in checked:  # the call counted must compute what a timed one does
                try:
                    _run(reference, spec, rng, seed, length)
                except ChildFailed as error:
                    raise ReferenceFailed(f"the reference failed on the inputs of the count: {error}") from None
                _check_outputs(student, reference, spec, rng, f"the call counted at L = {length}")
            if number == 0:
                continue
            counts.append((length, reply["steps"] + reply["operations"]))
            if count_changes(counts):
                grows = counts[-1][1] > counts[0][1]
                where = f" ({dtype})" if len(rubric.TIMING_SIZES[device]["dtypes"]) > 1 else ""
                lines.append(f"Counted in one call at each sequence length{where} (lines of your code run, and "
                             f"tensor operations): {counts_words(counts)}. The count changes with the length: "
                             + ("the loop runs over positions." if grows else "the path runs other code at some "
                                "lengths than at others (a branch on the length, or work on some calls only), "
                                "which the count cannot tell from a loop over positions."))
                lines.append(LOOP_ADVICE)
                seen = f" ({loops[0]})" if loops else " (the static check saw none: it runs where no loop is written)"
                return f"No points: a Python loop over positions{seen}."
        if settled is not None:
            settled[dtype] = (counts[0][1], {aside, *lengths})
    said = "The loop's count does" if loops else "The count does"
    lines.append(f"Counted in one call at each sequence length (lines of your code run, and tensor operations): "
                 f"{counts[0][1]} at every length from L = {counts[0][0]} to {counts[-1][0]} ({len(counts)} lengths, "
                 f"among them those of the calls timed, some drawn for this count). {said} not change with the "
                 "length: it is not a loop over positions, "
                 "and the path is timed.")
    return None


def grade_tier(unit, submission, passed, mode, references, machine, limits, server):
    """The timing tier of one submission of ``unit``: [(rubric test, fraction of its points, feedback lines)].

    ``passed`` holds the ids of the correctness tests it passed; ``mode`` is what to do without a GPU. From
    the moment the student's code is loaded until its job has ended, the machine is this tier's alone.
    """
    rubric = unit.rubric
    device, skipped = timing_device(mode)
    clock, clock_note = "wall", ""
    if device == "cpu" and not skipped:
        clock, clock_note = timing_clock(server.tier)
        if clock is None:
            skipped, mode = clock_note, rubric.TIMING_UNRELIABLE_CLOCK
    graded, timed = [], []
    for path in rubric.TIMED_PATHS:
        test = rubric.TEST_BY_ID[path.test]
        failing = [t.id for t in value_tests(rubric, path.requires) if t.id not in passed]
        if failing:
            graded.append((test, 0, [withheld_words(rubric, path, test, failing)]))
            continue
        found = static_check(submission.chunks, path, unit)
        refused = [text for kind, text in found if kind == "refused"]
        loops = [text for kind, text in found if kind != "refused"]
        if refused:
            graded.append((test, 0, [
                f"No points: the static check cannot read how the score path is made ({refused[0]}).",
                "Static check: " + "; ".join(text for _, text in found),
                "The timing tier times only a path it can check for loops: define its functions with def, "
                "call them by their names, and leave exec, globals() and the like out of the submission."]))
            continue
        lines = [f"Static check: Python loops in the score path ({'; '.join(loops)}); what they run over is "
                 "counted below." if loops else f"Static check: no Python loop in {', '.join(path.functions)}."]
        stand_ins, said = helper_stand_ins(rubric, path, passed)
        lines += said
        if skipped:
            given = mode == "give"
            lines.insert(0, f"Not timed: {skipped}; the rubric says {mode!r} there, so its points are "
                            f"{'given' if given else 'withheld'}.")
            graded.append((test, 1.0 if given else 0.0, lines))
            continue
        graded.append(None)
        timed.append((len(graded) - 1, path, test, lines, stand_ins, loops))
    if timed:
        budget, budgeted = TierBudget(_limits.TIMING_TIER_SECONDS, _limits.TIMING_TIER_FACTOR), []
        with machine.exclusive() if machine is not None else contextlib.nullcontext():
            student = None
            try:
                for at, path, test, lines, stand_ins, loops in timed:
                    if budget.left() <= 0:  # spent on an earlier path: this one is not started
                        graded[at] = (test, 0.0, [f"No points: {budget.spent_words()}."] + lines)
                        continue
                    if clock_note:
                        lines.append(clock_note)
                    seen = None  # the first sighting of the job working between commands, if any
                    for attempt in range(1, PATH_ATTEMPTS + 1):
                        try:
                            if student is None or not student.alive:  # a job that failed a path is not reused
                                if student is not None:
                                    student.close()
                                student = ServeChild(server, submission.chunks, submission.path.name, limits, unit)
                            reference = references.get()
                            student.clock = reference.clock = clock
                            student.budget = reference.budget = budget
                            budgeted.append(reference)
                            told = list(lines)
                            fraction, summary = _time_path(rubric, path, device, student, reference, told, stand_ins,
                                                           loops, again=seen is None and attempt < PATH_ATTEMPTS)
                            if seen is not None:
                                told.append(f"Timed again from the start, in fresh jobs: in a first timing, {seen}. "
                                            "Once can be the machine's noise; this timing stands.")
                            break
                        except BackgroundWork as error:
                            student.close()
                            student, seen = None, str(error).split(":")[0]
                        except (ReferenceFailed, ServerFailed):
                            # The grader's fault (its reference job failed, or the machine could not start a
                            # job): both jobs are started afresh and the path is timed again from the start.
                            references.discard()
                            if student is not None:
                                student.close()
                                student = None
                            if attempt == PATH_ATTEMPTS:
                                raise  # the row says the tier failed, through no fault of the submission
                            time.sleep(0.5 * attempt)
                    graded[at] = (test, fraction, [summary] + told)
            finally:
                if student is not None:
                    student.close()  # within the hold: nothing of it runs once another's code does
                for child in budgeted:
                    child.budget = None  # a reference job serves the next submission, with a budget of its own
    return graded


PATH_ATTEMPTS = 3  # a path whose timing failed through the grader's fault is timed again this many times at most


def _time_path(rubric, path, device, student, reference, lines, stand_ins=None, loops=(), again=False):
    """Measure one path in every dtype of the device's sizes; returns (fraction of the points, summary). Every path
    has its steps counted first (``count_loops``), whatever the static check saw (``loops``, its first message to
    the student): one that loops over positions is not timed."""
    sizes, rng = rubric.TIMING_SIZES[device], random.SystemRandom()
    specs = []
    for dtype in sizes["dtypes"]:
        spec = {"path": path.name, "device": device, "dtype": dtype, "seed": rubric.SEED, **dict(path.settings),
                "warmup": rubric.TIMING_WARMUP, **{key: sizes[key] for key in ("batch", "heads", "length",
                                                                                 "head_dim")}}
        if stand_ins:
            spec["stand_ins"] = dict(stand_ins)
        specs.append((spec, timed_lengths(spec, rng)))  # drawn now, so that the count runs at some of them
    settled = {}
    try:
        every_timed = sorted({length for _, lengths in specs for length in lengths})
        verdict = count_loops(rubric, path, student, loops, lines, stand_ins, rng, device, reference,
                              timed=rng.sample(every_timed, min(COUNT_TIMED, len(every_timed))), settled=settled)
    except ChildFailed as error:
        if again and isinstance(error, BackgroundWork):
            raise
        lines.append(f"Count of the path's steps: not made: {error}.")
        return 0.0, f"No points: {error}."
    if verdict:
        return 0.0, verdict
    for _, used in settled.values():  # no recount at a length a timed call will have had (a table kept per length)
        used.update(every_timed)
    fractions, summaries = [], []
    for spec, planned in specs:
        dtype, where = spec["dtype"], _describe(spec)
        try:
            measured = measure(student, reference, spec, rng, planned, settled.get(dtype))
        except ChildFailed as error:
            if again and isinstance(error, BackgroundWork):
                raise
            lines.append(f"Time ({where}): not measured: {error}.")
            return 0.0, f"No points: {error}."
        fraction, noise = band_verdict(measured.ratio, measured.pairs)
        bands = ", ".join(f"{share_words(share)} within {limit:g}x" for limit, share in rubric.TIMING_BANDS)
        lines.append(f"Time ({where}): {measured.ratio:.2f}x the reference ({measured.student_ms:.2f} ms against "
                     f"{measured.reference_ms:.2f} ms, median of {measured.pairs} interleaved pairs): "
                     f"{share_words(fraction)} ({bands})." + (f" {noise}" if noise else ""))
        if measured.student_bytes is not None:
            item_bytes = torch.empty((), dtype=getattr(torch, dtype)).element_size()
            score_bytes = spec["batch"] * spec["heads"] * spec["length"] ** 2 * item_bytes
            limit = rubric.TIMING_MEMORY_SCORES * score_bytes
            over = measured.student_bytes > limit
            lines.append(f"Memory: one call needs {measured.student_bytes / 2**20:.0f} MiB beyond its inputs "
                         f"({measured.student_bytes / score_bytes:.1f} score-sized tensors); the limit is "
                         f"{rubric.TIMING_MEMORY_SCORES} ({limit / 2**20:.0f} MiB)"
                         + (". Over it: no timing points. Look for a tensor of shape (..., Lq, Lk, dh): it holds "
                            "dh numbers for every score." if over else "."))
            if over:
                fraction = 0.0
                summaries.append(f"memory {measured.student_bytes / score_bytes:.0f} score-sized tensors, over "
                                 f"the limit of {rubric.TIMING_MEMORY_SCORES} ({dtype})")
        summaries.append(f"{measured.ratio:.2f}x the reference's time ({device}, {dtype})")
        fractions.append(fraction)
    fraction = min(fractions)
    return fraction, f"{share_words(fraction).capitalize()}: " + "; ".join(summaries) + "."
