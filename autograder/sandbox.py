"""Run a submission's code in a child process, under limits, and collect what it returns.

The child is ``python -I worker.py WORKDIR`` inside bubblewrap (``bwrap``):
new user, PID, network, IPC, UTS and mount namespaces; the Python environment
and the system's libraries read-only; the worker file alone of the grader;
the submission's work folder and a private /tmp writable; nothing else (not
the reference, the hidden cases, the rubric or other submissions, wherever
they are on disk). It runs in its own session, with limits on address space,
file size and CPU time, a wall-clock limit for the whole submission and one
for each task. A task that hangs or
kills its process is marked and the child is started again for the tasks
after it, so one bad function costs only its own points.

What comes back is read with ``torch.load(weights_only=True)`` and checked to
be plain data and plain tensors: nothing from the child is unpickled into
objects or executed here.
"""

import io
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from autograder import rubric

WORKER = Path(__file__).with_name("worker.py")
# The grader's package and the reference: hidden inside the sandbox even where they were installed into
# the Python environment that it mounts (pip install ., not -e), by an empty folder mounted over them.
KIT_FOLDERS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "solutions")
POLL_SECONDS = 0.02


@dataclass
class Limits:
    wall_seconds: float = rubric.WALL_SECONDS
    task_seconds: float = rubric.TASK_SECONDS
    memory_bytes: int = rubric.MEMORY_BYTES
    output_bytes: int = rubric.OUTPUT_BYTES
    sandboxed: bool = True  # run the worker inside bubblewrap (see resolve_sandbox)


@dataclass
class RunOutcome:
    loaded: dict = None  # {"errors": [...], "defined": [...]} once the submission's code has run
    results: dict = field(default_factory=dict)  # task -> {probe id: outcome}
    failures: dict = field(default_factory=dict)  # task -> why it has no results
    load_failure: str = ""  # set when the code never finished loading
    stderr: str = ""


def serialize_plan(cases_by_task):
    """The probes of every task as bytes, made once per grading run and written for each child."""
    plan = {"tasks": [{"task": task, "probes": [case.probe for case in cases]} for task, cases in cases_by_task.items()]}
    buffer = io.BytesIO()
    torch.save(plan, buffer)
    return buffer.getvalue()


def _child_limits(limits):
    """Resource limits the worker sets on itself before it runs the submission."""
    return {
        "RLIMIT_AS": limits.memory_bytes,
        "RLIMIT_CPU": int(limits.wall_seconds * 2) + 5,
        "RLIMIT_FSIZE": 256 * 1024**2,
        "RLIMIT_CORE": 0,
    }


SANDBOX_WORK = "/work"  # the submission's work folder, as the sandboxed worker sees it
SANDBOX_WORKER = "/sandbox/worker.py"
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache", "/etc/ld.so.conf",
                "/etc/ld.so.conf.d", "/etc/alternatives")


class SandboxMissing(RuntimeError):
    """bubblewrap is not installed, and the caller did not allow grading without it."""


def bubblewrap():
    """The path of ``bwrap``, or None."""
    return shutil.which("bwrap")


def resolve_sandbox(choice):
    """"required", "auto" or "off" -> whether to sandbox; raises SandboxMissing for "required" without bwrap."""
    if choice == "off":
        return False
    if bubblewrap():
        return True
    if choice == "required":
        raise SandboxMissing(
            "bubblewrap (bwrap) is not installed, so student code cannot be sandboxed. Install it "
            "(Debian/Ubuntu: apt-get install bubblewrap), or grade WITHOUT a sandbox, trusting the code, "
            "with --unsandboxed.")
    print("WARNING: bubblewrap (bwrap) is not installed: the code runs WITHOUT a sandbox, able to read and "
          "write whatever this user can.", file=sys.stderr)
    return False


def sandbox_options():
    """bubblewrap's options for a sandbox, without the program: (options, the folders mounted read-only).

    New user, PID, network, IPC, UTS and cgroup namespaces; the system's libraries and the Python
    environment read-only, with the grader's package and the reference covered; a private /tmp.
    """
    readable = [path for path in SYSTEM_PATHS if os.path.lexists(path)]
    for prefix in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        if prefix not in readable and not any(prefix.startswith(path + "/") for path in readable):
            readable.append(prefix)
    options = [bubblewrap() or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
               "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in readable:
        options += ["--ro-bind", path, path]
    if os.path.exists("/dev/nvidiactl"):  # a GPU: its device files, and what CUDA reads in /sys
        options += ["--dev-bind", "/dev", "/dev", "--ro-bind", "/sys", "/sys"]
    for folder in map(str, KIT_FOLDERS):
        if any(folder == path or folder.startswith(path.rstrip("/") + "/") for path in readable):
            options += ["--tmpfs", folder]
    return options, readable


def server_command(control_fd, sandboxed=True, isolate=True):
    """The command line of the worker's fork server (inside bubblewrap when ``sandboxed``)."""
    arguments = ["--zygote", str(control_fd)] + (["--isolate"] if isolate else [])
    if not sandboxed:
        return [sys.executable, "-I", str(WORKER), *arguments]
    command, readable = sandbox_options()
    command += ["--tmpfs", SANDBOX_WORK, "--ro-bind", str(WORKER), SANDBOX_WORKER, "--chdir", SANDBOX_WORK]
    for path in readable:  # below a folder that each job gets afresh: the job mounts it again
        if any(path.startswith(folder + "/") for folder in ("/tmp", SANDBOX_WORK, "/dev/shm")):
            arguments += ["--keep", path]
    return command + [sys.executable, "-I", SANDBOX_WORKER, *arguments]


def child_environment(sandboxed=True):
    """What the worker gets as its environment: nothing of the grader's beyond PATH (and CUDA's)."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": SANDBOX_WORK if sandboxed else tempfile.gettempdir(),
        "TMPDIR": "/tmp" if sandboxed else tempfile.gettempdir(),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        if name in os.environ:
            environment[name] = os.environ[name]
    return environment


def _is_plain(value, depth=0):
    if depth > 8:
        return False
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is torch.Tensor:
        return True
    if type(value) is list:
        return all(_is_plain(item, depth + 1) for item in value)
    if type(value) is dict:
        return all(type(key) is str and _is_plain(item, depth + 1) for key, item in value.items())
    return False


def _read_results(payload):
    try:
        data = torch.load(io.BytesIO(payload), weights_only=True, map_location="cpu")
    except Exception as error:
        return None, f"its results could not be read ({type(error).__name__})"
    if not isinstance(data, dict) or not _is_plain(data):
        return None, "its results were not plain data"
    return data, ""


def tail(handle, limit):
    """The last ``limit`` bytes written to the open file ``handle``, as text."""
    try:
        size = os.fstat(handle.fileno()).st_size
        text = os.pread(handle.fileno(), limit, max(0, size - limit)).decode("utf-8", "replace")
    except OSError:
        return ""
    return ("[...]\n" if size > limit else "") + text


def _describe_exit(code):
    if code is None:
        return "it was still running"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hint = " (out of memory or address space?)" if -code in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT) else ""
        return f"the process was killed by {name}{hint}"
    return (f"the process exited with status {code}: does your code call sys.exit(), exit(), quit() or "
            f"os._exit()? Remove those calls")


def _descendants(pid):
    """Every process below ``pid``: inside bubblewrap the worker runs in sessions of its own."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            children = [int(child) for child in Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except OSError:
            continue
        found += children
        todo += children
    return found


def kill(process):
    """Kill the child, its process group and everything below it, and wait until they are gone."""
    below = _descendants(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
        time.sleep(0.01)


def _alive(pid):
    """Whether ``pid`` still runs: a zombie has closed its files, and may never be reaped here."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")


def _namespace_pids(pid):
    """The process's ids from this machine's PID namespace inward (the NSpid line of its status)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(number) for number in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


class ServerFailed(RuntimeError):
    """The fork server could not start a job (a fault of the grader's machine, not of a submission)."""


class ForkServer:
    """The worker as a fork server: torch is imported once, and each job is a fork of it.

    Sandboxed, the server runs inside bubblewrap (see ``server_command``) and each job moves into
    namespaces of its own (``--isolate``; see the worker), so jobs that share the server see neither
    each other nor anything of the grader's. Where the kernel refuses namespaces inside bubblewrap,
    each job gets a server (and so a bubblewrap sandbox) of its own instead: as safe, and slower.
    """

    START_SECONDS = 120.0  # start bubblewrap and import torch, on a loaded machine
    STOP_SECONDS = 10.0

    def __init__(self, sandboxed=True, isolate=None):
        self.sandboxed = sandboxed
        self.isolate = sandboxed if isolate is None else isolate
        self._lock = threading.Lock()
        self.process = self.control = None
        self._start()
        try:
            self._probe()
        except ServerFailed as error:
            self.close()
            if not self.isolate:
                raise
            print(f"NOTE: jobs cannot have namespaces of their own inside bubblewrap here ({error}); "
                  "each submission gets a bubblewrap sandbox of its own instead (slower).", file=sys.stderr)
            self.isolate = False
            self._start()
            try:
                self._probe()
            except ServerFailed:
                self.close()
                raise
        self.shared = self.isolate or not self.sandboxed  # may jobs share this server?

    def _probe(self):
        """Fork a job that does nothing, as every job will be set up; raises ServerFailed if that fails."""
        probe = self._spawn({"mode": "probe"}, None, None)
        probe.wait(time.monotonic() + self.START_SECONDS)
        probe.stop()
        if probe.failure or probe.exit_code != 0:
            raise ServerFailed(probe.failure or f"a job that does nothing ended with status {probe.exit_code}")

    def _start(self):
        control, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                server_command(child_end.fileno(), self.sandboxed, self.isolate), stdin=subprocess.DEVNULL,
                stdout=self.log, stderr=self.log, env=child_environment(self.sandboxed),
                cwd=tempfile.gettempdir(), pass_fds=(child_end.fileno(),), start_new_session=True)
        finally:
            child_end.close()
        self.control = control

    def close(self):
        with self._lock:
            if self.control is not None:
                self.control.close()
                self.control = None
            if self.process is not None:
                kill(self.process)
                self.log.close()
                self.process = None

    def spawn(self, request, stdout=None, stderr=None):
        """Start a job (``request``: mode, workdir, environment, traceable); returns its Job."""
        if not self.shared:
            server = ForkServer(self.sandboxed, isolate=False)
            job = server._spawn(request, stdout, stderr)
            job.own_server = server
            return job
        return self._spawn(request, stdout, stderr)

    def _spawn(self, request, stdout, stderr):
        lifeline, lifeline_child = socket.socketpair()
        job_in, to_job = os.pipe()
        from_job, job_out = os.pipe()
        null = None
        if stdout is None or stderr is None:
            null = os.open(os.devnull, os.O_WRONLY)
        if not self.sandboxed and not request.get("workdir"):
            request = dict(request, workdir=tempfile.gettempdir())
        sent = [lifeline_child.fileno(), job_in, job_out, stdout if stdout is not None else null,
                stderr if stderr is not None else null]
        try:
            with self._lock:
                for attempt in (1, 2):
                    if self.process is None or self.process.poll() is not None:
                        self._restart_locked()
                    try:
                        socket.send_fds(self.control, [json.dumps(request).encode()], sent)
                        break
                    except OSError:
                        if attempt == 2:
                            said = " ".join(tail(self.log, 600).split())
                            raise ServerFailed("the fork server does not take requests"
                                               + (f"; it said: {said}" if said else "")) from None
                        self.process.kill()
        finally:
            for fd in (lifeline_child.detach(), job_in, job_out) + ((null,) if null is not None else ()):
                os.close(fd)
        job = Job(self, lifeline, to_job, from_job)
        reply = job.read_line(time.monotonic() + self.START_SECONDS)
        if reply is None or "pid" not in reply:
            problem = (reply or {}).get("failed") or "no reply"
            said = tail(self.log, 600).strip() if self.process is not None else ""
            job.stop()
            raise ServerFailed(problem + (f"; the server said: {said}" if said else ""))
        job.pid = reply["pid"]
        return job

    def _restart_locked(self):
        if self.process is not None:
            kill(self.process)
            self.log.close()
        if self.control is not None:
            self.control.close()
        self._start()


class Job:
    """One job of a ForkServer: its input and output pipes, and its lifeline to the job's keeper."""

    def __init__(self, server, lifeline, to_job, from_job):
        self.server, self.lifeline, self.input, self.output = server, lifeline, to_job, from_job
        self.pid, self.exit_code, self.own_server, self.writer = None, None, None, None
        self.ended, self.failure = False, ""
        self._lines = b""
        self._host_pid = None

    def read_line(self, deadline):
        """The keeper's next message (a dict), or None when it is gone or ``deadline`` passed."""
        while b"\n" not in self._lines:
            if self.ended or not select.select([self.lifeline], [], [], max(0, deadline - time.monotonic()))[0]:
                return None
            try:
                chunk = self.lifeline.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                self.ended = True  # the keeper is gone without a word
                return None
            self._lines += chunk
        line, self._lines = self._lines.split(b"\n", 1)
        message = json.loads(line)
        if "exit" in message:
            self.exit_code, self.ended = message["exit"], True
        if "failed" in message:  # the job could not be set up: a fault of the machine, not of the code
            self.failure, self.ended = message["failed"], True
        return message

    def wait(self, deadline):
        """Wait until the job ends or ``deadline`` passes; returns whether it ended."""
        while not self.ended and self.read_line(deadline) is not None:
            pass
        return self.ended

    def poll(self):
        """Whether the job has ended (without waiting); its status is then in ``exit_code``."""
        while not self.ended and self.read_line(time.monotonic()) is not None:
            pass
        return self.ended

    @property
    def host_pid(self):
        """The runner's process id on this machine (for its memory figures in /proc), or None."""
        if self._host_pid is None:
            server = self.own_server or self.server
            level = -2 if server.isolate else -1  # where the server's own PID namespace is in NSpid
            for pid in _descendants(server.process.pid) if server.process is not None else ():
                numbers = _namespace_pids(pid)
                if len(numbers) >= -level and numbers[level] == self.pid:  # the job's first process
                    runners = [child for child in _descendants(pid) if _namespace_pids(child)[-1:] == [2]] \
                        if server.isolate else _descendants(pid)[:1]
                    self._host_pid = runners[0] if runners else None
                    break
        return self._host_pid

    def stop(self):
        """Kill the job unless it has ended, wait until all of it is gone; returns its exit status."""
        if not self.ended and self.lifeline.fileno() >= 0:
            try:
                self.lifeline.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            deadline = time.monotonic() + ForkServer.STOP_SECONDS
            while not self.ended and self.read_line(deadline) is not None:
                pass
            if not self.ended:  # the keeper did not answer: take the whole server down
                with self.server._lock:
                    self.server._restart_locked()
        if self.writer is not None:
            self.writer.join(ForkServer.STOP_SECONDS)
        for fd in (self.input, self.output):
            try:
                os.close(fd)
            except OSError:
                pass
        self.input = self.output = -1
        self.lifeline.close()
        if self.own_server is not None:
            self.own_server.close()
            self.own_server = None
        return self.exit_code


class _Frames:
    """Frames read from a job's output pipe (see the worker), within a limit on what it may send."""

    def __init__(self, fd, limit):
        self.fd, self.limit, self.buffer, self.closed, self.total = fd, limit, b"", False, 0
        os.set_blocking(fd, False)

    def read(self):
        """Read what is waiting; returns the complete frames so far as (kind, payload)."""
        while not self.closed:
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                self.closed = True
                break
            self.total += len(chunk)
            if self.total > self.limit:
                raise ValueError(f"it sent more than {self.limit // 2**20} MiB of results")
            self.buffer += chunk
        frames = []
        while len(self.buffer) >= 9:
            kind, size = struct.unpack("<cQ", self.buffer[:9])
            if len(self.buffer) < 9 + size:
                break
            frames.append((kind, self.buffer[9:9 + size]))
            self.buffer = self.buffer[9 + size:]
        return frames


def frame(kind, payload):
    return struct.pack("<cQ", kind, len(payload)) + payload


def send_all(fd, data):
    """Write all of ``data`` to a job's input pipe; False if the job is gone."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        return True
    except OSError:
        return False


RESULTS_BYTES = 256 * 1024**2


def _run_once(server, submission, plan_bytes, tasks, limits, deadline):
    """One job for ``tasks``; returns (loaded, results, failures, load_failure, stderr)."""
    results, failures = {}, {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        job = server.spawn({"mode": "grade"}, out.fileno(), err.fileno())
        header = json.dumps({"filename": submission.path.name, "chunks": submission.chunks, "tasks": tasks,
                             "limits": _child_limits(limits)}).encode()
        frames = _Frames(job.output, RESULTS_BYTES)
        job.writer = threading.Thread(target=send_all, daemon=True,
                                      args=(job.input, frame(b"S", header) + frame(b"P", plan_bytes)))
        job.writer.start()
        loaded, pending = None, list(tasks)
        started = last_progress = time.monotonic()
        timed_out = problem = ""

        def take(received):
            nonlocal loaded, last_progress
            for kind, payload in received:
                if kind == b"L" and loaded is None:
                    try:
                        loaded = json.loads(payload)
                    except ValueError:
                        loaded = {"errors": [], "defined": []}
                elif kind == b"R" and loaded is not None:
                    task, _, data = payload.partition(b"\0")
                    task = task.decode("utf-8", "replace")
                    if task not in pending:
                        continue
                    del pending[:pending.index(task) + 1]
                    data, why = _read_results(data)
                    if data is None:
                        failures[task] = why
                    else:
                        results[task] = data
                last_progress = time.monotonic()

        try:
            while pending:
                watch = [job.lifeline] + ([job.output] if not frames.closed else [])
                ready = select.select(watch, [], [], 0.5)[0]
                if job.output in ready:
                    take(frames.read())
                if job.lifeline in ready and job.poll():
                    drain_until = time.monotonic() + 2  # what it wrote before it ended is still in the pipe
                    while pending and not frames.closed and time.monotonic() < drain_until:
                        select.select([job.output], [], [], 0.1)
                        take(frames.read())
                    break
                now = time.monotonic()
                if now > deadline:
                    timed_out = f"the submission's time limit of {limits.wall_seconds:g} s ran out"
                elif loaded is not None and now - last_progress > limits.task_seconds:
                    timed_out = (f"it ran for more than {limits.task_seconds:g} s (an infinite loop, or a Python "
                                 "loop over many positions?)")
                if timed_out:
                    break
        except ValueError as error:  # too much sent back
            problem = str(error)
        code = job.stop()  # also whatever it left running: the job's namespace goes with it
        stderr = tail(err, limits.output_bytes)
    if problem:
        return loaded, results, {task: problem for task in pending}, "" if loaded else f"{problem}.", stderr
    if loaded is None:
        if timed_out:
            why = (f"your code did not finish loading within {time.monotonic() - started:.0f} s: is there an "
                   "infinite loop or a long computation at the top level?")
        else:
            why = f"your code stopped while loading: {_describe_exit(code)}."
        return None, results, failures, why, stderr
    if pending:
        failures[pending[0]] = timed_out or _describe_exit(code)
    return loaded, results, failures, "", stderr


def run_submission(submission, plan_bytes, task_names, limits=None, server=None):
    """Run every task of ``task_names`` for ``submission``; never raises for anything the submission does."""
    limits = limits or Limits()
    own = server is None
    server = server or ForkServer(limits.sandboxed)
    outcome = RunOutcome()
    deadline = time.monotonic() + limits.wall_seconds
    remaining = list(task_names)
    try:
        while remaining:
            loaded, results, failures, load_failure, stderr = _run_once(server, submission, plan_bytes, remaining,
                                                                        limits, deadline)
            outcome.stderr = stderr or outcome.stderr
            if load_failure:
                outcome.load_failure = load_failure
                break
            outcome.loaded = outcome.loaded or loaded
            outcome.results.update(results)
            outcome.failures.update(failures)
            remaining = [task for task in remaining if task not in results and task not in failures]
            if remaining and time.monotonic() > deadline:
                for task in remaining:
                    outcome.failures[task] = f"not run: the submission's time limit of {limits.wall_seconds:g} s ran out"
                break
    finally:
        if own:
            server.close()
    return outcome
