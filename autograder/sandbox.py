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
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from autograder import rubric

WORKER = Path(__file__).with_name("worker.py")
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


def worker_command(workdir, *arguments, sandboxed=True):
    """The command line that runs the worker on ``workdir`` (inside bubblewrap when ``sandboxed``)."""
    if not sandboxed:
        return [sys.executable, "-I", str(WORKER), workdir, *arguments]
    readable = [path for path in SYSTEM_PATHS if os.path.lexists(path)]
    for prefix in (sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        if prefix not in readable and not any(prefix.startswith(path + "/") for path in readable):
            readable.append(prefix)
    command = [bubblewrap() or "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
               "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in readable:
        command += ["--ro-bind", path, path]
    if os.path.exists("/dev/nvidiactl"):  # a GPU: its device files, and what CUDA reads in /sys
        command += ["--dev-bind", "/dev", "/dev", "--ro-bind", "/sys", "/sys"]
    command += ["--ro-bind", str(WORKER), SANDBOX_WORKER, "--bind", workdir, SANDBOX_WORK, "--chdir", SANDBOX_WORK]
    return command + [sys.executable, "-I", SANDBOX_WORKER, SANDBOX_WORK, *arguments]


def child_environment(workdir, sandboxed=True):
    """What the worker gets as its environment: nothing of the grader's beyond PATH."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": SANDBOX_WORK if sandboxed else workdir,
        "TMPDIR": "/tmp" if sandboxed else workdir,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


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


def _read_results(path):
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as error:
        return None, f"its results could not be read ({type(error).__name__})"
    if not isinstance(data, dict) or not _is_plain(data):
        return None, "its results were not plain data"
    return data, ""


def _tail(path, limit):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return ("[...]\n" if size > limit else "") + text


def _describe_exit(code, sandboxed=False):
    if code is None:
        return "it was still running"
    if sandboxed and code > 128 and code - 128 in signal.Signals._value2member_map_:
        code = -(code - 128)  # bubblewrap reports its child's death by a signal as 128 + the signal
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
        time.sleep(0.01)  # a killed process may still be closing its files in the work folder


def _alive(pid):
    """Whether ``pid`` still runs: a zombie has closed its files, and may never be reaped here."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")


def _run_once(submission, plan_bytes, tasks, limits, deadline):
    """One child for ``tasks``; returns (loaded, results, failures, load_failure, stderr)."""
    results, failures = {}, {}
    with tempfile.TemporaryDirectory(prefix="grade-", ignore_cleanup_errors=True) as workdir:
        work = Path(workdir)
        (work / "submission.json").write_text(
            json.dumps({"filename": submission.path.name, "chunks": submission.chunks, "tasks": tasks,
                        "limits": _child_limits(limits)}),
            encoding="utf-8")
        (work / "plan.pt").write_bytes(plan_bytes)
        with open(work / "stdout.txt", "wb") as out, open(work / "stderr.txt", "wb") as err:
            process = subprocess.Popen(
                worker_command(workdir, sandboxed=limits.sandboxed), stdin=subprocess.DEVNULL, stdout=out,
                stderr=err, cwd=workdir, env=child_environment(workdir, limits.sandboxed), start_new_session=True)
        loaded, pending = None, list(tasks)
        started = last_progress = time.monotonic()
        timed_out = ""
        while True:
            finished = process.poll() is not None
            if loaded is None and (work / "loaded.json").exists():
                loaded = json.loads((work / "loaded.json").read_text(encoding="utf-8"))
                last_progress = time.monotonic()
            while pending and (work / f"result-{pending[0]}.pt").exists():
                task = pending.pop(0)
                data, problem = _read_results(work / f"result-{task}.pt")
                if data is None:
                    failures[task] = problem
                else:
                    results[task] = data
                last_progress = time.monotonic()
            if finished or not pending:
                break
            now = time.monotonic()
            if now > deadline:
                timed_out = f"the submission's time limit of {limits.wall_seconds:g} s ran out"
            elif loaded is not None and now - last_progress > limits.task_seconds:
                timed_out = f"it ran for more than {limits.task_seconds:g} s (an infinite loop, or a Python loop over many positions?)"
            if timed_out:
                break
            time.sleep(POLL_SECONDS)
        kill(process)  # also whatever it left running, inside the sandbox or in its process group
        stderr = _tail(work / "stderr.txt", limits.output_bytes)
        if loaded is None:
            if timed_out:
                why = (f"your code did not finish loading within {time.monotonic() - started:.0f} s: is there an "
                       "infinite loop or a long computation at the top level?")
            else:
                why = f"your code stopped while loading: {_describe_exit(process.returncode, limits.sandboxed)}."
            return None, results, failures, why, stderr
        if pending:
            failures[pending[0]] = timed_out or _describe_exit(process.returncode, limits.sandboxed)
        return loaded, results, failures, "", stderr


def run_submission(submission, plan_bytes, task_names, limits=None):
    """Run every task of ``task_names`` for ``submission``; never raises for anything the submission does."""
    limits = limits or Limits()
    outcome = RunOutcome()
    deadline = time.monotonic() + limits.wall_seconds
    remaining = list(task_names)
    while remaining:
        loaded, results, failures, load_failure, stderr = _run_once(submission, plan_bytes, remaining, limits, deadline)
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
    return outcome
