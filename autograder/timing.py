"""The timing tier: the student's score path against the reference, timed from the grader's side.

Two paths are timed (``rubric.TIMED_PATHS``): ``shaw_scores`` with its helper,
and ``biased_scores(q, k, t5_bias(...))`` with its. A path is timed only when
the correctness tests of all its tasks pass, and gets no points when its
functions hold a Python loop (a static check of the source, reported on its
own line). Otherwise:

* Two children run the same worker (``worker.py --serve``): one with the
  student's code, one with the reference and nothing else. Both build the same
  inputs from the same seed and warm up.
* The grader sends "run" to one child at a time, alternating which goes first,
  and measures each call with its own clock, from the command sent to the
  reply received. The student's code can replace every clock in its process;
  none of them is read. The figure is the median of the per-pair ratios
  student/reference, so noise that hits both alike cancels out.
* Peak memory of one call above its inputs: on the CPU the kernel's own
  high-water mark of each child (``/proc/PID/status``, reset through
  ``/proc/PID/clear_refs``); on CUDA the allocator's peak, read with functions
  the worker took before the student's code ran.
* After the last call, output entries at indices drawn only then are compared
  with the reference's, so a path cannot be fast by not computing its output.
"""

import contextlib
import json
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

from autograder import rubric
from autograder.compare import loops_in
from autograder.sandbox import ForkServer, frame, send_all, tail

SAMPLES = 256
SETUP_SECONDS = 60.0  # start, import torch, build the inputs and warm up


class ChildFailed(Exception):
    """The child died, broke the protocol, or ran past its time; the message says which, for the student."""


class ServeChild:
    """A timing job of a fork server, with the code of ``chunks`` loaded; commands and replies are JSON lines."""

    def __init__(self, server, chunks, filename, memory_bytes):
        self.output = tempfile.TemporaryFile()
        limits = {"RLIMIT_AS": memory_bytes, "RLIMIT_CORE": 0, "RLIMIT_FSIZE": 64 * 1024**2}
        # Traceable: the grader reads and restarts its memory high-water mark through /proc.
        self.job = server.spawn({"mode": "serve", "traceable": True}, self.output.fileno(), self.output.fileno())
        header = json.dumps({"filename": filename, "chunks": chunks, "limits": limits}).encode()
        self._commands, self._replies = self.job.input, self.job.output
        self._buffer = b""
        if not send_all(self._commands, frame(b"S", header)):
            raise ChildFailed(self._gone())

    @property
    def alive(self):
        return not self.job.poll()

    @property
    def worker_pid(self):
        """The job's process id on this machine."""
        return self.job.host_pid

    def request(self, command, timeout):
        """Send one command and return (reply, seconds from send to reply) by the grader's clock."""
        started = time.perf_counter()
        try:
            os.write(self._commands, (json.dumps(command) + "\n").encode())
        except OSError:
            raise ChildFailed(self._gone()) from None
        deadline = started + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ChildFailed(f"one call took more than {timeout:g} s")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = os.read(self._replies, 1 << 16)
                if not chunk:
                    raise ChildFailed(self._gone())
                self._buffer += chunk
        elapsed = time.perf_counter() - started
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line), elapsed
        except ValueError:
            raise ChildFailed("its process wrote something that is not a reply where replies go") from None

    def _gone(self):
        self.job.read_line(time.monotonic() + 2)
        if not self.job.ended:
            return "its process stopped answering"
        code = self.job.exit_code
        last = tail(self.output, 600).strip()
        return f"its process ended (exit status {code})" + (f"; its last output: {last}" if last else "")

    def reset_memory_peak(self):
        """Restart the kernel's high-water mark of the child's resident memory; returns the resident bytes now."""
        try:
            Path(f"/proc/{self.worker_pid}/clear_refs").write_text("5")
            return _proc_status(self.worker_pid, "VmRSS")
        except (OSError, TypeError):
            return None

    def memory_peak(self):
        try:
            return _proc_status(self.worker_pid, "VmHWM")
        except (OSError, TypeError):
            return None

    def close(self):
        self.job.stop()
        self.output.close()


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
    error = reply["error"]
    where = f" at {error['where']}" if error.get("where") else ""
    text = f"{error['type']}: {error['message']}{where}"
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


def measure(student, reference, spec, machine=None):
    """Time the spec's path in the two children, interleaved; raises ChildFailed with the student's problem.

    ``machine`` (a ReadersWriter) is held exclusively while anything is measured.
    """
    for child in (student, reference):  # start-up and inputs: no measurement yet, so no need for the machine
        reply, _ = child.request({"command": "setup", "spec": {**spec, "warmup": 0}}, SETUP_SECONDS)
        if "error" in reply:
            if child is reference:
                raise RuntimeError(f"the reference failed on the timing inputs: {_error_text(reply)}")
            raise ChildFailed(f"it raised {_error_text(reply)} on the timing inputs ({_describe(spec)})")
    with machine.exclusive() if machine is not None else contextlib.nullcontext():
        return _measure(student, reference, spec)


def _measure(student, reference, spec):
    extra = {}
    # One call of each, alone, for its peak memory. On the CPU: how far the child's resident memory rises
    # above what it was just before (the kernel's high-water mark, VmHWM, restarted through clear_refs),
    # with every large tensor in a fresh mapping for that call, so none reuses memory freed earlier.
    # On CUDA: the allocator's peak above what was allocated before the call.
    for child in (student, reference):
        reply, _ = child.request({"command": "reset_peak", "fresh_mappings": True}, SETUP_SECONDS)
        before = child.reset_memory_peak()
        reply_run, _ = child.request({"command": "run", "nonce": 0}, rubric.TIMING_CALL_SECONDS)
        if "error" in reply_run:
            raise ChildFailed(f"it raised {_error_text(reply_run)} on the timing inputs ({_describe(spec)})")
        if spec["device"].startswith("cuda"):
            sampled, _ = child.request({"command": "sample", "indices": [0]}, SETUP_SECONDS)
            peak, base = sampled.get("cuda_peak"), reply.get("cuda_baseline")
            extra[child] = None if peak is None or base is None else peak - base
        else:
            peak = child.memory_peak()
            extra[child] = None if peak is None or before is None else max(peak - before, 0)
        child.request({"command": "reset_peak", "fresh_mappings": False}, SETUP_SECONDS)
    for _ in range(spec["warmup"]):
        for child in (student, reference):
            reply, _ = child.request({"command": "run", "nonce": 0}, rubric.TIMING_CALL_SECONDS)
            if "error" in reply:
                raise ChildFailed(f"it raised {_error_text(reply)} on the timing inputs ({_describe(spec)})")
    rng = random.SystemRandom()
    ratios, student_times, reference_times = [], [], []
    for pair in range(rubric.TIMING_REPEATS):
        order = (student, reference) if pair % 2 == 0 else (reference, student)
        seconds = {}
        for child in order:
            nonce = rng.getrandbits(62)
            reply, elapsed = child.request({"command": "run", "nonce": nonce}, rubric.TIMING_CALL_SECONDS)
            if "error" in reply:
                raise ChildFailed(f"it raised {_error_text(reply)} on the timing inputs ({_describe(spec)})")
            if reply.get("done") != nonce:
                raise ChildFailed("its process answered a call it was not given")
            seconds[child] = elapsed
        ratios.append(seconds[student] / seconds[reference])
        student_times.append(seconds[student])
        reference_times.append(seconds[reference])
        if pair >= 2 and statistics.median(ratios) > 3 * rubric.TIMING_BANDS[-1][0]:
            break  # far beyond the last band: more pairs would not change the verdict
    _check_sample(student, reference, spec, rng)
    measurement = Measurement(statistics.median(ratios), 1000 * statistics.median(student_times),
                              1000 * statistics.median(reference_times), len(ratios))
    if extra.get(student) is not None and extra.get(reference) is not None:
        measurement.student_bytes, measurement.reference_bytes = extra[student], extra[reference]
    return measurement


def _check_sample(student, reference, spec, rng):
    batch, heads, length = spec["batch"], spec["heads"], spec["length"]
    size = batch * heads * length * length
    indices = sorted(rng.sample(range(size), min(SAMPLES, size)))
    mine, _ = student.request({"command": "sample", "indices": indices}, SETUP_SECONDS)
    theirs, _ = reference.request({"command": "sample", "indices": indices}, SETUP_SECONDS)
    if "values" not in mine:
        raise ChildFailed("the timed call did not return a tensor")
    if mine["shape"] != theirs["shape"] or mine["dtype"] != theirs["dtype"]:
        raise ChildFailed(f"on the timing inputs it returned {mine['dtype']} of shape {tuple(mine['shape'])}, "
                          f"expected {theirs['dtype']} of shape {tuple(theirs['shape'])}")
    got, expected = torch.tensor(mine["values"]), torch.tensor(theirs["values"])
    loose = spec["dtype"] in ("bfloat16", "float16")
    atol, rtol = (0.25, 0.05) if loose else (1e-3, 1e-3)
    if got.shape != expected.shape or not torch.allclose(got, expected, atol=atol, rtol=rtol):
        raise ChildFailed("on the timing inputs its output differs from the reference's")


def _describe(spec):
    return (f"{spec['device']}, {spec['dtype']}, B={spec['batch']} H={spec['heads']} "
            f"L={spec['length']} dh={spec['head_dim']}")


def share_words(fraction):
    return {1.0: "full points", 0.5: "half the points", 0.0: "no points"}.get(fraction, f"{fraction:g} of the points")


def fraction_for(ratio):
    for limit, fraction in rubric.TIMING_BANDS:
        if ratio <= limit:
            return fraction
    return 0.0


def timing_device(mode):
    """("cuda" or "cpu", None) to time on that device, or (None, why) when the tier is skipped."""
    if torch.cuda.is_available():
        return "cuda", None
    if mode == "cpu":
        return "cpu", None
    return None, f"no GPU on this grading machine, and the rubric says {mode!r} without one"


class ReferenceChildren:
    """One reference child per grading thread, started on first use and kept for the whole run."""

    def __init__(self, reference_text, memory_bytes, sandboxed=True):
        self.chunks = [{"label": "reference", "source": reference_text}]
        self.memory_bytes = memory_bytes
        self.sandboxed = sandboxed  # as the students' children are, so that both run alike
        self._server = None  # a fork server of its own: no student's job shares it
        self._local = threading.local()
        self._all = []
        self._lock = threading.Lock()

    def get(self):
        child = getattr(self._local, "child", None)
        if child is None or not child.alive:
            with self._lock:
                if self._server is None:
                    self._server = ForkServer(self.sandboxed)
            child = ServeChild(self._server, self.chunks, "reference.py", self.memory_bytes)
            self._local.child = child
            with self._lock:
                self._all.append(child)
        return child

    def close(self):
        with self._lock:
            for child in self._all:
                child.close()
            self._all.clear()
            if self._server is not None:
                self._server.close()
                self._server = None


def static_check(chunks, path):
    """Loops found in the path's functions (and what they call), from the submission's source."""
    return loops_in([(chunk["label"], chunk["source"]) for chunk in chunks], list(path.functions))


def grade_tier(submission, passed, mode, references, machine, memory_bytes, server):
    """The timing tier of one submission: [(rubric test, fraction of its points, lines of feedback)].

    ``passed`` holds the ids of the correctness tests it passed; ``mode`` is what to do without a GPU.
    """
    device, skipped = timing_device(mode)
    graded, student = [], None
    try:
        for path in rubric.TIMED_PATHS:
            test = rubric.TEST_BY_ID[path.test]
            failing = [t.id for task in path.requires for t in rubric.tests_of(task) if t.id not in passed]
            if failing:
                graded.append((test, 0, [f"Not timed: every correctness test of this path must pass first, "
                                         f"and {', '.join(failing)} did not."]))
                continue
            loops = static_check(submission.chunks, path)
            if loops:
                graded.append((test, 0, [
                    f"No points: a Python loop in the score path ({loops[0]}).",
                    "Static check: " + "; ".join(loops),
                    "A loop over positions gets no timing points, whatever its time: use tensor operations "
                    "(broadcasting, gather, indexing with a tensor of indices)."]))
                continue
            lines = [f"Static check: no Python loop in {', '.join(path.functions)}."]
            if skipped:
                given = mode == "give"
                lines.insert(0, f"Not timed: {skipped}; its points are {'given' if given else 'withheld'}.")
                graded.append((test, 1.0 if given else 0.0, lines))
                continue
            if student is None or not student.alive:
                student = ServeChild(server, submission.chunks, submission.path.name, memory_bytes)
            fraction, summary = _time_path(path, device, student, references.get(), machine, lines)
            graded.append((test, fraction, [summary] + lines))
    finally:
        if student is not None:
            student.close()
    return graded


def _time_path(path, device, student, reference, machine, lines):
    """Measure one path in every dtype of the device's sizes; returns (fraction of the points, summary)."""
    sizes = rubric.TIMING_SIZES[device]
    fractions, summaries = [], []
    for dtype in sizes["dtypes"]:
        spec = {"path": path.name, "device": device, "dtype": dtype, "seed": rubric.SEED,
                "max_relative": rubric.TIMING_MAX_RELATIVE, "num_buckets": rubric.TIMING_NUM_BUCKETS,
                "warmup": rubric.TIMING_WARMUP, **{key: sizes[key] for key in ("batch", "heads", "length",
                                                                                 "head_dim")}}
        where = _describe(spec)
        try:
            measured = measure(student, reference, spec, machine)
        except ChildFailed as error:
            lines.append(f"Time ({where}): not measured: {error}.")
            return 0.0, f"No points: {error}."
        fraction = fraction_for(measured.ratio)
        bands = ", ".join(f"{share_words(share)} within {limit:g}x" for limit, share in rubric.TIMING_BANDS)
        lines.append(f"Time ({where}): {measured.ratio:.2f}x the reference ({measured.student_ms:.2f} ms against "
                     f"{measured.reference_ms:.2f} ms, median of {measured.pairs} interleaved pairs): "
                     f"{share_words(fraction)} ({bands}).")
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
