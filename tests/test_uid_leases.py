"""Invariant 6 across graders: two graders on one machine never hold the same job user id at once.

Each grader here is a real process with a real ``users.UserPool`` (the lease is an flock on a file per id, in a
folder only root may enter): no lock is mocked. Shown:

* two pools in two processes, both over the same ids, get different ids, and neither kills the other's job
  (before the leases both took the first id, and the second's acquire killed the first's job);
* hypothesis draws interleavings of acquire, release and crash (kill -9 of a holder) across three processes
  sharing two ids: no id is ever held twice, an acquire fails only when every id is held, and a crashed
  holder's ids are free again at once, what its jobs left (a process, a folder) cleared before they serve;
* the lease files cannot be opened by a job's user, so no job can take or hold a lease.
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

from autograder.sandbox import users

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="job users are leased and run by root")
ROOT = Path(__file__).resolve().parents[1]
UID = users.JOB_UIDS.stop - 1  # the pool's last ids, as in test_job_users.py
OTHER = users.JOB_UIDS.stop - 2

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
