"""Limits on a job as a whole: a control group per job, for memory, processes and CPU.

A process limit (``RLIMIT_AS``) binds one process; a job may hold many (children, threads) and keep
memory in files on its private tmpfs or in shared memory, which no process limit counts. A control
group counts all of it, for every process in the group: the kernel charges tmpfs and shared-memory
pages to the group that wrote them. Each job gets a group of its own, below one group for this
grading run, with:

* memory: at most ``memory_bytes`` for everything the job holds (its processes, its tmpfs files);
  over it the kernel's OOM killer ends a process of that job only;
* pids: at most ``max_processes`` processes and threads, so a fork bomb stays inside its job;
* cpu: at most ``cpus`` CPUs' worth of time, so a job that starts busy threads slows itself only.

The grader reads the group's memory peak and CPU time from outside; nothing in the job can reset or
forge them (the job sees no /sys/fs/cgroup).

Both kernels' interfaces are supported: cgroup v1 (one hierarchy per controller, as on this machine)
and cgroup v2 (the unified hierarchy of current distributions, where this run's group is made at the
root of the hierarchy, which needs root, or below the folder named by ``AUTOGRADER_CGROUP``, which a
delegated user may own). Where neither can be used (not root, no delegation, no controllers), or
``AUTOGRADER_CGROUP=off`` says not to, ``detect`` says why and grading goes on with the weaker
per-process limits, said out loud by the caller.
"""

import contextlib
import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


class Unavailable(RuntimeError):
    """Control groups cannot be used here; the message says why."""


@dataclass(frozen=True)
class JobLimits:
    memory_bytes: int
    max_processes: int
    cpus: float


def _mounts():
    """[(mount point, fstype, super options)] from /proc/self/mountinfo."""
    found = []
    for line in MOUNTINFO.read_text().splitlines():
        fields = line.split()
        separator = fields.index("-")
        found.append((fields[4], fields[separator + 1], fields[separator + 3].split(",")))
    return found


def _own_paths():
    """{controller or "": this process's group path in that hierarchy} from /proc/self/cgroup."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _write(path, value):
    with open(path, "w") as handle:
        handle.write(str(value))


def _read_int(path):
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class Tree:
    """This grading run's group in each hierarchy it uses; ``job()`` makes a group for one job."""

    def __init__(self, version, parents):
        self.version = version  # 1 or 2
        self.parents = parents  # {controller: Path} (v1); {"": Path} (v2)
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def description(self):
        return f"cgroup v{self.version} (memory, pids, cpu per job)"

    @classmethod
    def detect(cls):
        """A Tree for this run, or raises Unavailable with the reason (``AUTOGRADER_CGROUP=off`` turns them off)."""
        if os.environ.get("AUTOGRADER_CGROUP", "").lower() == "off":
            raise Unavailable("turned off by AUTOGRADER_CGROUP=off")
        try:
            mounts = _mounts()
            own = _own_paths()
        except (OSError, ValueError) as error:
            raise Unavailable(f"the cgroup mounts could not be read ({error})") from None
        v1 = {}
        for point, fstype, options in mounts:
            if fstype == "cgroup":
                for controller in CONTROLLERS:
                    if controller in options and controller not in v1:
                        v1[controller] = Path(point)
        problems = []
        if set(v1) == set(CONTROLLERS):
            try:
                return cls._make_v1(v1, own)
            except OSError as error:
                problems.append(f"cgroup v1: {error.strerror or error}")
        else:
            unified = [Path(point) for point, fstype, _ in mounts if fstype == "cgroup2"]
            for root in unified:
                try:
                    return cls._make_v2(root)
                except (OSError, Unavailable) as error:
                    problems.append(f"cgroup v2 at {root}: {getattr(error, 'strerror', None) or error}")
            if not unified and not v1:
                problems.append("no cgroup file system is mounted")
            elif v1:
                problems.append(f"cgroup v1 lacks the {', '.join(sorted(set(CONTROLLERS) - set(v1)))} controller(s)")
        raise Unavailable("; ".join(problems) or "no usable cgroup hierarchy")

    @classmethod
    def _make_v1(cls, mounts, own):
        name = f"autograder-{os.getpid()}-{os.urandom(3).hex()}"
        parents = {}
        try:
            for controller, point in mounts.items():
                base = point / own.get(controller, "/").lstrip("/")
                if not base.is_dir():
                    base = point
                _remove_stale(base)
                parent = base / name
                parent.mkdir()
                parents[controller] = parent
        except OSError:
            for parent in parents.values():
                with contextlib.suppress(OSError):
                    parent.rmdir()
            raise
        return cls(1, parents)

    @classmethod
    def _make_v2(cls, root):
        base = Path(os.environ.get("AUTOGRADER_CGROUP") or root)
        available = set((base / "cgroup.controllers").read_text().split())
        if not set(CONTROLLERS) <= available:
            raise Unavailable(f"the controllers {', '.join(sorted(set(CONTROLLERS) - available))} are not "
                              f"delegated to {base}")
        enabled = set((base / "cgroup.subtree_control").read_text().split())
        if not set(CONTROLLERS) <= enabled:
            _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS if c not in enabled))
        _remove_stale(base)
        parent = base / f"autograder-{os.getpid()}-{os.urandom(3).hex()}"
        parent.mkdir()
        try:
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
        except OSError:
            parent.rmdir()
            raise
        return cls(2, {"": parent})

    def job(self, limits):
        """A new group for one job, with ``limits`` (a JobLimits) set; processes are added with ``add``."""
        with self._lock:
            name = f"job-{next(self._numbers)}"
        return Group(self, name, limits)

    def close(self):
        for parent in self.parents.values():
            for child in parent.glob("job-*"):
                _kill_and_remove(child)
            with contextlib.suppress(OSError):
                parent.rmdir()


def _remove_stale(base):
    """Groups left by a grading run that was killed (its process is gone), so they do not pile up."""
    for stale in base.glob("autograder-*"):
        try:
            pid = int(stale.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not Path(f"/proc/{pid}").exists():
            for child in stale.glob("job-*"):
                _kill_and_remove(child)
            with contextlib.suppress(OSError):
                stale.rmdir()


def _pids_in(folder):
    try:
        return [int(pid) for pid in (Path(folder) / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _kill_and_remove(folder, wait_seconds=5.0):
    """Kill every process in the group, wait for them to leave it, remove it; returns whether it is gone."""
    folder = Path(folder)
    deadline = time.monotonic() + wait_seconds
    while True:
        if (folder / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(folder / "cgroup.kill", 1)
        pids = _pids_in(folder)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)


class Group:
    """One job's group: its limits, its processes, and what it used, read from outside the job."""

    def __init__(self, tree, name, limits):
        self.tree, self.name, self.limits = tree, name, limits
        if tree.version == 1:
            self.folders = {controller: parent / name for controller, parent in tree.parents.items()}
        else:
            self.folders = {"": tree.parents[""] / name}
        made = []
        try:
            for folder in self.folders.values():
                folder.mkdir()
                made.append(folder)
            self._set_limits()
        except OSError:
            for folder in made:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            raise

    def _set_limits(self):
        limits = self.limits
        quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
        if self.tree.version == 1:
            memory = self.folders["memory"]
            _write(memory / "memory.limit_in_bytes", limits.memory_bytes)
            if (memory / "memory.memsw.limit_in_bytes").exists():  # with swap: memory and swap together
                with contextlib.suppress(OSError):
                    _write(memory / "memory.memsw.limit_in_bytes", limits.memory_bytes)
            _write(self.folders["pids"] / "pids.max", limits.max_processes)
            if _read_int(self.folders["cpu"] / "cpu.cfs_period_us") != CPU_PERIOD_US:  # the kernel's default
                _write(self.folders["cpu"] / "cpu.cfs_period_us", CPU_PERIOD_US)
            _write(self.folders["cpu"] / "cpu.cfs_quota_us", quota)
        else:
            folder = self.folders[""]
            _write(folder / "memory.max", limits.memory_bytes)
            with contextlib.suppress(OSError):
                _write(folder / "memory.swap.max", 0)
            _write(folder / "pids.max", limits.max_processes)
            _write(folder / "cpu.max", f"{quota} {CPU_PERIOD_US}")

    def add(self, pid):
        """Move process ``pid`` (one of the job's, not yet running student code) into the group."""
        for folder in self.folders.values():
            _write(folder / "cgroup.procs", pid)

    def holds(self, pid):
        return all(pid in _pids_in(folder) for folder in self.folders.values())

    def processes(self):
        return sorted(set().union(*(_pids_in(folder) for folder in self.folders.values())))

    @property
    def _memory(self):
        return self.folders["memory" if self.tree.version == 1 else ""]

    def memory_now(self):
        name = "memory.usage_in_bytes" if self.tree.version == 1 else "memory.current"
        return _read_int(self._memory / name)

    def reset_memory_peak(self):
        """Restart the group's memory high-water mark at what it holds now; False where the kernel cannot."""
        name = "memory.max_usage_in_bytes" if self.tree.version == 1 else "memory.peak"
        try:
            _write(self._memory / name, 0)
            return True
        except OSError:  # cgroup v2 before Linux 6.12: memory.peak cannot be reset
            return False

    def memory_peak(self):
        name = "memory.max_usage_in_bytes" if self.tree.version == 1 else "memory.peak"
        return _read_int(self._memory / name)

    def out_of_memory(self):
        """Whether the kernel refused the job memory (its limit was hit) at least once."""
        if self.tree.version == 1:
            with contextlib.suppress(OSError, ValueError):
                for line in (self._memory / "memory.oom_control").read_text().splitlines():
                    if line.startswith("oom_kill ") and int(line.split()[1]) > 0:
                        return True
            return (_read_int(self._memory / "memory.failcnt") or 0) > 0
        try:
            for line in (self._memory / "memory.events").read_text().splitlines():
                name, count = line.split()
                if name in ("max", "oom", "oom_kill") and int(count) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def hit_process_limit(self):
        folder = self.folders["pids" if self.tree.version == 1 else ""]
        try:
            for line in (folder / "pids.events").read_text().splitlines():
                name, count = line.split()
                if name == "max" and int(count) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def close(self):
        """Kill whatever of the job is left in the group and remove the group."""
        for folder in self.folders.values():
            _kill_and_remove(folder)
