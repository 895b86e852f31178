"""Invariants 4 and 6: nothing a job writes outlives it, whatever tree it makes; and removing it touches nothing else.

``cleanup.remove`` is the one removal of a place a job could write (autograder/sandbox/cleanup.py). Here:

* hypothesis draws trees (deep chains, fan-out, names of 255 bytes, FIFOs, links to files and folders outside,
  folders closed to reading, writing or both), removed by root or by their owner (an unprivileged user, who
  must open what the job closed): nothing of the tree is left, and nothing outside it changes;
* a job user's tree 100 000 levels deep, in its own folder and in a world-writable one, costs nothing at
  release: the pool removes it and gives the id out again (``shutil.rmtree`` raised RecursionError there);
* a class run in bubblewrap (tier A) with a submission that builds such a tree in every folder it may write
  completes with every row, grades.csv and the summary.
"""

import csv
import os
import stat
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from autograder.sandbox import cleanup, users
from conftest import TEST_UIDS, leased_on_this_machine

ROOT = Path(__file__).resolve().parents[2]
UID, = TEST_UIDS["test_cleanup.py"]  # near the pool's end, never a grading run's first, and no other file's
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="made as another user, and removed by root")
FAST = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # a tmpfs: deep trees are slow on some disks

FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def _job_python():
    """A Python a job's user may run (this one, or the system's: what runs as that user here needs no more than the
    standard library), or None."""
    for python in (sys.executable, "/usr/bin/python3"):
        try:
            with leased_on_this_machine(UID):
                subprocess.run([python, "-I", "-c", "pass"], user=UID, group=UID, extra_groups=[], cwd="/",
                               check=True, capture_output=True, timeout=60)
            return python
        except (OSError, subprocess.SubprocessError):
            continue
    return None


JOB_PYTHON = _job_python() if os.geteuid() == 0 else None
as_job = pytest.mark.skipif(JOB_PYTHON is None, reason="no Python that a job's user may run")


def deep_chain(top_fd, levels, name="d"):
    """A chain of folders ``levels`` deep in the open folder ``top_fd``, one level at a time (no path names it)."""
    here = os.dup(top_fd)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=here)
            below = os.open(name, FOLDER, dir_fd=here)
            os.close(here)
            here = below
    finally:
        os.close(here)


# A tree: ("file",), ("fifo",), ("link", "file" or "folder"), or ("folder", mode, {name: tree}, chain depth below).
names = st.one_of(st.text("abcxyz._-", min_size=1, max_size=6).filter(lambda name: name not in (".", "..")),
                  st.sampled_from(["n" * 255, "é" * 127]))  # the longest names a folder may hold (255 bytes)
modes = st.sampled_from([0o755, 0o700, 0o000, 0o500, 0o300, 0o1777])
trees = st.recursive(
    st.one_of(st.just(("file",)), st.just(("fifo",)), st.tuples(st.just("link"), st.sampled_from(["file", "folder"]))),
    lambda children: st.tuples(st.just("folder"), modes, st.dictionaries(names, children, max_size=4),
                               st.sampled_from([0, 0, 0, 20, 1500])),
    max_leaves=16)


def build(parent_fd, name, tree, outside, owner):
    kind = tree[0]
    if kind == "file":
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=parent_fd)
        os.write(handle, b"a classmate's work")
        os.close(handle)
    elif kind == "fifo":
        os.mkfifo(name, dir_fd=parent_fd)
    elif kind == "link":
        os.symlink(str(outside / tree[1]), name, dir_fd=parent_fd)
    else:
        os.mkdir(name, dir_fd=parent_fd)
        below = os.open(name, FOLDER, dir_fd=parent_fd)
        try:
            for child, subtree in tree[2].items():
                build(below, child, subtree, outside, owner)
            if tree[3]:
                deep_chain(below, tree[3], name="chain" + "c" * 200)  # 1500 levels of 205 bytes: far past PATH_MAX
                _chown_chain(below, "chain" + "c" * 200, owner)
            os.fchmod(below, tree[1])
        finally:
            os.close(below)
    os.chown(name, owner, owner, dir_fd=parent_fd, follow_symlinks=False)


def _chown_chain(top_fd, name, owner):
    here = os.dup(top_fd)
    while True:
        try:
            below = os.open(name, FOLDER, dir_fd=here)
        except FileNotFoundError:
            break
        os.chown(name, owner, owner, dir_fd=here, follow_symlinks=False)
        os.close(here)
        here = below
    os.close(here)


def snapshot(folder):
    """Every path below ``folder`` with its kind, mode, owner and content: what must not change."""
    found = {}
    for path in [folder, *folder.rglob("*")]:
        info = path.lstat()
        found[str(path)] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid,
                            path.read_bytes() if path.is_file() and not path.is_symlink() else None)
    return found


REMOVE_AS_OWNER = """
import sys
sys.path.insert(0, sys.argv[1])
import cleanup
print(cleanup.remove(sys.argv[2]))
"""


@pytest.fixture(scope="module")
def readable_cleanup():
    """A folder every user may read holding a copy of autograder/sandbox/cleanup.py (standard library only), for
    the job's user to import: the kit's own folder may be closed to it (a clone in a folder only root may enter,
    as `mktemp -d` makes)."""
    folder = Path(tempfile.mkdtemp(prefix="kit-cleanup-"))
    try:
        shutil.copy(ROOT / "autograder" / "sandbox" / "cleanup.py", folder / "cleanup.py")
        folder.chmod(0o755)
        (folder / "cleanup.py").chmod(0o644)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@as_root
@as_job
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow])
@given(tree=st.dictionaries(names, trees, min_size=1, max_size=4), top_mode=modes, by_owner=st.booleans())
def test_removal_leaves_nothing_of_any_tree_and_touches_nothing_outside(readable_cleanup, tree, top_mode, by_owner):
    """Removed by root, or by its owner (who must open the folders the job closed): never through a link."""
    folders = [subtree for subtree in _nodes(tree) if subtree[0] == "folder"]
    event(f"deepest chain: {max([folder[3] for folder in folders], default=0)}")
    event(f"a folder closed to its owner: {any(folder[1] & 0o700 != 0o700 for folder in folders)}")
    base = Path(tempfile.mkdtemp(dir=FAST))
    try:
        owner = UID if by_owner else 0
        outside = base / "outside"  # what the links point to, the owner's too: reachable only through a link
        (outside / "folder").mkdir(parents=True)
        (outside / "folder" / "keep").write_text("the grader's")
        (outside / "file").write_text("the grader's")
        for path in (outside, outside / "folder", outside / "folder" / "keep", outside / "file"):
            os.chown(path, owner, owner)
        base.chmod(0o1777)  # the owner may remove its own entries here, as in /tmp
        before = snapshot(outside)
        top = base / "job"
        top.mkdir()
        top_fd = os.open(top, FOLDER)
        try:
            for name, subtree in tree.items():
                build(top_fd, name, subtree, outside, owner)
        finally:
            os.close(top_fd)
        top.chmod(top_mode)
        os.chown(top, owner, owner)
        if by_owner:
            with leased_on_this_machine(UID):
                done = subprocess.run([JOB_PYTHON, "-I", "-c", REMOVE_AS_OWNER, str(readable_cleanup), str(top)], user=UID,
                                      group=UID, extra_groups=[], capture_output=True, text=True, cwd="/",
                                      timeout=60)
            assert done.stdout.strip() == "True", done.stdout + done.stderr
        else:
            assert cleanup.remove(str(top))
        assert not os.path.lexists(top)
        assert snapshot(outside) == before
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)


def _nodes(tree):
    for subtree in tree.values():
        yield subtree
        if subtree[0] == "folder":
            yield from _nodes(subtree[2])


def test_a_link_given_for_removal_goes_and_what_it_points_to_stays(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "keep").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert cleanup.remove(str(tmp_path / "link"))
    assert not os.path.lexists(tmp_path / "link") and (tmp_path / "target" / "keep").read_text() == "x"


def test_a_folder_moved_away_while_it_is_cleared_is_left_rather_than_what_it_was_moved_into(tmp_path, monkeypatch):
    """Going back up through ``..`` is checked: a folder moved into another mid-way is not taken for its parent."""
    (tmp_path / "job" / "a" / "b").mkdir(parents=True)
    (tmp_path / "stranger").mkdir()
    (tmp_path / "stranger" / "keep").write_text("not the job's")
    real = cleanup._files_out

    def moving(here):
        found = real(here)
        if os.path.samestat(os.fstat(here), os.stat(tmp_path / "job" / "a" / "b")):
            os.rename(tmp_path / "job" / "a", tmp_path / "stranger" / "a")  # a racing job moves the folder away
        return found

    monkeypatch.setattr(cleanup, "_files_out", moving)
    assert not cleanup.remove(str(tmp_path / "job"))
    assert (tmp_path / "stranger" / "keep").read_text() == "not the job's"


BUILD_AS_JOB = """
import os, sys
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
for top in sys.argv[2:]:
    here = os.open(top, FOLDER)
    for level in range(int(sys.argv[1])):
        os.mkdir("d", dir_fd=here)
        if level % 10000 == 5:  # a folder it closes, to read and to write, on the way down
            os.mkfifo("fifo", dir_fd=here)
            os.symlink("/etc/passwd", "link", dir_fd=here)
        below = os.open("d", FOLDER, dir_fd=here)
        if level % 10000 == 5:
            os.fchmod(here, 0)
        os.close(here)
        here = below
    os.close(here)
"""


@as_root
@as_job
@pytest.mark.skipif(FAST is None, reason="no tmpfs at /dev/shm")
def test_a_job_user_s_tree_100000_levels_deep_costs_nothing_at_release_and_its_id_serves_again(monkeypatch):
    """Regression: ``shutil.rmtree`` of the job's folder raised RecursionError in ``release``; the id was never
    given back, the tree stayed, and the pool's close raised again (the class run ended before grades.csv)."""
    base = Path(tempfile.mkdtemp(dir=FAST))
    base.chmod(0o755)
    shared = base / "shared"  # a world-writable folder of the machine, as /tmp or /dev/shm
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # the pool's job folders on the tmpfs too
    try:
        pool = users.UserPool([UID], folders=[str(shared)])
    except TypeError:  # the pool before leases: its folders are found by its walk of the machine
        pool = users.UserPool([UID])
        pool._scan.join()
        pool._found[0] = [str(shared)]
    try:
        user = pool.acquire()
        made = subprocess.run([JOB_PYTHON, "-I", "-c", BUILD_AS_JOB, "100000", user.folder, str(shared)],
                              user=user.uid, group=user.uid, extra_groups=[], capture_output=True, text=True,
                              cwd="/", timeout=120)
        assert made.returncode == 0, made.stderr
        pool.release(user)
        assert not os.path.lexists(user.folder)
        assert list(shared.iterdir()) == []
        assert pool.free == [UID] and pool.lost == []
        again = pool.acquire(timeout=5)
        assert list(Path(again.folder).iterdir()) == []
        pool.release(again)
    finally:
        pool.close()
        monkeypatch.undo()
        cleanup.remove(str(base))
    assert not os.path.lexists(base)


DEEP_EVERYWHERE = '''
import os as _os


def _deep_tree(top, levels=100_000):
    """A chain of folders ``levels`` deep below ``top``, one level at a time (its paths are too long to name)."""
    try:
        here = _os.open(top, _os.O_RDONLY | _os.O_DIRECTORY)
    except OSError:
        return
    try:
        for _ in range(levels):
            _os.mkdir("d", dir_fd=here)
            below = _os.open("d", _os.O_RDONLY | _os.O_DIRECTORY, dir_fd=here)
            _os.close(here)
            here = below
    except OSError:  # the folder is full (its inodes are bounded): as deep as it goes
        pass
    finally:
        _os.close(here)


for _top in {_os.environ.get("HOME", "/tmp"), _os.environ.get("TMPDIR", "/tmp"), "/tmp", "/dev/shm", _os.getcwd()}:
    _deep_tree(_top)
'''


def test_a_class_run_with_a_tree_100000_deep_in_every_folder_a_job_may_write_completes_with_every_row(
        tmp_path, reference_text):
    """Tier A (bubblewrap): the job's /work, /tmp and /dev/shm are its own file systems, dropped whole."""
    from autograder.sandbox.server import bubblewrap_problem

    if bubblewrap_problem():
        pytest.skip(bubblewrap_problem())
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "deep.py").write_text(reference_text + DEEP_EVERYWHERE)
    (folder / "honest.py").write_text(reference_text)
    out = tmp_path / "results"
    environment = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out), "--jobs", "2",
                           "--sandbox", "bubblewrap", "--timeout", "60", "--task-timeout", "10",
                           "--without-gpu", "cpu"], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "grades.csv", newline="") as handle:
        rows = {row[0]: row for row in csv.reader(handle)}
    assert set(rows) == {"submission", "deep", "honest"}
    assert rows["honest"][1] == rows["honest"][2]  # full marks, as alone
    assert (out / "summary.txt").is_file()
