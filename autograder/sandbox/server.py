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

What comes back is decoded by autograder/sandbox/protocol.py into plain data and plain
tensors and checked against the protocol's schemas: nothing from a job is
unpickled into objects or executed here.
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

from autograder.sandbox import cgroups, limits as _limits, protocol, users as _users  # nothing here imports torch: the server starts before it
from autograder.intake.inert import inert

WORKER = Path(__file__).with_name("worker.py")
# The grader's package and the reference: hidden inside the sandbox even where they were installed into
# the Python environment that it mounts (pip install ., not -e), by an empty folder mounted over them.
KIT_FOLDERS = (Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[2] / "solutions")
# The answers: where jobs run as users of their own, no readable copy of these may be anywhere (users.copies).
ANSWERS = (*sorted(KIT_FOLDERS[1].glob("*.py")), *sorted(KIT_FOLDERS[0].glob("units/*/cases/*.py")))
POLL_SECONDS = 0.02
KEEPER_LINE_BYTES = 64 * 1024


@dataclass
class Limits:
    wall_seconds: float = _limits.WALL_SECONDS
    task_seconds: float = _limits.TASK_SECONDS
    memory_bytes: int = _limits.MEMORY_BYTES
    output_bytes: int = _limits.OUTPUT_BYTES
    processes: int = _limits.JOB_PROCESSES
    cpus: float = _limits.JOB_CPUS
    scratch_bytes: int = _limits.SCRATCH_BYTES
    sandboxed: object = True  # the sandbox tier (see resolve_sandbox); True is bubblewrap, False none
    # Without a control group per job: limit the job's processes with RLIMIT_NPROC instead, which the kernel
    # counts per user and user namespace (each job has its own) and does not apply to root at all.
    processes_by_rlimit: bool = False

    def for_job(self):
        """The limits of one job as a whole, for its control group."""
        return cgroups.JobLimits(self.memory_bytes, self.processes, self.cpus)


@dataclass
class RunOutcome:
    loaded: dict = None  # {"errors": [...], "defined": [...]} once the submission's code has run
    results: dict = field(default_factory=dict)  # task -> {probe id: outcome}
    failures: dict = field(default_factory=dict)  # task -> why it has no results
    # The tasks the submission's time limit left unrun, or cut short while they ran (in failures too): not their own
    # fault, the run's length.
    unrun: list = field(default_factory=list)
    load_failure: str = ""  # set when the code never finished loading
    # What the job wrote to stderr before it was sent the hidden inputs (before its L frame): the only output of a
    # job that is ever returned, for a load failure to quote. What it wrote later may hold hidden values.
    stderr: str = ""


@dataclass(frozen=True)
class Plan:
    """The probes of every task: as bytes for the jobs, and which probe ids (and ops) each task's results hold."""

    data: bytes
    probes: dict  # task -> {probe id: "call" or "module"}
    module: str = "submission"  # the name the student's code gets in the job (its unit's module name)
    unit_code: str = ""  # the unit's job.py, run in the job before the student's code


def serialize_plan(cases_by_task, unit=None):
    """The probes of every task, made once per grading run and written for each job, with the unit's module
    name (what the student's code is called in the job) and its job code (autograder/core/units.py)."""
    import torch

    plan = {"tasks": [{"task": task, "probes": [case.probe for case in cases]} for task, cases in cases_by_task.items()]}
    buffer = io.BytesIO()
    torch.save(plan, buffer)
    probes = {task: {case.probe["id"]: case.probe["op"] for case in cases} for task, cases in cases_by_task.items()}
    if unit is None:
        return Plan(buffer.getvalue(), probes)
    return Plan(buffer.getvalue(), probes, unit.module_name, unit.job_source)


def _child_limits(limits):
    """Resource limits the worker sets on itself before it runs the submission."""
    found = {
        "RLIMIT_AS": limits.memory_bytes,
        "RLIMIT_CPU": int(limits.wall_seconds * 2) + 5,
        "RLIMIT_FSIZE": 256 * 1024**2,
        "RLIMIT_CORE": 0,
    }
    if limits.processes_by_rlimit:
        found["RLIMIT_NPROC"] = limits.processes
    return found


SANDBOX_WORK = "/work"  # the submission's work folder, as the sandboxed worker sees it
SANDBOX_WORKER = "/sandbox/worker.py"
# /etc/fonts: fontconfig's configuration, without which matplotlib's text prints "Fontconfig error" into every
# notebook kernel's output (and so into the student's feedback).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/ld.so.cache", "/etc/ld.so.conf",
                "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/fonts")


class SandboxMissing(RuntimeError):
    """No sandbox can run here, and the caller did not allow grading without one."""


# The sandbox tiers, strongest first (docs/threat-model.md says what each one holds):
BUBBLEWRAP = "bubblewrap"  # tiers A and B: namespaces (with or without a control group per job)
JOB_USERS = "job users"  # tier C: an unprivileged user per job, seccomp, rlimits (see autograder/sandbox/users.py)
NO_SANDBOX = "off"  # tier D: trusted code only, when the instructor says so
TIERS = (BUBBLEWRAP, JOB_USERS, NO_SANDBOX)


def tier_of(sandboxed):
    """The tier named by ``sandboxed``: a tier's name, or True (bubblewrap) or False (none)."""
    if sandboxed is True:
        return BUBBLEWRAP
    if sandboxed is False or sandboxed is None:
        return NO_SANDBOX
    if sandboxed not in TIERS:
        raise ValueError(f"unknown sandbox tier {sandboxed!r}: one of {', '.join(TIERS)}")
    return sandboxed


def bubblewrap():
    """The path of ``bwrap``, or None."""
    return shutil.which("bwrap")


_BUBBLEWRAP_PROBLEM = {}


def bubblewrap_problem():
    """Why bubblewrap cannot make its sandbox here (a sentence), or None; tried once per process.

    Inside a container under Docker's default seccomp profile the kernel refuses it new namespaces.
    """
    if "said" not in _BUBBLEWRAP_PROBLEM:
        if not bubblewrap():
            said = "bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
        else:
            try:
                tried = subprocess.run([bubblewrap(), "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                                        "--proc", "/proc", "--dev", "/dev", "true"], capture_output=True, text=True,
                                       timeout=30)
                said = None if tried.returncode == 0 else \
                    f"bubblewrap cannot make its namespaces here ({' '.join(tried.stderr.split())[-200:]})"
            except (OSError, subprocess.TimeoutExpired) as error:
                said = f"bubblewrap does not start ({error})"
        _BUBBLEWRAP_PROBLEM["said"] = said
    return _BUBBLEWRAP_PROBLEM["said"]


def resolve_sandbox(choice):
    """The tier to grade in, for ``choice``: "required", "auto", "off", or a tier's name (that one or nothing).

    "required" and "auto" take the strongest tier the machine allows: bubblewrap where it can make its
    namespaces, else a user per job (tier C) where the grader is root with libseccomp; "required" raises
    SandboxMissing where neither can run, "auto" warns and grades without a sandbox.
    """
    if choice in ("off", NO_SANDBOX, False):
        return NO_SANDBOX
    if choice not in ("required", "auto", BUBBLEWRAP, JOB_USERS):
        raise ValueError(f"unknown sandbox choice {choice!r}")
    no_bubblewrap = bubblewrap_problem() if choice != JOB_USERS else "not asked for"
    if no_bubblewrap is None:
        return BUBBLEWRAP
    no_users = _users.problem() if choice != BUBBLEWRAP else "not asked for"
    if no_users is None:
        if choice != JOB_USERS:
            print(f"NOTE: {no_bubblewrap}. Each job runs instead as an unprivileged user of its own, under a "
                  "seccomp filter and per-process limits (tier C; docs/threat-model.md says what it holds).",
                  file=sys.stderr)
        return JOB_USERS
    why = f"{no_bubblewrap}; and no user per job either: {no_users}"
    if choice != "auto":
        raise SandboxMissing(
            f"Student code cannot be sandboxed here: {why}. Install bubblewrap (Debian/Ubuntu: apt-get install "
            "bubblewrap) where it can make namespaces, or grade as root with pyseccomp installed; or grade "
            "WITHOUT a sandbox, trusting the code, with --unsandboxed.")
    print(f"WARNING: {why}: the code runs WITHOUT a sandbox, able to read and write whatever this user can.",
          file=sys.stderr)
    return NO_SANDBOX


def mounted_for_jobs():
    """The folders bubblewrap mounts, read-only, into every job: the system's and the Python environment's."""
    readable = [path for path in SYSTEM_PATHS if os.path.lexists(path)]
    for prefix in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        if prefix not in readable and not any(prefix.startswith(path + "/") for path in readable):
            readable.append(prefix)
    return readable


def visible_to_jobs(paths):
    """Those of ``paths`` that a bubblewrap job could read: below a mounted folder and not below a kit folder
    (which is covered). A secret there would be in every job's view."""
    mounted, covered = mounted_for_jobs(), [str(folder) for folder in KIT_FOLDERS]
    below = lambda path, folder: path == folder or path.startswith(folder.rstrip("/") + "/")
    found = []
    for path in paths:
        real = os.path.realpath(path)
        if any(below(real, folder) for folder in mounted) and not any(below(real, folder) for folder in covered):
            found.append(str(path))
    return found


def sandbox_options(scratch_bytes=_limits.SCRATCH_BYTES):
    """bubblewrap's options for a sandbox, without the program: (options, the folders mounted read-only).

    New user, PID, network, IPC, UTS and cgroup namespaces; the system's libraries and the Python
    environment read-only, with the grader's package and the reference covered; private /tmp, /work and
    /dev/shm of ``scratch_bytes`` each. The caller adds its own mounts, then ``READ_ONLY_ROOT``.
    """
    readable = mounted_for_jobs()
    options = [bubblewrap() or "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--proc", "/proc"]
    if os.path.exists("/dev/nvidiactl"):  # a GPU: its device files, and what CUDA reads in /sys
        options += ["--dev-bind", "/dev", "/dev", "--ro-bind", "/sys", "/sys"]
    else:
        options += ["--dev", "/dev"]
    # The private folders before the binds: a bind below one of them (a kit or an environment under /work
    # or /tmp) is then mounted over the fresh folder, not hidden by it.
    for folder in ("/tmp", SANDBOX_WORK, "/dev/shm"):
        options += ["--size", str(int(scratch_bytes)), "--tmpfs", folder]
    for path in readable:
        options += ["--ro-bind", path, path]
    for folder in map(str, KIT_FOLDERS):
        if any(folder == path or folder.startswith(path.rstrip("/") + "/") for path in readable):
            # Covered by an empty folder, read-only: a job could otherwise leave files there for the next.
            options += ["--tmpfs", folder, "--remount-ro", folder]
    return options, readable


# The last options of every sandbox: its root (a tmpfs of bubblewrap's, shared by every job of a fork server)
# and its /dev become read-only, so that nothing written there can outlive a job or reach another.
READ_ONLY_ROOT = ["--remount-ro", "/dev", "--remount-ro", "/"]


def server_command(control_fd, sandboxed=True, isolate=True, scratch_bytes=_limits.SCRATCH_BYTES):
    """The command line of the worker's fork server (inside bubblewrap when ``sandboxed`` is that tier)."""
    tier = tier_of(sandboxed)
    arguments = ["--zygote", str(control_fd)] + (["--isolate"] if isolate and tier == BUBBLEWRAP else [])
    if tier == JOB_USERS:
        return [sys.executable, "-I", str(WORKER), *arguments, "--users"]
    if tier == NO_SANDBOX:
        return [sys.executable, "-I", str(WORKER), *arguments]
    command, readable = sandbox_options(scratch_bytes)
    command += ["--ro-bind", str(WORKER), SANDBOX_WORKER, "--chdir", SANDBOX_WORK]
    if not os.path.exists("/dev/nvidiactl"):
        command += READ_ONLY_ROOT
    else:
        command += READ_ONLY_ROOT[2:]  # the machine's own /dev, bound in for the GPU, stays as it is
    for path in readable:  # below a folder that each job gets afresh: the job mounts it again
        if any(path.startswith(folder + "/") for folder in ("/tmp", SANDBOX_WORK, "/dev/shm")):
            arguments += ["--keep", path]
    return command + [sys.executable, "-I", SANDBOX_WORKER, *arguments]


def child_environment(sandboxed=True):
    """What the worker gets as its environment: nothing of the grader's beyond PATH (and CUDA's)."""
    sandboxed = tier_of(sandboxed) == BUBBLEWRAP  # a job user's HOME and TMPDIR come with its request
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": SANDBOX_WORK if sandboxed else tempfile.gettempdir(),
        "TMPDIR": "/tmp" if sandboxed else tempfile.gettempdir(),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OMP_WAIT_POLICY": "PASSIVE",  # a pool a submission asks for sleeps between calls instead of spinning
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        if name in os.environ:
            environment[name] = os.environ[name]
    return environment


def tail(handle, limit, end=None):
    """The last ``limit`` bytes written to the open file ``handle`` (of its first ``end`` bytes), as text."""
    try:
        size = os.fstat(handle.fileno()).st_size if end is None else end
        text = os.pread(handle.fileno(), min(limit, size), max(0, size - limit)).decode("utf-8", "replace")
    except OSError:
        return ""
    return ("[...]\n" if size > limit else "") + text


def _describe_exit(code, group=None, limits=None):
    if code is None:
        return "it was still running"
    if group is not None and limits is not None and group.out_of_memory():
        return (f"it needed more than the memory limit of {limits.memory_bytes / 2**30:g} GiB for the whole job "
                "(its processes and the files it wrote), and the system stopped it")
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

    def __init__(self, sandboxed=True, isolate=None, groups=None, ready=True, users=None):
        """``groups``: a cgroups.Tree, to put each job in a control group of its own (see ``spawn``).

        ``ready=False`` returns as soon as the server's process is started: it imports torch meanwhile, and
        the first ``spawn`` (or ``ready()``) waits for it. The command line starts it this way before the
        grader's own imports, so that the two import torch side by side.
        """
        self.tier = tier_of(sandboxed)
        self.sandboxed = self.tier == BUBBLEWRAP  # inside bubblewrap
        self.isolate = self.sandboxed if isolate is None else isolate and self.sandboxed
        self.groups = groups
        # Tier C: each job runs as a user of its own, from this pool (shared with the servers made for it)
        self.users = users if users is not None or self.tier != JOB_USERS else _users.UserPool(originals=ANSWERS)
        self._own_users = users is None and self.users is not None
        self._lock = threading.Lock()
        self._ready = threading.Lock()
        self.process = self.control = None
        self.shared = None  # known once ready
        self._start()
        if ready:
            self.ready()

    def ready(self):
        """Wait until the server forks jobs as it should; falls back to a server per job where it cannot."""
        with self._ready:
            if self.shared is not None:
                return
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
                server_command(child_end.fileno(), self.tier, self.isolate), stdin=subprocess.DEVNULL,
                stdout=self.log, stderr=self.log, env=child_environment(self.tier),
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
            if self._own_users:
                self.users.close()
                self._own_users = False

    def spawn(self, request, stdout=None, stderr=None, limits=None):
        """Start a job (``request``: mode, workdir, environment, traceable); returns its Job.

        With ``limits`` (a cgroups.JobLimits) and a cgroup tree, the job's processes are moved into a group
        of their own before it reads its first frame, so that nothing of the submission runs outside it.
        Raises ServerFailed when the machine cannot start the job: a fault of the grader's, not the code's.
        """
        self.ready()
        if not self.shared:
            server = ForkServer(self.tier, isolate=False, groups=self.groups, users=self.users)
            try:
                job = server._spawn(request, stdout, stderr)
            except BaseException:
                server.close()
                raise
            job.own_server = server
        else:
            job = self._spawn(request, stdout, stderr)
        if self.groups is not None and limits is not None:
            try:
                job.attach(self.groups.job(limits))
            except (OSError, ServerFailed) as error:
                job.stop()
                raise ServerFailed(f"the job could not be put in a control group of its own ({error})") from None
        return job

    def _spawn(self, request, stdout, stderr):
        user = None
        if self.users is not None:  # tier C: the job's own user, its own folder as HOME and TMPDIR
            try:
                user = self.users.acquire()
            except (_users.PoolFailed, OSError) as error:
                raise ServerFailed(f"no user for the job ({error})") from None
            name = f"autograder-job-{user.uid}"
            request = dict(request, uid=user.uid, gid=user.gid, workdir=user.folder,
                           environment={**request.get("environment", {}), "HOME": user.folder, "TMPDIR": user.folder,
                                        "USER": name, "LOGNAME": name})
        elif not self.sandboxed and not request.get("workdir"):
            request = dict(request, workdir=tempfile.gettempdir())
        lifeline, lifeline_child = socket.socketpair()
        job_in, to_job = os.pipe()
        from_job, job_out = os.pipe()
        null = None
        if stdout is None or stderr is None:
            null = os.open(os.devnull, os.O_WRONLY)
        sent = [lifeline_child.fileno(), job_in, job_out, stdout if stdout is not None else null,
                stderr if stderr is not None else null]
        if user is not None:  # the keeper holds the id's lease as long as it lives (see users.Lease)
            sent.append(self.users.lease_descriptor(user))
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
        except BaseException:
            if user is not None:
                self.users.release(user)
            raise
        finally:
            for fd in (lifeline_child.detach(), job_in, job_out) + ((null,) if null is not None else ()):
                os.close(fd)
        job = Job(self, lifeline, to_job, from_job, user)
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

    def __init__(self, server, lifeline, to_job, from_job, user=None):
        self.server, self.lifeline, self.input, self.output = server, lifeline, to_job, from_job
        self.user = user  # tier C: the job's user (a users.JobUser), given back when the job has ended
        self.pid, self.exit_code, self.own_server, self.writer, self.group = None, None, None, None, None
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
            if not chunk or len(self._lines) > KEEPER_LINE_BYTES:
                self.ended = True  # the keeper is gone without a word (or talks nonsense: the same to us)
                return None
            self._lines += chunk
        line, self._lines = self._lines.split(b"\n", 1)
        try:
            message = protocol.json_line(line, protocol.KEEPER, "a keeper's message")
        except protocol.ProtocolError as error:
            self.failure, self.ended = str(error), True
            return None
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

    def _first_host_pid(self):
        """The job's first process, by its id on this machine, or None."""
        server = self.own_server or self.server
        level = -2 if server.isolate else -1  # where the server's own PID namespace is in NSpid
        for pid in _descendants(server.process.pid) if server.process is not None else ():
            numbers = _namespace_pids(pid)
            if len(numbers) >= -level and numbers[level] == self.pid:
                return pid
        return None

    def _runner_host_pid(self, first, wait_seconds=0.0):
        """The runner (the first process's child), by its id on this machine, once it exists; or None."""
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                children = [int(child) for child in Path(f"/proc/{first}/task/{first}/children").read_text().split()]
            except OSError:
                return None  # the first process is gone: no runner will come
            if children:
                return children[0]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.001)

    @property
    def host_pid(self):
        """The runner's process id on this machine (for its memory figures in /proc), or None."""
        if self._host_pid is None:
            first = self._first_host_pid()
            if first is not None:  # the runner is forked at once; on a slow machine it may take a moment
                self._host_pid = self._runner_host_pid(first, wait_seconds=ForkServer.START_SECONDS)
        return self._host_pid

    def attach(self, group):
        """Move the job's first process and its runner into ``group`` (a cgroups.Group), and keep it.

        Called before the job is sent its first frame: until then the runner waits for it, and no code of
        the submission has run. What the runner starts later is born in the group.
        """
        self.group = group
        first = self._first_host_pid()
        if first is None:
            raise ServerFailed("its first process was not found")
        group.add(first)
        runner = self._runner_host_pid(first, wait_seconds=ForkServer.START_SECONDS)
        if runner is None:
            raise ServerFailed("its runner did not start")
        group.add(runner)
        if not (group.holds(first) and group.holds(runner)):
            raise ServerFailed("its processes did not stay in their control group")
        self._host_pid = runner

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
        if self.group is not None:  # whatever of the job is left (nothing, with its PID namespace gone)
            self.group.close()
        if self.user is not None:  # its processes killed again, its files removed, its id free for another
            self.server.users.release(self.user)
            self.user = None
        if self.own_server is not None:
            self.own_server.close()
            self.own_server = None
        return self.exit_code

    def processes(self):
        """The job's live processes, by their ids on this machine, as far as the grader can see them.

        Its control group's, else (tier C) its user's, wherever they went; else the runner and what is below it.
        """
        if self.group is not None:
            return set(self.group.processes())
        if self.user is not None:
            return set(_users.processes_of(self.user.uid))
        runner = self.host_pid
        return {runner, *_descendants(runner)} if runner is not None else set()


class TooMuch(ValueError):
    """A job sent more than the grader keeps."""


class _Frames:
    """Frames read from a job's output pipe (see the worker), within a limit on what it may send.

    ``limit``: all the job's frames together; ``frame_limit(kind)``: the most one frame of that kind may hold,
    checked on its header, before any of its body is read: the buffer never holds more than one frame and the
    header of the next. A frame over its limit raises TooMuch, and nothing more of the pipe is read.
    """

    def __init__(self, fd, limit, frame_limit=None):
        self.fd, self.limit, self.buffer, self.closed, self.total = fd, limit, bytearray(), False, 0
        self.frame_limit = frame_limit or (lambda kind: limit)
        os.set_blocking(fd, False)

    def _wanted(self):
        """How many bytes to read next: the rest of the frame begun, or a header (raises TooMuch past a limit)."""
        if len(self.buffer) < 9:
            return 9 - len(self.buffer)
        kind, size = struct.unpack_from("<cQ", self.buffer, 0)
        if size > self.frame_limit(kind):
            raise TooMuch(f"{size:,} bytes, where a correct answer takes at most {self.frame_limit(kind):,}")
        return 9 + size - len(self.buffer)

    def read(self):
        """Read what is waiting; returns the complete frames so far as (kind, payload)."""
        frames = []
        while not self.closed:
            wanted = self._wanted()
            if wanted == 0:
                kind, size = struct.unpack_from("<cQ", self.buffer, 0)
                frames.append((kind, bytes(self.buffer[9:])))
                self.buffer = bytearray()
                continue
            try:
                chunk = os.read(self.fd, min(wanted, 1 << 20))
            except BlockingIOError:
                break
            if not chunk:
                self.closed = True
                break
            self.total += len(chunk)
            if self.total > self.limit:
                raise TooMuch(f"more than {self.limit // 2**20} MiB in all")
            self.buffer += chunk
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


def _send_later(fd, data, after=None):
    """Write ``data`` to a job's input pipe from a thread of its own (the job may not read it at once), once the
    thread ``after`` has written what it had; returns the thread."""
    def send():
        if after is not None:
            after.join()
        send_all(fd, data)
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


RESULTS_BYTES = 256 * 1024**2  # all the frames of one job together
# The most one frame (a load report, or one task's results) may hold: the largest an honest job sends is under
# 2 MB (positional_encodings' learned, all its probes' outputs); 16 times that leaves room for a wrong answer of
# another dtype or shape, and keeps what a grading thread buffers far below the grader's memory.
REPLY_BYTES = 32 * 1024**2


def _broke_while(task, kind):
    """The failure of each task still open when the job broke the protocol once it had the hidden cases. Nothing
    the job wrote is quoted (its output, its frames: they may hold values of the hidden inputs), but the kind of an
    unknown frame, one byte."""
    what = f"a frame of kind {kind!r}" if kind not in (None, b"R") else "a frame the grader cannot read"
    return (f"your code wrote on the grader's private pipe ({what}) while the tests of {task} ran, which ends "
            "the job: no test still open could be graded. Your code must not write to the grader's pipes")


def _too_large(problem):
    return (f"your code's reply to these tests was larger than any correct answer ({problem}), so it was not "
            "read. Return what the task asks for, of the shape its docstring gives")


def _wall_ran_out(limits):
    return f"the submission's time limit of {limits.wall_seconds:g} s ran out"


def _run_once(server, submission, plan, tasks, limits, deadline):
    """One job for ``tasks``; returns (loaded, results, failures, load_failure, stderr).

    The job gets the header (its code) first, and the plan (the probes: the hidden inputs) only once it has said
    that its code loaded (its L frame). ``stderr`` is what the job wrote there before then: all that a failure to
    load may quote. What it wrote once it had the plan may hold values of hidden inputs, and is never returned.
    """
    results, failures = {}, {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        job = server.spawn({"mode": "grade", "scratch_bytes": limits.scratch_bytes}, out.fileno(), err.fileno(),
                           limits=limits.for_job())
        header = json.dumps({"filename": submission.path.name, "chunks": submission.chunks, "tasks": tasks,
                             "limits": _child_limits(limits), "module": plan.module,
                             "unit_code": plan.unit_code}).encode()
        frames = _Frames(job.output, RESULTS_BYTES, lambda kind: REPLY_BYTES)
        job.writer = _send_later(job.input, frame(b"S", header))
        loaded, pending, before_plan = None, list(tasks), None
        started = last_progress = time.monotonic()
        timed_out = problem = protocol_error = ""
        broken_by = None  # the kind of the last frame read: the one that broke the protocol, if one did

        def take(received):
            # Every frame is checked before use: the submission's code can write to this pipe too.
            nonlocal loaded, last_progress, before_plan, broken_by
            for kind, payload in received:
                broken_by = kind
                if kind == b"L":
                    if loaded is None:
                        loaded = protocol.loaded(payload)
                        # What the job wrote so far, it wrote before any hidden input was in its reach.
                        before_plan = os.fstat(err.fileno()).st_size
                        if not job.ended:
                            job.writer = _send_later(job.input, frame(b"P", plan.data), after=job.writer)
                elif kind == b"R" and loaded is not None:
                    task, _, data = payload.partition(b"\0")
                    task = task.decode("utf-8", "replace")
                    if task not in pending:
                        continue
                    results[task] = protocol.task_results(data, plan.probes.get(task, {}))
                    del pending[:pending.index(task) + 1]
                else:
                    raise protocol.ProtocolError(f"a frame of kind {kind!r} where {'R' if loaded else 'L'} was due")
                last_progress = time.monotonic()
            broken_by = None  # a frame that fails to arrive whole (_Frames.read) has no kind to name

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
                    timed_out = _wall_ran_out(limits)
                elif loaded is not None and now - last_progress > limits.task_seconds:
                    timed_out = (f"it ran for more than {limits.task_seconds:g} s (an infinite loop, or a Python "
                                 "loop over many positions?)")
                if timed_out:
                    break
        except TooMuch as error:
            problem = str(error)
        except protocol.ProtocolError as error:
            if loaded is None:  # no hidden input was in the job's reach: the error may name what it wrote
                protocol_error = f"the submission broke the grader's protocol ({error})"
            else:  # the tasks received keep their verdicts; the others end with the job, and nothing is quoted
                failures.update({task: _broke_while(pending[0], broken_by) for task in pending})
                pending = []
        said = _describe_exit(job.exit_code if job.ended else None, job.group, limits) if job.ended else None
        code = job.stop()  # also whatever it left running: the job's namespace goes with it
        said = said or _describe_exit(code)
        stderr = inert(tail(err, limits.output_bytes, before_plan))
    if protocol_error:  # before it loaded, the whole submission: honest code never writes to the worker's pipes
        return None, {}, {}, protocol_error + ". Your code must not write to the grader's pipes.", stderr
    if problem:  # a reply too large: the task it answered loses its tests; the others are run again
        if loaded is None:
            return None, {}, {}, f"the report that your code loaded was larger than any honest one ({problem}).", stderr
        return loaded, results, {**failures, pending[0]: _too_large(problem)} if pending else failures, "", stderr
    if loaded is None:
        if timed_out:
            why = (f"your code did not finish loading within {time.monotonic() - started:.0f} s: is there an "
                   "infinite loop or a long computation at the top level?")
        else:
            why = f"your code stopped while loading: {said}."
        return None, results, failures, why, stderr
    if pending:
        failures[pending[0]] = timed_out or said
    return loaded, results, failures, "", stderr


def run_submission(submission, plan, task_names, limits=None, server=None):
    """Run every task of ``task_names`` for ``submission``; never raises for anything the submission does."""
    limits = limits or Limits()
    own = server is None
    server = server or ForkServer(tier_of(limits.sandboxed))
    outcome = RunOutcome()
    deadline = time.monotonic() + limits.wall_seconds
    remaining = list(task_names)
    try:
        while remaining:
            loaded, results, failures, load_failure, stderr = _run_once(server, submission, plan, remaining,
                                                                        limits, deadline)
            outcome.stderr = stderr or outcome.stderr
            if load_failure and outcome.loaded is not None:
                # A job started again for the tasks still open (an earlier one hung or died) did not load: those
                # tasks fail, the verdicts received stand. Its output is not quoted here: no load failure is said.
                for task in remaining:
                    outcome.failures[task] = ("the job started again for the tests still open did not load: "
                                              + load_failure.rstrip("."))
                break
            if load_failure:
                outcome.load_failure = load_failure
                break
            outcome.loaded = outcome.loaded or loaded
            outcome.results.update(results)
            outcome.failures.update(failures)
            # The task that was running when the submission's time ran out did not fail on its own: unrun too.
            outcome.unrun += [task for task, why in failures.items() if why == _wall_ran_out(limits)]
            remaining = [task for task in remaining if task not in results and task not in failures]
            if remaining and time.monotonic() > deadline:
                for task in remaining:
                    outcome.failures[task] = f"not run: the submission's time limit of {limits.wall_seconds:g} s ran out"
                outcome.unrun += remaining
                break
    finally:
        if own:
            server.close()
    return outcome
