"""Invariant 6 across graders: two graders on one machine never hold the same job user id at once.

Each grader here is a real process with a real ``users.UserPool`` (the lease is an flock on a file per id, in a
folder only root may enter): no lock is mocked. Shown:

* two pools in two processes, both over the same ids, get different ids, and neither kills the other's job
  (before the leases both took the first id, and the second's acquire killed the first's job);
* hypothesis draws interleavings of acquire, release and crash (kill -9 of a holder) across three processes
  sharing two ids: no id is ever held twice, an acquire fails only when every id is held, and a crashed
  holder's ids are free again at once, what its jobs left (a process, a folder) cleared before they serve;
* the lease files cannot be opened by a job's user, so no job can take or hold a lease;
* a job's keeper (the one process that kills what runs as its id when the job ends) holds the id's lease too,
  so when a grader crashes its ids are free only once its keepers have ended: a job another grader starts on
  such an id is never killed by the crashed grader's keeper (hypothesis draws when the crash comes);
* so does the keeper's killer (the process that kill(-1)s as the id): a keeper killed in its kill round leaves the
  id leased until its killer has ended (hypothesis draws where the killer is held, and whether the keeper dies).
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.sandbox import server, users
from conftest import TEST_UIDS, leased_on_this_machine

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="job users are leased and run by root")
ROOT = Path(__file__).resolve().parents[2]
UID, OTHER = TEST_UIDS["test_uid_leases.py"]


@pytest.fixture(scope="module", autouse=True)
def leases_of_this_file_s_own():
    """Every pool here leases in a folder of this file's own (crashes and interleavings it can reason about), while
    this file holds the machine's leases of its two ids: no grader elsewhere acts on them meanwhile."""
    with leased_on_this_machine(UID, OTHER):
        base = tempfile.mkdtemp(prefix="leases-")
        before = os.environ.get(users.LEASES_VARIABLE)
        os.environ[users.LEASES_VARIABLE] = os.path.join(base, "leases")
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(users.LEASES_VARIABLE, None)
            else:
                os.environ[users.LEASES_VARIABLE] = before
            subprocess.run(["rm", "-rf", base], check=False)

# A grader, as far as the pool goes: it answers one line per command read on stdin.
#   acquire SECONDS -> the id it got, or "busy"      release -> "released" (the oldest id it holds)
#   start -> the pid of a process started as the newest id it holds (a job), in a session of its own
HOLDER = r"""
import subprocess, sys
sys.path.insert(0, sys.argv[1])
from autograder.sandbox import users

uids = [int(uid) for uid in sys.argv[2].split(",")]
try:
    pool = users.UserPool(uids, folders=[])
except TypeError:  # the pool before leases
    pool = users.UserPool(uids)
held = []
print("ready", flush=True)
for line in sys.stdin:
    command = line.split()
    if command[0] == "acquire":
        try:
            held.append(pool.acquire(timeout=float(command[1])))
            print(held[-1].uid, held[-1].folder, flush=True)
        except users.PoolFailed:
            print("busy", flush=True)
    elif command[0] == "release":
        pool.release(held.pop(0))
        print("released", flush=True)
    elif command[0] == "start":
        job = subprocess.Popen(["/bin/sleep", "300"], user=held[-1].uid, group=held[-1].uid, extra_groups=[],
                               start_new_session=True, cwd="/")
        print(job.pid, flush=True)
for user in held:
    pool.release(user)
pool.close()
"""


class Holder:
    """One grader process holding leases (see HOLDER)."""

    def __init__(self, uids, environment=None):
        self.process = subprocess.Popen([sys.executable, "-I", "-c", HOLDER, str(ROOT), ",".join(map(str, uids))],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        env={**os.environ, **(environment or {})})
        assert self.ask(None) == "ready"

    def ask(self, command):
        if command is not None:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline().strip()
        assert line, f"the holder said nothing to {command!r} (exit {self.process.poll()})"
        return line

    def crash(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.crash()


def running(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rfind(")") + 2] not in "ZX"


def _end(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_two_graders_on_one_machine_never_share_a_job_user_or_kill_each_other_s_jobs():
    """Regression: both took the first free id of the same range, and the second's acquire, finding a process of
    that id, killed it: the first grader's job, charged to its student as "killed by SIGKILL"."""
    first, second, jobs = Holder([UID, OTHER]), None, []
    try:
        mine = int(first.ask("acquire 5").split()[0])
        jobs.append(int(first.ask("start")))
        second = Holder([UID, OTHER])
        theirs = int(second.ask("acquire 5").split()[0])
        jobs.append(int(second.ask("start")))
        time.sleep(0.2)
        assert mine != theirs, f"both graders run their jobs as user {mine}"
        assert running(jobs[0]), "the second grader killed the first grader's job"
        assert running(jobs[1])
        assert second.ask("acquire 0.2") == "busy"  # both ids are held: it waits, then says so
        first.ask("release")
        assert not running(jobs[0]) and running(jobs[1])  # a release ends its own job only
        assert int(second.ask("acquire 5").split()[0]) == mine
    finally:
        for holder in (first, second):
            if holder is not None:
                holder.close()
        _end(jobs)


def test_a_crashed_grader_s_ids_are_free_at_once_and_what_its_jobs_left_is_cleared_before_they_serve():
    crashed, other, jobs = Holder([UID]), None, []
    try:
        uid, folder = crashed.ask("acquire 5").split()
        jobs.append(int(crashed.ask("start")))
        Path(folder, "answers.py").write_text("a student's work")
        crashed.crash()  # no release: its job runs on, its folder stays
        assert running(jobs[0])
        other = Holder([UID])
        again, _ = other.ask("acquire 5").split()
        assert again == uid
        assert not running(jobs[0])  # the id is this grader's now: what ran as it is ended
        assert not os.path.lexists(folder)  # the crashed grader's job folder, readable by that id, is gone
        os.rmdir(Path(folder).parent)  # the crashed pool's own folder, empty now
    finally:
        for holder in (crashed, other):
            if holder is not None:
                holder.close()
        _end(jobs)


def test_a_job_s_user_cannot_open_a_lease_file():
    pool = users.UserPool([UID], folders=[])
    try:
        user = pool.acquire(timeout=5)
        lease = os.path.join(os.path.abspath(os.environ.get(users.LEASES_VARIABLE) or users.LEASES), str(UID))
        assert os.path.isfile(lease)
        tried = subprocess.run(["/bin/cat", lease], user=user.uid, group=user.uid, extra_groups=[],
                               capture_output=True, text=True, cwd="/", timeout=60)
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, tried.stdout + tried.stderr
        pool.release(user)
    finally:
        pool.close()


def test_a_lease_folder_others_could_change_is_refused(tmp_path, monkeypatch):
    open_folder = tmp_path / "leases"
    open_folder.mkdir(mode=0o777)
    open_folder.chmod(0o777)
    monkeypatch.setenv(users.LEASES_VARIABLE, str(open_folder))
    with pytest.raises(users.PoolFailed, match="closed to everyone else"):
        users.lease_folder()
    assert "closed to everyone else" in users.problem()


# Interleavings: (holder 0-2, what it does); a crashed holder is replaced by a fresh one in its place.
steps = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["acquire", "acquire", "release", "crash"])),
                 min_size=4, max_size=14)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps)
def test_no_interleaving_of_acquire_release_and_crash_holds_an_id_twice(steps):
    base = Path(tempfile.mkdtemp(prefix="leases-"))
    # A lease folder and a temporary folder of this example's own: examples do not see each other's leftovers.
    environment = {users.LEASES_VARIABLE: str(base / "leases"), "TMPDIR": str(base)}
    ids = [UID, OTHER]
    holders = [Holder(ids, environment) for _ in range(3)]
    held = [[], [], []]  # the model: (id, job folder) each live holder holds, oldest first
    left = {uid: [] for uid in ids}  # the job folders crashed holders left, by id
    try:
        for index, action in steps:
            holder = holders[index]
            if action == "acquire":
                answer = holder.ask("acquire 0.05")
                taken = {uid for pairs in held for uid, _ in pairs}
                if answer == "busy":
                    assert taken == set(ids), f"refused while {set(ids) - taken} was free"
                else:
                    uid, folder = int(answer.split()[0]), answer.split()[1]
                    assert uid not in taken, f"id {uid} given out while held ({held})"
                    assert not any(map(os.path.lexists, left.pop(uid))), "a crashed holder's job folder outlived it"
                    left[uid] = []
                    held[index].append((uid, folder))
            elif action == "release" and held[index]:
                assert holder.ask("release") == "released"
                held[index].pop(0)
            elif action == "crash":
                holder.crash()
                for uid, folder in held[index]:
                    left[uid].append(folder)
                holders[index], held[index] = Holder(ids, environment), []
        assert sorted(uid for pairs in held for uid, _ in pairs) == sorted({uid for pairs in held for uid, _ in pairs})
    finally:
        for holder in holders:
            holder.close()
        subprocess.run(["rm", "-rf", str(base)], check=False)


def _session_of(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = state[state.rfind(")") + 2:].split()
    return int(fields[3]) if fields[0] not in "ZX" else None


def _live_in_session(session):
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _session_of(entry) == session]


def _start_as(uid):
    return subprocess.Popen(["/bin/sleep", "300"], user=uid, group=uid, extra_groups=[], start_new_session=True,
                            cwd="/")


def test_a_job_s_keeper_holds_its_user_s_lease_until_it_has_ended(tmp_path, monkeypatch):
    """Regression (issue 23, point 8): the lease was the grader's alone. A grader that died left its ids free at
    once, while its jobs' keepers lived on, and each, ending its job, killed every process of its id: for about a
    second, the job of another grader that had leased the id meanwhile. The grader's own hold is dropped here as
    its death drops it (the kernel closes its descriptors): the id must stay leased until the keeper is gone."""
    monkeypatch.setenv(users.LEASES_VARIABLE, str(tmp_path / "leases"))
    pool = users.UserPool([UID], folders=[])
    forks = server.ForkServer(sandboxed=server.JOB_USERS, users=pool)
    folder = users.lease_folder()
    try:
        job = forks.spawn({"mode": "serve"})
        assert users.take_lease(folder, UID) is None
        pool._leases[UID].close()  # the grader's hold gone, as in a crash
        taken = users.take_lease(folder, UID)
        assert taken is None, "the id was free again while its job's keeper lived"
        job.stop()  # the keeper ends (and the grader gives back nothing more: its hold is gone)
        deadline = time.monotonic() + 10
        while (taken := users.take_lease(folder, UID)) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert taken is not None, "the id stayed leased after its keeper ended"
        taken.close()
    finally:
        os.close(folder)
        forks.close()
        pool.close()


# A grader that starts tier-C jobs that wait for their first frame, says its fork server's pid and the ids its jobs
# run as, and waits to be killed.
GRADER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from autograder.sandbox import server, users

pool = users.UserPool([int(uid) for uid in sys.argv[2].split(",")], folders=[])
forks = server.ForkServer(sandboxed=server.JOB_USERS, users=pool)
jobs = [forks.spawn({"mode": "serve"}) for _ in range(int(sys.argv[3]))]
print(forks.process.pid, *[job.user.uid for job in jobs], flush=True)
time.sleep(600)
"""


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.integers(1, 2), pause=st.floats(0, 0.3))
def test_no_job_another_grader_starts_on_a_crashed_grader_s_id_is_killed_by_that_grader_s_keepers(jobs, pause):
    """A grader is killed (-9) with tier-C jobs running; this test, as a second grader, leases each of its ids the
    moment it can and starts a job as that id at once. When the crashed grader's keepers have all ended, every
    job started here is still running: none was killed by a keeper of a grader that no longer holds its id."""
    base = Path(tempfile.mkdtemp(prefix="leases-"))
    base.chmod(0o711)  # the job users pass through it to their folders
    environment = {**os.environ, users.LEASES_VARIABLE: str(base / "leases"), "TMPDIR": str(base)}
    grader = subprocess.Popen([sys.executable, "-I", "-c", GRADER, str(ROOT), f"{UID},{OTHER}", str(jobs)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    started, leases, session = [], [], None
    try:
        said = grader.stdout.readline().split()
        assert len(said) == 1 + jobs, f"the grader did not start its jobs: {grader.stderr.read() if grader.poll() is not None else ''}"
        session, ids = int(said[0]), [int(uid) for uid in said[1:]]
        time.sleep(pause)
        grader.send_signal(signal.SIGKILL)
        grader.wait()
        folder = os.open(base / "leases", os.O_RDONLY | os.O_DIRECTORY)
        try:
            deadline = time.monotonic() + 30
            waiting = list(ids)
            while waiting and time.monotonic() < deadline:
                for uid in list(waiting):
                    lease = users.take_lease(folder, uid)
                    if lease is not None:
                        leases.append(lease)
                        started.append(_start_as(uid))
                        waiting.remove(uid)
            assert not waiting, f"ids {waiting} stayed leased after their grader died"
        finally:
            os.close(folder)
        deadline = time.monotonic() + 30
        while _live_in_session(session) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _live_in_session(session), "the crashed grader's fork server or keepers outlived it"
        time.sleep(0.1)
        killed = [job.args for job in started if job.poll() is not None]
        assert not killed, "a crashed grader's keeper killed a job of the grader that leased its id after it"
    finally:
        for job in started:
            job.kill()
            job.wait()
        for lease in leases:
            lease.close()
        if grader.poll() is None:
            grader.kill()
            grader.wait()
        if session is not None:
            _end(_live_in_session(session))
        subprocess.run(["rm", "-rf", str(base)], check=False)


# A job's keeper in its kill round (worker._end_user, the real function, on a real lease): its killer, the process
# it forks to become the job's user and kill(-1), is held at a drawn point by a pipe, standing for the moment the
# keeper is killed (its fork server's whole tree killed, on a restart or a grader's way down).
KEEPER_IN_ITS_KILL_ROUND = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(sys.argv[1], "autograder", "sandbox"))
import worker
from autograder.sandbox import users

uid, pause_at, ready, go = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
lease = users.Lease(users.lease_folder(), uid)
real = getattr(os, pause_at)


def held(*args):
    if os.getpid() != keeper:  # in the killer only
        os.write(ready, b"x")
        os.read(go, 1)
    return real(*args)


keeper = os.getpid()
setattr(os, pause_at, held)
worker._end_user(uid, lease.fd)
"""


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pause_at=st.sampled_from(["setresuid", "kill"]), keeper_dies=st.booleans())
def test_no_job_is_killed_by_a_keeper_s_killer_once_the_id_is_leased_again(pause_at, keeper_dies):
    """Issue 36, point 6: a process of the id is killed only by a holder of the id's lease. The keeper's killer let go
    of the lease before it became the job's user and killed: a keeper killed at that moment (its fork server's tree
    killed) left the id free while its killer was still to kill(-1) as it, and a job another grader started on the
    id meanwhile was killed by it. Here the keeper is killed (or not) while its killer is held before ``pause_at``;
    whenever this test, as another grader, can lease the id, the job it starts as that id at once must survive."""
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    keeper = subprocess.Popen([sys.executable, "-I", "-c", KEEPER_IN_ITS_KILL_ROUND, str(ROOT), str(UID), pause_at,
                               str(ready_write), str(go_read)], pass_fds=(ready_write, go_read))
    os.close(ready_write)
    os.close(go_read)
    folder, lease, job = users.lease_folder(), None, None
    try:
        assert os.read(ready_read, 1) == b"x", "the keeper's killer never came"
        if keeper_dies:
            keeper.kill()
            keeper.wait()
        lease = users.take_lease(folder, UID)
        if lease is not None:  # the id is free while the killer is still to kill: a job started now must survive
            job = _start_as(UID)
            time.sleep(0.2)
        os.write(go_write, b"x")  # the killer goes on: kill(-1) as the id
        deadline = time.monotonic() + 30
        while lease is None and time.monotonic() < deadline:
            lease = users.take_lease(folder, UID)
            if lease is None:
                time.sleep(0.01)
        assert lease is not None, "the id stayed leased after its keeper and its killer ended"
        if job is None:
            job = _start_as(UID)
        time.sleep(0.3)
        assert job.poll() is None, "the keeper's killer killed a job of the grader that leased the id after it"
    finally:
        os.close(go_write)
        os.close(ready_read)
        if job is not None:
            job.kill()
            job.wait()
        if lease is not None:
            lease.close()
        os.close(folder)
        if keeper.poll() is None:
            keeper.kill()
        keeper.wait()
