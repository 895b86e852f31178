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

A user id is leased machine-wide, not per grader: two graders on one machine (two units graded side by
side) each take a lock on a file per id (``Lease``: flock, in a folder only root may enter, so no job can
take or hold one), and the kernel drops the lock when its holder dies, so a crashed grader holds none. A
grader kills the processes of a user id only while it holds that id's lease; where no id is free it
waits, for a bounded time, then says so (a fault of the machine, never the student's).

The job's keeper holds the same lease (the grader sends it the lease's descriptor with the job), so a
grader that crashes leaves each of its ids leased until that id's keeper, which kills what runs as it when
its job ends, has ended too: another grader's job on that id can never be killed by it.

When a job ends, its keeper has killed every process of its user (``worker._end_user``); ``release``
makes sure of that again, removes the job's folder and everything its user owns in the writable
folders (``cleanup.remove``: whatever tree the job made), and only then gives the user id back. A user
id whose processes will not die, or whose files will not go, is kept (its lease held) and never given
out again by this grader; the next grader to lease it clears it first (the lease says it was not left clean).
"""

import fcntl
import glob
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox import cleanup

# The user ids of the jobs. Nothing else on the machine may use them: setup.sh makes them users with no
# home, no shell and no password (autograder-job1...), and the pool refuses an id that owns a process.
JOB_UIDS = range(61001, 61017)
UIDS_VARIABLE = "AUTOGRADER_JOB_UIDS"  # "FIRST-LAST", to use other ids
# Where a job could write without owning the folder, beyond what the scan finds (searched in this order).
# The leases of the user ids, one file per id, shared by every grader on this machine (see Lease).
LEASES = "/run/positional-kit/uids"
LEASES_VARIABLE = "AUTOGRADER_UID_LEASES"  # another folder for them (a test's)
LEASE_WAIT_SECONDS = 120.0  # how long a job waits for a user id that another job or grader holds
POLL_SECONDS = 0.05  # another grader gives an id back without telling this one: look again this often
JOB_FOLDERS = "autograder-jobs-"  # each pool's folder of job folders, in the temporary folder
SKIPPED_MOUNTS = ("proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs", "securityfs",
                  "pstore", "bpf", "configfs", "fusectl", "hugetlbfs", "binfmt_misc", "autofs")


class PoolFailed(RuntimeError):
    """No user could be made ready for a job (a fault of the machine)."""


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
    try:
        os.close(lease_folder())
    except PoolFailed as error:
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
    """Remove everything user ``uid`` owns in ``folders`` (world-writable ones), without following a link, however
    deep a tree it made there (``cleanup.remove``). Returns whether all of it went."""
    whole = True
    for folder in folders:
        try:
            descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            whole &= _sweep_at(descriptor, uid, depth=0)
        finally:
            os.close(descriptor)
    return whole


def _sweep_at(descriptor, uid, depth, writable=True):
    """Sweep one folder: remove what ``uid`` owns where ``writable`` (anyone may write here), and go on into
    every folder below that anyone may pass through (a world-writable one may lie below a closed one), to a
    depth of 32 (what a job makes lies in a folder it owns, removed whole); whether all it owned went."""
    try:
        names = os.listdir(descriptor)
    except OSError:
        return True
    whole = True
    for name in names:
        try:
            info = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
        except OSError:
            continue
        if writable and info.st_uid == uid:
            whole &= cleanup.remove(name, dir_fd=descriptor)
        elif stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IXOTH and depth < 32:
            try:
                below = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=descriptor)
            except OSError:
                continue
            try:
                whole &= _sweep_at(below, uid, depth + 1, bool(info.st_mode & stat.S_IWOTH))
            finally:
                os.close(below)
    return whole


def job_folder_roots():
    """Every pool's folder of job folders in the temporary folder (root's, not links): a crashed grader's too,
    whose job folders no release removed."""
    found = []
    for path in glob.glob(os.path.join(glob.escape(tempfile.gettempdir()), JOB_FOLDERS + "*")):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == 0:
            found.append(path)
    return found


def lease_folder():
    """The folder of the user ids' leases, opened (a descriptor); made if missing. Raises PoolFailed unless only
    root may enter it and nobody else could have put it there: a job that could open a lease file could hold it."""
    path = os.path.abspath(os.environ.get(LEASES_VARIABLE) or LEASES)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        path = os.path.realpath(path)  # the folders above it, as they are (/var/lock is a link to /run/lock)
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise PoolFailed(f"the leases of the job users' ids cannot be kept in {path} ({error.strerror or error})")
    info = os.fstat(descriptor)
    problem = None
    if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
        problem = "it must belong to root and be closed to everyone else (chmod 700)"
    else:  # and no folder above it may be changed by anyone but root (a sticky one keeps root's entries)
        for above in Path(path).parents:
            above_info = os.lstat(above)
            if above_info.st_uid != 0 or (above_info.st_mode & 0o022 and not above_info.st_mode & stat.S_ISVTX):
                problem = f"{above} may be changed by another user than root"
                break
    if problem:
        os.close(descriptor)
        raise PoolFailed(f"the leases of the job users' ids are kept in {path}, and {problem}")
    return descriptor


class Lease:
    """This grader's hold on one user id, machine-wide: an exclusive flock on the id's file in the lease folder.

    The kernel drops the lock when the file is closed, by ``close`` or by the holder's death (a crash, kill -9),
    so no grader leaves a lease behind. The file says whether its last holder left the id clean.
    """

    CLEAN = b"clean\n"

    def __init__(self, folder, uid):
        """``folder``: the lease folder's descriptor. Raises BlockingIOError if another holds the id."""
        self.uid = uid
        self.fd = os.open(str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        try:
            info = os.fstat(self.fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                raise PoolFailed(f"the lease file of user {uid} is not a file of root's")
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # Whether the last holder cleared the id: a crashed one did not (its jobs' files may still be there).
            self.left_clean = os.pread(self.fd, 64, 0) == self.CLEAN
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"held by process {os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(self.fd)
            raise

    def close(self, clean=False):
        """Give the id back; ``clean``: nothing of its jobs is left (else the next holder clears it first)."""
        if self.fd is None:
            return
        try:
            if clean:
                os.ftruncate(self.fd, 0)
                os.pwrite(self.fd, self.CLEAN, 0)
        finally:
            os.close(self.fd)
            self.fd = None


def take_lease(folder, uid):
    """A Lease of ``uid`` (``folder``: the lease folder's descriptor), or None where another holds it."""
    try:
        return Lease(folder, uid)
    except BlockingIOError:
        return None


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


class UserPool:
    """The pool of job users; ``acquire`` one for a job, ``release`` it when the job has ended.

    Each acquired id is leased machine-wide (``Lease``) until its job's processes and files are gone, so that
    two pools, in one grader or two, never give out the same id at once.
    """

    def __init__(self, uids=None, originals=(), folders=None):
        """``originals``: the files no job may read a copy of (the answers); see ``copies``. ``folders``: the
        world-writable folders to sweep, where known (a test's); by default one walk of the machine finds them."""
        self.free = list(uids if uids is not None else job_uids())
        self.lost = []  # ids whose processes would not die, or whose files would not go: never used again here
        self._changed = threading.Condition()
        self._leases_folder = lease_folder()
        self._leases = {}  # uid -> Lease, while a job has it (and for good, once lost)
        self.root = tempfile.mkdtemp(prefix=JOB_FOLDERS)
        os.chmod(self.root, 0o711)  # each user may enter its own folder, and list none
        self.originals = list(originals)
        self._found = [[], []]  # (world-writable folders, files of the originals' sizes), once the walk is done
        sizes = frozenset(_contents(self.originals))
        if folders is not None:
            self._found[0] = list(folders)
            sizes = frozenset()
        # One walk of the machine, a second or so on a large file system, while the server imports torch.
        self._scan = threading.Thread(target=lambda: self._found.__setitem__(slice(None), scan("/", sizes)),
                                      daemon=True)
        if folders is None:
            self._scan.start()
        self._count = 0

    @property
    def folders(self):
        """The world-writable folders of this machine (see ``writable_folders``)."""
        if self._scan.ident is not None:
            self._scan.join()
        return self._found[0]

    def copies(self):
        """The readable copies of ``originals`` on this machine (see ``copies``), from the pool's one walk."""
        if self._scan.ident is None:
            return copies(self.originals)
        self._scan.join()
        return copies(self.originals, candidates=self._found[1])

    def acquire(self, timeout=LEASE_WAIT_SECONDS):
        """A user for one job, with a fresh empty folder of its own; raises PoolFailed if none frees up in time.

        An id is taken only with its lease (``Lease``); one whose last holder did not leave it clean (a grader
        that crashed) has its processes and files cleared first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                uid, lease = self._lease_a_free_id()
                if lease is not None:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolFailed(f"every job user is busy ({len(self.free)} of this grader's are held by "
                                     "another grader on this machine)" if self.free else "every job user is busy")
                self._changed.wait(min(POLL_SECONDS, left))
            self.free.remove(uid)
            self._leases[uid] = lease
            self._count += 1
            count = self._count
        try:
            if not _kill_all(uid):  # the id is this grader's now: what runs as it is left from a crashed one
                raise PoolFailed(f"user {uid} has processes that will not die")
            if not lease.left_clean and not sweep(uid, [*self.folders, *job_folder_roots()]):
                raise PoolFailed(f"what user {uid} left on this machine cannot be removed")
            folder = os.path.join(self.root, f"job{count}")
            os.mkdir(folder, 0o700)
            os.chown(folder, uid, uid)
        except BaseException:
            self._give_back(uid, lost=True)
            raise
        return JobUser(uid, folder)

    def lease_descriptor(self, user):
        """The descriptor of ``user``'s lease, for the job's keeper to hold too (see ``worker._keeper``): the
        lock is the open file's, so the id stays leased until this grader gives it back *and* the keeper,
        the one process that kills what runs as that id, has ended, even where this grader dies first."""
        with self._changed:
            return self._leases[user.uid].fd

    def _lease_a_free_id(self):
        """(id, Lease) of the first of this pool's free ids that no other grader holds, or (None, None)."""
        for uid in self.free:
            lease = take_lease(self._leases_folder, uid)
            if lease is not None:
                return uid, lease
        return None, None

    def release(self, user):
        """The job of ``user`` has ended: nothing of it may outlive it; then its id can serve another job."""
        alive = not _kill_all(user.uid)
        removed = any(cleanup.remove(user.folder) and sweep(user.uid, self.folders) for _ in range(3))
        if alive or not removed:
            why = "its processes would not die" if alive else "what it wrote could not all be removed"
            print(f"WARNING: {why} (job user {user.uid}); that id is not used again.", file=sys.stderr)
        self._give_back(user.uid, lost=alive or not removed)

    def _give_back(self, uid, lost=False):
        with self._changed:
            if lost:
                self.lost.append(uid)  # its lease is kept: no other grader gets it while this one runs
            else:
                self._leases.pop(uid).close(clean=True)
                self.free.append(uid)
            self._changed.notify()

    def close(self):
        cleanup.remove(self.root)
        with self._changed:
            for lease in self._leases.values():  # the lost ids': the next holder clears them first
                lease.close()
            self._leases.clear()
            if self._leases_folder is not None:
                os.close(self._leases_folder)
                self._leases_folder = None


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

