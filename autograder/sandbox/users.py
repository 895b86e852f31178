"""Tier C of the sandbox: a user of its own for each job, where no namespace can be made.

Inside a container started with Docker's default settings (Gradescope's, PrairieLearn's), the
kernel refuses new user and mount namespaces, so bubblewrap cannot start. The grader, which runs
as root there, then gives each job an unprivileged user id of its own from a pool
(``JOB_UIDS``; ``setup.sh`` gives them names), and the worker's runner becomes that user for good
before it runs anything of the submission (see ``worker._become`` and ``worker._filter_system_calls``).
What keeps a job in its place, then, is the kernel's oldest boundary, the one between users:

* it reads only what any user may read: the hidden cases, the reference and the grader's files
  must be readable by root alone, which ``exposed`` checks as that user before any job runs;
* it writes only to its own folder (``JobUser.folder``, its HOME and TMPDIR) and to the machine's
  world-writable folders (``/tmp``, ``/dev/shm``...), found once by ``writable_folders``;
* it signals and traces only its own processes (tracing is refused by the filter anyway).

When a job ends, its keeper has killed every process of its user (``worker._end_user``); ``release``
makes sure of that again, removes the job's folder and everything its user owns in the writable
folders, and only then gives the user id to another job. A user id whose processes will not die
is never given out again.
"""

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# The user ids of the jobs. Nothing else on the machine may use them: setup.sh makes them users with no
# home, no shell and no password (autograder-job1...), and the pool refuses an id that owns a process.
JOB_UIDS = range(61001, 61017)
UIDS_VARIABLE = "AUTOGRADER_JOB_UIDS"  # "FIRST-LAST", to use other ids
# Where a job could write without owning the folder, beyond what the scan finds (searched in this order).
SKIPPED_MOUNTS = ("proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs",
                  "pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "binfmt_misc", "autofs")


def job_uids():
    """The pool's user ids: ``AUTOGRADER_JOB_UIDS`` ("FIRST-LAST") or ``JOB_UIDS``."""
    text = os.environ.get(UIDS_VARIABLE, "").strip()
    if not text:
        return JOB_UIDS
    first, _, last = text.partition("-")
    found = range(int(first), int(last or first) + 1)
    if not found or found.start < 1000 or found.stop > 2**31:
        raise ValueError(f"{UIDS_VARIABLE}={text!r}: give FIRST-LAST, unprivileged ids (1000 or more)")
    return found


def problem():
    """Why tier C cannot be used here (a sentence), or None."""
    if not hasattr(os, "setresuid") or not Path("/proc/self/status").exists():
        return "this system has no Linux users and /proc to keep jobs apart"
    if os.geteuid() != 0:
        return "the grader does not run as root, so it cannot give each job a user of its own"
    try:  # the binding the worker loads (worker._seccomp_binding), in this same Python
        try:
            import seccomp
        except ImportError:
            import pyseccomp as seccomp
        seccomp.SyscallFilter(seccomp.ALLOW)
    except Exception as error:  # noqa: BLE001  (a missing libseccomp2 is an OSError, a missing binding an ImportError)
        return (f"libseccomp's Python binding does not load in {sys.executable} ({type(error).__name__}: "
                f"{error}); install pyseccomp (pip) and libseccomp2 (apt)")
    try:
        job_uids()
    except ValueError as error:
        return str(error)
    return None


def processes_of(uid):
    """The ids of the live (not zombie) processes whose real user is ``uid``, read in /proc.

    (The worker's keeper has its own copy: the worker imports nothing of the grader.)
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(b":", 1) for line in status.splitlines() if b":" in line)
        try:
            real = int(fields.get(b"Uid", b"").split()[0])
        except (IndexError, ValueError):
            continue
        if real == uid and fields.get(b"State", b"").split()[:1] not in ([b"Z"], [b"X"]):
            found.append(int(entry))
    return found


def _kill_all(uid):
    """Kill every process of ``uid`` from here (root), until none is alive; whether none is."""
    for _ in range(200):
        alive = processes_of(uid)
        if not alive:
            return True
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.005)
    return not processes_of(uid)


def _mounts():
    """{mount point: file system type}, from /proc/self/mounts."""
    found = {}
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3:
            found[fields[1].replace("\\040", " ")] = fields[2]
    return found


def writable_folders(root="/"):
    """The folders on this machine that any user may write in (world-writable), outside /proc and /sys.

    Found once per pool: a job's files can only land in these and in its own folder. Folders below
    one of them are found again at each sweep (a job may make its own).
    """
    return scan(root)[0]


def scan(root="/", sizes=frozenset()):
    """One walk of the machine, outside /proc and /sys: (the world-writable folders, the ``.py`` files that
    others may read whose size is one of ``sizes``), each sorted."""
    skipped = {point for point, kind in _mounts().items() if kind in SKIPPED_MOUNTS}
    found, readable, todo = [], [], [(root, False)]
    while todo:
        folder, below_writable = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.path in skipped or not (entry.is_dir(follow_symlinks=False) or (
                        sizes and entry.name.endswith(".py") and entry.is_file(follow_symlinks=False))):
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if info.st_mode & stat.S_IWOTH and not below_writable:
                    found.append(entry.path)  # what is below is swept with it
                todo.append((entry.path, below_writable or bool(info.st_mode & stat.S_IWOTH)))
            elif stat.S_ISREG(info.st_mode) and info.st_size in sizes and info.st_mode & stat.S_IROTH:
                readable.append(entry.path)
    return sorted(found), sorted(readable)


def _contents(originals):
    """{size: {bytes}} of ``originals``, those of 64 bytes or more (an empty __init__.py is no secret, and
    every empty file would match it)."""
    contents = {}
    for path in map(Path, originals):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if len(data) >= 64:
            contents.setdefault(len(data), set()).add(data)
    return contents


def copies(originals, root="/", candidates=None):
    """Files on this machine, outside ``originals``, with the very bytes of one of ``originals``, that others
    may read: a stray copy of the reference (a bundle unpacked elsewhere, the kit installed in the venv).

    ``candidates``: the files of the right sizes, where a ``scan`` already found them (else one is made)."""
    contents = _contents(originals)
    own = {str(Path(path).resolve()) for path in originals}
    found = []
    for path in scan(root, frozenset(contents))[1] if candidates is None else candidates:
        try:
            if str(Path(path).resolve()) not in own and Path(path).read_bytes() in contents[Path(path).stat().st_size]:
                found.append(path)
        except (OSError, KeyError):
            continue
    return found


def sweep(uid, folders):
    """Remove everything user ``uid`` owns in ``folders`` (world-writable ones), without following a link."""
    for folder in folders:
        try:
            descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            _sweep_at(descriptor, uid, depth=0)
        finally:
            os.close(descriptor)


def _sweep_at(descriptor, uid, depth, writable=True):
    """Sweep one folder: remove what ``uid`` owns where ``writable`` (anyone may write here), and go on into
    every folder below that anyone may pass through (a world-writable one may lie below a closed one)."""
    try:
        names = os.listdir(descriptor)
    except OSError:
        return
    for name in names:
        try:
            info = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
        except OSError:
            continue
        if writable and info.st_uid == uid:
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(name, dir_fd=descriptor, ignore_errors=True)  # fd-based: no link is followed
            else:
                try:
                    os.unlink(name, dir_fd=descriptor)
                except OSError:
                    pass
        elif stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IXOTH and depth < 32:
            try:
                below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=descriptor)
            except OSError:
                continue
            try:
                _sweep_at(below, uid, depth + 1, bool(info.st_mode & stat.S_IWOTH))
            finally:
                os.close(below)


READ_CHECK = """\
import os, sys
found = []
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        found.append(path)
    except OSError:
        pass
print("\\n".join(found))
"""


def exposed(paths, uid):
    """Those of ``paths`` (files, and every file below a folder) that user ``uid`` can open for reading."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files += [str(below) for below in path.rglob("*") if below.is_file() and not below.is_symlink()]
        elif path.exists():
            files.append(str(path))
    try:
        check = subprocess.run([sys.executable, "-I", "-c", READ_CHECK, *files], user=uid, group=uid,
                               extra_groups=[], capture_output=True, text=True, cwd="/", env={"PATH": "/usr/bin:/bin"})
    except PermissionError:
        check = None
    if check is None or check.returncode:
        raise OSError(f"a job's user cannot run {sys.executable} with its modules: the Python environment must be "
                      f"readable by every user (it is not, from {sys.base_prefix} to {sys.prefix}: below /root?)")
    return [line for line in check.stdout.splitlines() if line]


@dataclass
class JobUser:
    uid: int
    folder: str  # owned by the user alone: its working folder, HOME and TMPDIR

    @property
    def gid(self):
        return self.uid


class PoolFailed(RuntimeError):
    """No user could be made ready for a job (a fault of the machine)."""


class UserPool:
    """The pool of job users; ``acquire`` one for a job, ``release`` it when the job has ended."""

    def __init__(self, uids=None, originals=()):
        """``originals``: the files no job may read a copy of (the answers); see ``copies``."""
        self.free = list(uids if uids is not None else job_uids())
        self.lost = []  # ids whose processes would not die: never used again
        self._changed = threading.Condition()
        self.root = tempfile.mkdtemp(prefix="autograder-jobs-")
        os.chmod(self.root, 0o711)  # each user may enter its own folder, and list none
        self.originals = list(originals)
        self._found = [[], []]  # (world-writable folders, files of the originals' sizes), once the walk is done
        sizes = frozenset(_contents(self.originals))
        # One walk of the machine, a second or so on a large file system, while the server imports torch.
        self._scan = threading.Thread(target=lambda: self._found.__setitem__(slice(None), scan("/", sizes)),
                                      daemon=True)
        self._scan.start()
        self._count = 0

    @property
    def folders(self):
        """The world-writable folders of this machine (see ``writable_folders``)."""
        self._scan.join()
        return self._found[0]

    def copies(self):
        """The readable copies of ``originals`` on this machine (see ``copies``), from the pool's one walk."""
        self._scan.join()
        return copies(self.originals, candidates=self._found[1])

    def acquire(self, timeout=120.0):
        """A user for one job, with a fresh empty folder of its own; raises PoolFailed if none frees up."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self.free:
                if not self._changed.wait(max(0.0, deadline - time.monotonic())) and not self.free:
                    raise PoolFailed("every job user is busy")
            uid = self.free.pop(0)
            self._count += 1
            count = self._count
        try:
            if not _kill_all(uid):  # a process of this id from before this pool (another grader?)
                raise PoolFailed(f"user {uid} has processes that will not die")
            folder = os.path.join(self.root, f"job{count}")
            os.mkdir(folder, 0o700)
            os.chown(folder, uid, uid)
        except BaseException:
            self._give_back(uid, lost=True)
            raise
        return JobUser(uid, folder)

    def release(self, user):
        """The job of ``user`` has ended: nothing of it may outlive it; then its id can serve another job."""
        alive = not _kill_all(user.uid)
        shutil.rmtree(user.folder, ignore_errors=True)
        sweep(user.uid, self.folders)
        if alive:
            print(f"WARNING: processes of job user {user.uid} would not die; that id is not used again.",
                  file=sys.stderr)
        self._give_back(user.uid, lost=alive)

    def _give_back(self, uid, lost=False):
        with self._changed:
            (self.lost if lost else self.free).append(uid)
            self._changed.notify()

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


def unreadable_problem(paths, uid):
    """A sentence naming what of ``paths`` the job user can read (and the fix), or None."""
    try:
        readable = exposed(paths, uid)
    except OSError as error:
        return str(error)
    if not readable:
        return None
    shown = ", ".join(readable[:3]) + (f" and {len(readable) - 3} more" if len(readable) > 3 else "")
    folders = " ".join(sorted({str(Path(path)) for path in paths}))
    return (f"a job's user could read {shown}: make the kit, the hidden cases and the results readable by root "
            f"only (chmod -R go-rwx {folders})")

