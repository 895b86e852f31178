"""Removal of what a job wrote: any tree, however deep, wide or hostile, gone without recursion or a followed link.

A job may leave a chain of folders thousands of levels deep (its paths far too long to name), folders it
made unreadable or unwritable, links to the grader's files, FIFOs. ``shutil.rmtree`` recurses once per level
(a RecursionError at about a thousand) and needs each path to fit in PATH_MAX. ``remove`` instead works by
file descriptor, one folder open at a time, with a stack of what is left to do:

* every name is opened relative to its folder's descriptor, with O_NOFOLLOW: a link is removed, never
  followed, and no path is ever longer than one name;
* it goes back up through ``..``, and checks that this is the very folder it came down from (device and
  inode): a folder moved away meanwhile is left, rather than clearing whatever it was moved into;
* it stays on one file system (it does not descend into a mount point);
* a folder it may not read or write is made so first (root may anyway; the grader running as another user
  may chmod what it owns).

Every removal of a place a job could write goes through ``remove`` (see autograder/sandbox/users.py: the
job's folder, the sweep of the world-writable folders, the pool's own folder).
"""

import os
import stat

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove(name, dir_fd=None):
    """Remove ``name`` (a path, or a name in the open folder ``dir_fd``): a file, a link (not what it points to),
    a FIFO, or a folder with everything below it. Returns whether nothing of it is left; never raises OSError."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        return _unlink(name, dir_fd)
    top = _open_folder(name, dir_fd)
    if top is None:  # no longer a folder (a link put in its place is removed, not followed), or closed to us
        return (not _is_folder_now(name, dir_fd) and _unlink(name, dir_fd)) or _gone(name, dir_fd)
    try:
        if _identity(top) != (info.st_dev, info.st_ino):
            return False  # swapped between the look and the open: not the folder we were asked to remove
        emptied = empty(top)
    finally:
        os.close(top)
    return _rmdir(name, dir_fd) and emptied


def empty(folder):
    """Remove everything in the open folder ``folder`` (a descriptor, left open; the folder stays).

    Returns whether it is empty now. Holds one descriptor at a time however deep the tree goes; what
    is left to do in each folder above is kept in a list (``stack``), not in Python's call stack.
    """
    whole = True
    try:
        here = os.open(".", _FOLDER, dir_fd=folder)  # a description of its own: ``folder``'s offset is the caller's
    except OSError:
        return False
    identity, pending = _identity(here), None
    stack = []  # for each folder above ``here``: (its identity, the name of the one below it, its folders left)
    try:
        while True:
            if pending is None:  # entered for the first time: its files go now, its folders one by one
                pending, removed = _files_out(here)
                whole &= removed
            if pending:
                name = pending.pop()
                below = _enter(here, name, identity[0])
                if below is None:
                    whole &= _gone(name, here)
                    continue
                stack.append((identity, name, pending))
                os.close(here)
                here, identity, pending = below, _identity(below), None
                continue
            if not stack:
                return whole
            # ``here`` is as empty as it gets: back up to the folder it is in, and remove it from there
            child = identity
            identity, name, pending = stack.pop()
            try:
                up = os.open("..", _FOLDER, dir_fd=here)
            except OSError:
                return False
            os.close(here)
            here = up
            if _identity(here) != identity:  # moved while we worked: stop, rather than clear a stranger
                return False
            try:
                same = _identity_of(name, here) == child
            except OSError:
                same = False
            whole &= same and _rmdir(name, here)
    finally:
        os.close(here)


def _identity(fd):
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _identity_of(name, dir_fd):
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    return info.st_dev, info.st_ino


def _files_out(here):
    """Remove every entry of the open folder ``here`` that is not a folder; returns (its folders, whether all went)."""
    found = None
    for attempt in (1, 2):
        try:
            with os.scandir(here) as entries:
                found = [(entry.name, _is_folder(entry)) for entry in entries]
            break
        except PermissionError:
            if attempt == 2 or not _open_up(here):
                return [], False
        except OSError:
            return [], False
    folders, whole = [], True
    for name, is_folder in found:
        if is_folder:
            folders.append(name)
        elif not _unlink(name, here):
            if _is_folder_now(name, here):  # a folder since the listing: it is cleared like the others
                folders.append(name)
            else:
                whole = False
    return folders, whole


def _is_folder(entry):
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_folder_now(name, dir_fd):
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _gone(name, dir_fd):
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _unlink(name, dir_fd):
    return _removed(os.unlink, name, dir_fd)


def _rmdir(name, dir_fd):
    return _removed(os.rmdir, name, dir_fd)


def _removed(remove_one, name, dir_fd):
    """``remove_one`` (os.unlink or os.rmdir) of ``name`` in ``dir_fd``; a folder that refuses is opened up once."""
    for attempt in (1, 2):
        try:
            remove_one(name, dir_fd=dir_fd)
            return True
        except FileNotFoundError:
            return True
        except PermissionError:
            if attempt == 2 or dir_fd is None or not _open_up(dir_fd):
                return False
        except OSError:
            return False
    return False


def _open_up(fd):
    """Give the open folder ``fd`` read, write and search permission for its owner (the job closed it)."""
    try:
        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | stat.S_IRWXU)
        return True
    except OSError:
        return False


def _open_folder(name, dir_fd):
    """The folder ``name`` (in ``dir_fd``) opened for listing, never through a link; made readable first if the
    job closed it. None where it is not a folder (any more) or cannot be opened."""
    for attempt in (1, 2):
        try:
            return os.open(name, _FOLDER, dir_fd=dir_fd)
        except PermissionError:
            if attempt == 2:
                return None
            try:  # O_PATH needs no permission on the folder itself; chmod through it reaches that folder only
                handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except OSError:
                return None
            try:
                mode = stat.S_IMODE(os.fstat(handle).st_mode)
                os.chmod(f"/proc/self/fd/{handle}", mode | stat.S_IRWXU)
            except OSError:
                return None
            finally:
                os.close(handle)
        except OSError:  # a link (ELOOP), no longer a folder (ENOTDIR), gone
            return None
    return None


def _enter(here, name, device):
    """The folder ``name`` of ``here``, opened; or None once it is removed (it was not a folder after all),
    or where it cannot be (a mount point: another file system is not the job's to clear)."""
    below = _open_folder(name, here)
    if below is None:
        if not _is_folder_now(name, here):
            _unlink(name, here)
        return None
    if os.fstat(below).st_dev != device:
        os.close(below)
        return None
    return below
