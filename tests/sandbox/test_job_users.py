"""Tier C's bookkeeping on this machine: the pool of job users, what a job leaves behind, and how it is removed.

The jobs themselves (a user of their own, the seccomp filter) run in a real container, where that tier is in
force: tests/ways_in/test_platform_containers.py. Here, as root, the parts the grader does from outside a job: the
sweep of what a job's user owns in world-writable folders (hypothesis draws the trees), the scan that finds
those folders, and a pool that gives each job a fresh folder and takes back nothing of the job but its id.
"""

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.sandbox import users
from conftest import TEST_UIDS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the job users are made and swept by root")
UID, OTHER = TEST_UIDS["test_job_users.py"]  # the pool's last ids: never a grading run's first, and no other file's

# A tree: each entry a (kind, owner) with kind "file", "folder" (world-writable, sticky, like /tmp), "private"
# (a folder only its owner may write), or "link" (a symbolic link to a file outside the tree).
owners = st.sampled_from([0, UID, OTHER])
entries = st.recursive(
    st.tuples(st.sampled_from(["file", "link"]), owners),
    lambda children: st.tuples(st.sampled_from(["folder", "private"]), owners,
                               st.dictionaries(st.text("abcdefgh", min_size=1, max_size=4), children, max_size=4)),
    max_leaves=20)


def make(path, entry, outside):
    kind, owner = entry[0], entry[1]
    if kind == "file":
        path.write_text("x")
    elif kind == "link":
        path.symlink_to(outside)
    else:
        path.mkdir()
        for name, child in entry[2].items():
            make(path / name, child, outside)
        path.chmod(0o1777 if kind == "folder" else 0o755)
    os.chown(path, owner, owner, follow_symlinks=False)


def expected_after(path, entry, inside_writable):
    """The paths that must survive a sweep of UID: all but those UID owns in a folder anyone may write."""
    kind, owner = entry[0], entry[1]
    if inside_writable and owner == UID:
        return set()
    kept = {path}
    if kind in ("folder", "private"):
        for name, child in entry[2].items():
            kept |= expected_after(path / name, child, kind == "folder")
    return kept


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=4), entries, max_size=5))
def test_a_sweep_removes_what_the_job_s_user_owns_where_anyone_may_write_and_nothing_else(tmp_path_factory, tree):
    base = tmp_path_factory.mktemp("sweep")
    outside = base / "outside"
    outside.write_text("the grader's")
    os.chown(outside, UID, UID)  # even a file the user owns is not reached through a link
    top = base / "tmp"
    top.mkdir()
    top.chmod(0o1777)
    for name, entry in tree.items():
        make(top / name, entry, outside)
    expected = {top}
    for name, entry in tree.items():
        expected |= expected_after(top / name, entry, True)
    users.sweep(UID, [str(top)])
    left = {top} | {Path(folder) / name for folder, folders, files in os.walk(top) for name in folders + files}
    assert left == expected
    assert outside.read_text() == "the grader's"


def test_the_scan_finds_the_folders_anyone_may_write_and_does_not_follow_links(tmp_path):
    (tmp_path / "open" / "inner").mkdir(parents=True)
    (tmp_path / "open").chmod(0o1777)
    (tmp_path / "closed" / "deep").mkdir(parents=True)
    (tmp_path / "closed" / "deep").chmod(0o777)
    (tmp_path / "via_link").symlink_to(tmp_path / "closed")
    found = users.writable_folders(str(tmp_path))
    assert found == sorted([str(tmp_path / "closed" / "deep"), str(tmp_path / "open")])


def test_the_scan_of_this_machine_finds_tmp_and_skips_proc():
    found = users.writable_folders()
    assert "/tmp" in found and not any(folder.startswith(("/proc/", "/sys/")) for folder in found)


def _alive(process):
    return process.poll() is None


def test_a_pool_gives_each_job_a_folder_of_its_own_and_takes_back_nothing_of_the_job(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    pool = users.UserPool([UID, OTHER])
    pool._scan.join()
    pool._found[0] = [str(shared)]  # the machine's world-writable folders, for this test: one of its own
    try:
        first = pool.acquire()
        second = pool.acquire()
        assert first.uid != second.uid
        for user in (first, second):
            info = os.stat(user.folder)
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (user.uid, 0o700)
        assert stat.S_IMODE(os.stat(pool.root).st_mode) == 0o711
        # The first job leaves a process behind (in a session of its own) and files in its folder and the shared one.
        left = subprocess.Popen(["/bin/sleep", "300"], user=first.uid, group=first.uid, extra_groups=[],
                                start_new_session=True, cwd="/")
        kept = subprocess.Popen(["/bin/sleep", "300"], user=second.uid, group=second.uid, extra_groups=[],
                                start_new_session=True, cwd="/")
        (Path(first.folder) / "notes").write_text("mine")
        for name in ("a", "b"):
            (shared / name).write_text("x")
        os.chown(shared / "a", first.uid, first.uid)
        os.chown(shared / "b", second.uid, second.uid)
        assert first.uid in [int(line.split()[1]) for line in
                             Path(f"/proc/{left.pid}/status").read_text().splitlines() if line.startswith("Uid:")]
        pool.release(first)
        deadline = time.monotonic() + 5
        while _alive(left) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _alive(left) and _alive(kept)  # the other job's process is not its to end
        assert not Path(first.folder).exists()
        assert not (shared / "a").exists() and (shared / "b").exists()
        again = pool.acquire()
        assert again.uid == first.uid and Path(again.folder) != Path(first.folder)
        assert list(Path(again.folder).iterdir()) == []
        pool.release(again)
        pool.release(second)
        assert not _alive(kept)
    finally:
        for process in (left, kept):
            if _alive(process):
                process.kill()
        pool.close()
    assert not Path(pool.root).exists()


def test_a_busy_pool_waits_for_a_user_then_says_so(tmp_path):
    pool = users.UserPool([UID], folders=[])
    try:
        held = pool.acquire()
        with pytest.raises(users.PoolFailed, match="busy"):
            pool.acquire(timeout=0.2)
        pool.release(held)
        pool.release(pool.acquire(timeout=0.2))
    finally:
        pool.close()


def test_a_python_that_job_users_cannot_run_is_said_plainly(monkeypatch, tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    fake = private / "python3"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o700)
    monkeypatch.setattr(users.sys, "executable", str(fake))
    with pytest.raises(OSError, match="readable by every user"):
        users.exposed([str(fake)], UID)


def test_the_command_line_refuses_job_users_that_could_read_the_kit_and_says_what_to_change(tmp_path,
                                                                                            reference_text):
    """This checkout is readable by everyone (or its Python is not): tier C would leak the reference, so the
    grader refuses to start in it, naming the fix, and grades nothing."""
    from autograder.course.build import ROOT

    submission = tmp_path / "alice.py"
    submission.write_text(reference_text)
    ran = subprocess.run([users.sys.executable, "-m", "autograder", "grade", str(submission), "--sandbox", "users",
                          "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "Jobs cannot run as users of their own here" in ran.stderr
    assert "chmod -R go-rwx" in ran.stderr or "readable by every user" in ran.stderr, ran.stderr
    assert not (tmp_path / "out" / "grades.csv").exists()
