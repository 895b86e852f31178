"""What a notebook kernel may write while it runs is bounded, and gone when it ends (issue 36, point 6).

A real ipykernel under bubblewrap, started by SandboxedKernelManager as nbgrader starts it. Every folder it may
write (/tmp, /work, /dev/shm and its sockets' folder) is a tmpfs of a fixed size and a fixed number of files, in a
namespace of its own: a notebook that writes past it (one big file, many small or empty files, a deep tree, POSIX
shared memory) is stopped there with "No space left on device", the grading machine holds no more than the bound
meanwhile, and nothing is left once the kernel has ended. Before, bubblewrap's tmpfs had a size but no bound on its
files (a million empty files are a gigabyte of the machine's memory), and the kernel could make a user namespace of
its own and mount a tmpfs of any size there.
"""

import asyncio
import errno
import json
import os
import subprocess
import sys
import uuid

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from nbclient import NotebookClient

from autograder.sandbox import kernel as kernel_module, limits
from autograder.sandbox.server import bubblewrap, bubblewrap_problem

pytestmark = pytest.mark.skipif(bubblewrap() is None or bool(bubblewrap_problem()),
                                reason="bubblewrap (bwrap) cannot run here")

FOLDERS = {"/tmp": (limits.SCRATCH_BYTES, limits.SCRATCH_FILES), "/work": (limits.SCRATCH_BYTES, limits.SCRATCH_FILES),
           "/dev/shm": (limits.SCRATCH_BYTES, limits.SCRATCH_FILES),
           "/sockets": (kernel_module.SOCKET_FOLDER_BYTES, kernel_module.SOCKET_FOLDER_FILES)}

# Run in the kernel: write in `folder` by `shape` until `target` files or bytes, or a refusal; what was written
# (files made, bytes written, the refusal's errno), and the file system's use then, as the kernel sees it.
WRITER = r'''
import errno, json, os, shutil
def _write(folder, shape, target, token):
    top = os.path.join(folder, token)
    files = written = 0
    refused = None
    try:
        os.mkdir(top); files += 1
        if shape == "big":
            with open(os.path.join(top, "big"), "wb", buffering=0) as handle:
                files += 1
                while written < target:
                    written += handle.write(b"x" * min(1 << 20, target - written))
        elif shape == "empty":
            while files < target:
                open(os.path.join(top, f"e{files}"), "wb").close(); files += 1
        elif shape == "small":
            while written < target:
                with open(os.path.join(top, f"s{files}"), "wb") as handle:
                    files += 1
                    written += handle.write(b"y" * 4096)
        elif shape == "deep":
            fd = os.open(top, os.O_RDONLY)
            try:
                while files < target:
                    os.mkdir("d", dir_fd=fd); files += 1
                    inner = os.open("d", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = inner
            finally:
                os.close(fd)
        elif shape == "shm":  # POSIX shared memory: files in /dev/shm, made by the C library
            import _posixshmem, mmap
            while written < target:
                name = f"/{token}-{files}"
                handle = _posixshmem.shm_open(name, os.O_CREAT | os.O_RDWR, 0o600); files += 1
                try:
                    os.posix_fallocate(handle, 0, 1 << 20)  # memory really taken, not a hole
                finally:
                    os.close(handle)
                written += 1 << 20
    except OSError as error:
        refused = error.errno
    usage = os.statvfs(folder)
    used = ((usage.f_blocks - usage.f_bfree) * usage.f_frsize, usage.f_files - usage.f_ffree)
    return {"files": files, "written": written, "refused": refused, "used": used}
def _clean(folder, token):
    if folder == "/dev/shm":
        for name in os.listdir(folder):
            if name.startswith(token + "-"):  # shared memory objects
                os.unlink(os.path.join(folder, name))
    top = os.path.join(folder, token)
    if os.path.isdir(top):  # a deep tree from its bottom, by descriptors: no recursion, no path too long
        fd, depth = os.open(top, os.O_RDONLY), 0
        while True:
            try:
                inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            except FileNotFoundError:
                break
            os.close(fd); fd, depth = inner, depth + 1
        for _ in range(depth):
            parent = os.open("..", os.O_RDONLY, dir_fd=fd); os.close(fd); fd = parent
            os.rmdir("d", dir_fd=fd)
        os.close(fd)
        shutil.rmtree(top)
'''


class Kernel:
    """One sandboxed kernel for a test module: code run in it returns what it printed (or its error)."""

    def __init__(self, folder):
        from autograder.sandbox.kernel import SandboxedKernelManager

        self.loop = asyncio.new_event_loop()
        self.manager = SandboxedKernelManager()
        self.loop.run_until_complete(self.manager.start_kernel(cwd=str(folder)))
        self.client = self.manager.client()
        self.client.start_channels()
        self.loop.run_until_complete(self.client.wait_for_ready(timeout=120))

    def run(self, code, timeout=120):
        texts = []

        def hook(message):
            content = message["content"]
            if message["msg_type"] == "stream":
                texts.append(content["text"])
            elif message["msg_type"] == "error":
                texts.append(f"{content['ename']}: {content['evalue']}")

        self.loop.run_until_complete(self.client.execute_interactive(code, output_hook=hook, timeout=timeout))
        return "".join(texts)

    def close(self):
        self.client.stop_channels()
        self.loop.run_until_complete(self.manager.shutdown_kernel(now=True))
        self.loop.close()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    started = Kernel(tmp_path_factory.mktemp("notebook"))
    started.run(WRITER)
    yield started
    started.close()


def _result(output):
    """The JSON the kernel printed after "result " (other lines: IPython's own complaints, on its error output)."""
    return json.loads(output.split("result ", 1)[1].splitlines()[0])


def _bound_words(folder):
    size, files = FOLDERS[folder]
    return f"{folder}: {size} bytes, {files} files"


@settings(max_examples=24, deadline=None, suppress_health_check=list(HealthCheck))
@given(folder=st.sampled_from(sorted(FOLDERS)), shape=st.sampled_from(["big", "empty", "small", "deep", "shm"]),
       past=st.booleans(), share=st.floats(0.05, 0.5))
def test_a_write_past_a_kernel_folders_bound_is_refused_at_the_bound(kernel, folder, shape, past, share):
    """Whatever the shape of the writing, the folder holds at most its bytes and its files; a write past them gets
    ENOSPC, one within them is not refused."""
    if shape == "shm" and folder != "/dev/shm":
        folder = "/dev/shm"
    size, files = FOLDERS[folder]
    # What runs out first: the files (empty files, folders), or the bytes (4 KiB files take a page each).
    bound = {"empty": files, "deep": files, "small": min(size, files * 4096)}.get(shape, size)
    # Past the bound: 1.5x it (files, or bytes); within it: a share of it, well clear of what the folder holds already.
    target = int(bound * 1.5) if past else max(1, int(bound * share))
    if shape == "deep" and not past:
        target = min(target, 200)
    token = f"w{uuid.uuid4().hex[:8]}"
    result = _result(kernel.run(f"print('result', json.dumps(_write({folder!r}, {shape!r}, {target}, {token!r})))"))
    try:
        used_bytes, used_files = result["used"]
        assert used_bytes <= size and used_files <= files, (_bound_words(folder), result)
        if past:
            assert result["refused"] == errno.ENOSPC, (_bound_words(folder), shape, result)
            assert result["written"] <= size and result["files"] <= files, (_bound_words(folder), result)
        else:
            assert result["refused"] is None, (_bound_words(folder), shape, target, result)
    finally:
        # (IPython may say, on its error output, that it could not save its history while the folder was full.)
        assert "cleaned" in kernel.run(f"_clean({folder!r}, {token!r}); print('cleaned')")


def test_the_kernel_can_make_no_namespace_of_its_own_to_mount_an_unbounded_folder(kernel):
    """A user namespace of its own would give the kernel the right to mount a tmpfs of any size (half the
    machine's memory by default): it gets none, by the C library or by a program."""
    output = kernel.run(
        "import ctypes, os, subprocess\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('unshare', libc.unshare(0x10000000 | 0x00020000), ctypes.get_errno())\n"
        "run = subprocess.run(['unshare', '-Urm', 'sh', '-c', 'mount -t tmpfs big /tmp && "
        "head -c 200000000 /dev/zero > /tmp/x && echo wrote-200MB'], capture_output=True, text=True)\n"
        "print('program', run.returncode, run.stdout.strip())\n"
        "run = subprocess.run(['sh', '-c', 'mount -t tmpfs big /tmp && echo mounted'], capture_output=True,\n"
        "                     text=True)\n"
        "print('mount', run.returncode, run.stdout.strip())\n"
        "print('capabilities', [line.split()[1] for line in open('/proc/self/status') if line.startswith('CapEff')])\n"
        "print('uid', os.getuid())\n")
    assert f"unshare -1 {errno.EPERM}" in output, output
    assert "wrote-200MB" not in output and "program 0" not in output, output
    # Nor a mount in the namespace it has: it is not root there, and has no capability left.
    assert "mounted" not in output and "capabilities ['0000000000000000']" in output, output
    assert "uid 0" not in output, output


def test_nothing_the_kernel_wrote_is_left_once_it_has_ended(tmp_path):
    """The kernel fills each of its folders; once it has ended, no process of the machine is in its mount
    namespace and the grader holds no descriptor of any of those file systems: they are freed, with all of it."""
    started = Kernel(tmp_path)
    try:
        started.run(WRITER)
        devices = _result(started.run(
            "import os, json\nfor folder in ('/tmp', '/work', '/dev/shm', '/sockets'):\n"
            "    _write(folder, 'small', 4 * 1024**2 if folder != '/sockets' else 10**6, 'fill')\n"
            "print('result', json.dumps({'mnt': os.readlink('/proc/self/ns/mnt'),\n"
            "                            'devices': [os.stat(f).st_dev for f in "
            "('/tmp', '/work', '/dev/shm', '/sockets')]}))"))
    finally:
        started.close()
    assert len(set(devices["devices"])) == 4  # four file systems of their own
    in_namespace = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") == devices["mnt"]:
                in_namespace.append(pid)
        except OSError:
            continue
    assert in_namespace == [], "processes still in the kernel's namespace"
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.stat(f"/proc/self/fd/{fd}").st_dev in devices["devices"]:
                held.append(fd)
        except OSError:
            continue
    assert held == []


def test_a_cell_that_fills_a_folder_fails_with_a_clear_error_and_the_next_cells_run(tmp_path):
    """As nbgrader runs a notebook (nbclient, the sandboxed kernel): the cell that writes past the bound gets
    "No space left on device", the cells after it run."""
    from autograder.sandbox.kernel import SandboxedKernelManager

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import os\nfor number in range(100000):\n    open(f'/tmp/f{number}', 'w').close()",
        "with open('/dev/shm/big', 'wb') as handle:\n    for _ in range(1024):\n        handle.write(b'x' * 2**20)",
        "print('still running')",
    )]
    client = NotebookClient(notebook, timeout=120, kernel_manager_class=SandboxedKernelManager,
                            resources={"metadata": {"path": str(tmp_path)}}, allow_errors=True)
    client.execute()
    errors = [[output for output in cell.outputs if output.get("output_type") == "error"] for cell in notebook.cells]
    for cell in errors[:2]:
        assert cell and cell[0]["ename"] == "OSError" and "No space left on device" in cell[0]["evalue"], cell
    assert errors[2] == [] and notebook.cells[2].outputs[0]["text"].strip() == "still running"


def test_the_machines_dev_bound_in_for_a_gpu_is_read_only_for_the_kernel(tmp_path):
    """Where a GPU is, bubblewrap binds the machine's /dev in: the kernel's first program makes it read-only
    (no file can be made there, to fill it or to outlive the kernel), and its device files still open."""
    from autograder.sandbox.server import READ_ONLY_ROOT, sandbox_options

    options, readable = sandbox_options()
    at = options.index("--dev")
    options[at:at + 2] = ["--dev-bind", "/dev", "/dev", "--ro-bind", "/sys", "/sys"]  # as for a GPU
    name = f"/dev/kernel-test-{uuid.uuid4().hex[:8]}"
    spec = {"folders": [[folder, 1 << 20, 64] for folder in ("/tmp", "/work", "/dev/shm")], "chdir": "/",
            "keep": [path for path in readable if path.startswith(("/tmp/", "/work/"))], "read_only_below": "/dev"}
    probe = (f"import os\ntry:\n    open({name!r}, 'w')\n    print('made')\nexcept OSError as error:\n"
             "    print('refused', error.errno)\nopen('/dev/null', 'w').write('x')\nprint('device open')\n"
             "open('/dev/shm/x', 'w').write('x')\nprint('shm written')")
    run = subprocess.run(options + READ_ONLY_ROOT[2:] + [sys.executable, "-I", "-S", "-c",
                                                         kernel_module.FOLDERS_PROGRAM, json.dumps(spec),
                                                         sys.executable, "-I", "-c", probe],
                         capture_output=True, text=True, timeout=60)
    if os.path.exists(name):
        os.unlink(name)
        pytest.fail(f"the sandbox made {name} in the machine's /dev")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["refused", str(errno.EROFS), "device", "open", "shm", "written"], run.stdout


def test_a_kernel_whose_folders_cannot_be_made_does_not_start_and_says_why(tmp_path, monkeypatch, capfd):
    """Where its bounded folders cannot be mounted (here: a size no tmpfs takes for the sockets' folder, which
    bubblewrap never sees), the kernel is not started without them: starting it fails with a message."""
    from autograder.sandbox.kernel import SandboxedKernelManager

    monkeypatch.setattr(kernel_module, "SOCKET_FOLDER_BYTES", -1)
    manager = SandboxedKernelManager()
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(RuntimeError, match="did not start in its sandbox"):
            loop.run_until_complete(manager.start_kernel(cwd=str(tmp_path)))
        assert manager.provisioner is None or not loop.run_until_complete(manager.is_alive())
        assert "could not mount /sockets" in capfd.readouterr().err
    finally:
        loop.run_until_complete(manager.cleanup_resources())
        loop.close()
