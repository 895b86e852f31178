"""A Jupyter kernel inside bubblewrap, for ``nbgrader autograde``.

nbgrader runs each submitted notebook in a kernel before it saves the grades. A
plain kernel runs with the instructor's rights: the student's code there could
change the gradebook (``gradebook.db``), the grader's own files, or another
student's notebook, or leave a process behind that does so later. The grade
itself comes from ``TrustedGrades`` (nbgrader_bridge.py), out of the kernel; this
keeps the kernel from touching anything else.

``SandboxedKernelManager`` starts the kernel the way the grader's worker runs:
under bubblewrap, in new user, PID, network, IPC and mount namespaces, with the
system's libraries and the Python environment read-only (the grader's package
and the reference covered, so the hidden regions of the test cells find no
``autograder`` to import, and their verdict comes from ``TrustedGrades``), the
notebook's folder read-only, and the worker's address-space limit (``prlimit``, inside).
What it may write is four folders of its own, each a tmpfs of a fixed size and number
of files, mounted by the sandbox's first program (kernel_folders.py) in a namespace of
the kernel's own, which can make no other: /tmp, /work, /dev/shm, and its sockets'
folder. It talks to nbgrader over unix sockets there (the ``ipc`` transport: there is
no network inside, and ipykernel warns of a TCP kernel's plain-text traffic), which the
grader reaches through the kernel's ``/proc/PID/root``: no folder of the machine's is
written. An interrupt goes as a message, since a signal to bubblewrap does not reach
the kernel. The kernel and everything it started die with it, before the manager's
cleanup returns, and its folders with them.

Registered in the course's ``nbgrader_config.py`` as the ``Execute``
preprocessor's ``kernel_manager_class``.
"""

import asyncio
import contextlib
import json
import os
import select
import shutil
import signal
import sys
import time
from pathlib import Path

from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import HBChannel
from traitlets import DottedObjectName, Integer, Type

from autograder.sandbox import limits
from autograder.sandbox.server import READ_ONLY_ROOT, bubblewrap, sandbox_options

# What the kernel gets as its environment: nothing of the instructor's but the language and the path.
# NBGRADER_EXECUTION ("autograde" while nbgrader grades): the lesson's last part trains for a few steps only then.
KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NBGRADER_EXECUTION")


class BoundedHBChannel(HBChannel):
    """The heartbeat channel, whose stop waits a bounded time.

    The heartbeat's thread sends a ping and waits for the kernel's reply. A kernel whose code has written into
    its own sockets (a submission can: they are descriptors of its process) never answers, and the send never
    returns; jupyter_client's ``stop`` then joins that thread forever, and nbgrader hangs with it. Here the
    thread (a daemon) is left to end with the process.
    """

    STOP_SECONDS = 3.0

    def stop(self):
        self._running = False
        self._exit.set()
        self.join(self.STOP_SECONDS)
        if not self.is_alive():
            self.close()


class BoundedKernelClient(AsyncKernelClient):
    """The kernel client nbgrader uses for a sandboxed kernel: its heartbeat cannot hang the grading run."""

    hb_channel_class = Type(BoundedHBChannel)


class SandboxedKernelManager(AsyncKernelManager):
    """An AsyncKernelManager whose kernel runs under bubblewrap (see the module's docstring)."""

    memory_bytes = Integer(limits.MEMORY_BYTES, help="Address-space limit of the kernel").tag(config=True)
    scratch_bytes = Integer(limits.SCRATCH_BYTES, help="Size of each of the kernel's private folders (/tmp, "
                            "/work, /dev/shm)").tag(config=True)
    client_class = DottedObjectName("autograder.sandbox.kernel.BoundedKernelClient")
    client_factory = Type(BoundedKernelClient)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.ip = SOCKETS_INSIDE  # as the kernel sees it; the grader's side reaches it through _sockets
        self._sockets = None  # a descriptor of the kernel's socket folder, in the sandbox (_socket_folder_of)
        self._sandbox = None  # a pidfd of the running sandbox's init (_sandbox_of)

    # A kernel whose code wrote into its own sockets may never read a message again: zmq's send then waits for
    # ever, and nbgrader with it (an interrupt and a shutdown request both go over the control socket). Here a
    # send gives up after CONTROL_SEND_MS; the kernel is then killed, as a shutdown does when asking fails.
    CONTROL_SEND_MS = 2000

    def _connect_control_socket(self):
        if self._control_socket is None:
            super()._connect_control_socket()
            self._control_socket.sndtimeo = self.CONTROL_SEND_MS
            self._control_socket.linger = 0

    async def _async_interrupt_kernel(self):
        import zmq

        try:
            await super()._async_interrupt_kernel()
        except zmq.Again:
            self.log.warning("The kernel does not read its control socket; it will be killed instead")

    async def _async_request_shutdown(self, restart=False):
        import zmq

        try:
            await super()._async_request_shutdown(restart=restart)
        except zmq.Again:
            self.log.warning("The kernel does not read its control socket; killing it")
            await self._async_kill_kernel()

    async def _async_pre_start_kernel(self, **kwargs):
        if bubblewrap() is None:
            raise RuntimeError("bubblewrap (bwrap) is not installed, so the notebook's kernel cannot be sandboxed. "
                               "Install it (Debian/Ubuntu: apt-get install bubblewrap).")
        self._close_sockets()  # a restart: the connection file (written once) names the folder as seen inside
        self.ip = SOCKETS_INSIDE
        command, kwargs = await super()._async_pre_start_kernel(**kwargs)
        self.kernel_spec.interrupt_mode = "message"
        folder = os.path.realpath(kwargs.get("cwd") or os.getcwd())
        connection = os.path.realpath(self.connection_file)
        options, readable = sandbox_options(self.scratch_bytes)
        gpu = os.path.exists("/dev/nvidiactl")
        # Inside, the kernel's parent is bubblewrap's init, pid 1, not the launcher's JPY_PARENT_PID. ipykernel takes
        # 1 as a parent it need not watch (--die-with-parent does that job here); without the variable it takes
        # itself for a kernel started by hand and prints its "Ctrl-C will not work" banner into nbgrader's log.
        options += ["--setenv", "JPY_PARENT_PID", "1", "--dir", os.path.dirname(SOCKETS_INSIDE),
                    "--ro-bind", connection, connection, "--ro-bind", folder, folder, "--chdir", folder]
        # bubblewrap's own private folders stay, read-only and empty: the kernel's are mounted over them, bounded in
        # files as well as bytes, by kernel_folders.py (bubblewrap cannot bound the files).
        for private in PRIVATE_FOLDERS:
            options += ["--remount-ro", private]
        options += READ_ONLY_ROOT if not gpu else READ_ONLY_ROOT[2:]
        below = lambda path, top: path == top or path.startswith(top.rstrip("/") + "/")  # noqa: E731
        spec = {"folders": [(private, self.scratch_bytes, limits.SCRATCH_FILES) for private in PRIVATE_FOLDERS]
                + [(os.path.dirname(SOCKETS_INSIDE), SOCKET_FOLDER_BYTES, SOCKET_FOLDER_FILES)],
                "keep": [path for path in [*readable, connection, folder]
                         if any(below(path, private) for private in PRIVATE_FOLDERS)],
                "read_only_below": "/dev" if gpu else "", "chdir": folder}
        options += [sys.executable, "-I", "-S", "-c", FOLDERS_PROGRAM, json.dumps(spec)]
        environment = {name: value for name, value in (kwargs.get("env") or os.environ).items()
                       if name in KEPT_VARIABLES}
        environment.update({"HOME": "/tmp", "TMPDIR": "/tmp", "MPLCONFIGDIR": "/tmp", "IPYTHONDIR": "/tmp/.ipython",
                            "JUPYTER_RUNTIME_DIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
        kwargs["env"] = environment
        # The limits are set inside, on the kernel itself: set from outside they would bind bubblewrap only.
        prlimit = [shutil.which("prlimit"), f"--as={self.memory_bytes}", "--core=0", "--"] \
            if shutil.which("prlimit") else []
        return options + prlimit + command, kwargs

    async def _async_launch_kernel(self, kernel_cmd, **kwargs):
        await super()._async_launch_kernel(kernel_cmd, **kwargs)
        self._sandbox, init = await _sandbox_of(self.provisioner.pid)
        self._sockets = await _socket_folder_of(init) if init is not None else None
        if self._sockets is None:
            if self._sandbox is not None:
                await _ended(self._sandbox, self.SANDBOX_EXIT_SECONDS)
                self._sandbox = None
            raise RuntimeError("The notebook's kernel did not start in its sandbox: bubblewrap or the sandbox's "
                               "first program (kernel_folders.py) stopped; the kernel's error output says why")
        # The grader's side reaches the sockets through a descriptor of the folder: the same folder whatever becomes
        # of the kernel's pid, and the folder lives until that descriptor is closed (_close_sockets).
        self.ip = f"/proc/self/fd/{self._sockets}/{os.path.basename(SOCKETS_INSIDE)}"

    def _close_sockets(self):
        if self._sockets is not None:
            os.close(self._sockets)
            self._sockets = None

    def cleanup_ipc_files(self):
        # The sockets are in the sandbox's own tmpfs, gone with it; the names jupyter_client would remove here are
        # the grader's own paths, never the kernel's.
        pass

    # The sandbox outlives the bubblewrap process that jupyter_client watches whenever a shutdown ends in a signal
    # (a kernel slow to stop gets SIGTERM after half of shutdown_wait_time): that process dies at once, and its
    # child, the sandbox's init with the kernel below it, only then gets its --die-with-parent SIGKILL and takes a
    # while to go (a kernel holding torch's memory). It must be gone before cleanup returns: nbgrader's step
    # (BoundedExecute) takes whatever is still running then for processes the notebook left, and says so.
    SANDBOX_EXIT_SECONDS = 10

    async def _async_cleanup_resources(self, restart=False):
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None and not await _ended(sandbox, self.SANDBOX_EXIT_SECONDS):
            self.log.warning("The notebook's sandbox did not end within %d s of SIGKILL", self.SANDBOX_EXIT_SECONDS)
        await super()._async_cleanup_resources(restart=restart)
        # The sandbox has ended: its folders, the sockets' one included, had no mount left but in its namespace;
        # closing the last descriptor frees the tmpfs, whatever the kernel wrote there.
        self._close_sockets()


def _parent_of(pid):
    """The parent's pid of a running process; None once it has exited."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in "ZX" else int(fields[1])


async def _sandbox_of(bubblewrap_pid, wait=5.0):
    """A pidfd of the sandbox's init (bubblewrap's one child, pid 1 of the namespace) and its pid, or Nones where
    there is none.

    Killing that process ends every process of the sandbox (the kernel and whatever it started), and it exits only
    once they have all gone: its exit is the sandbox's end. A pidfd names that very process, never a later one that
    gets its pid.
    """
    if not hasattr(os, "pidfd_open"):
        return None, None
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            entries = os.listdir("/proc")
        except OSError:
            return None, None
        for pid in (int(name) for name in entries if name.isdigit()):
            if _parent_of(pid) != bubblewrap_pid:
                continue
            try:
                handle = os.pidfd_open(pid)
            except OSError:  # gone already, or no pidfds (Linux before 5.3)
                continue
            if _parent_of(pid) == bubblewrap_pid:  # still bubblewrap's child: the pidfd is of that process
                return handle, pid
            os.close(handle)
        if _parent_of(bubblewrap_pid) is None:  # bubblewrap itself is gone
            return None, None
        await asyncio.sleep(0.01)
    return None, None


async def _ended(handle, wait):
    """Kill the sandbox's init (its namespace's processes with it), wait for its exit and reap it if it is this
    process's child (a subreaper's, under BoundedExecute); whether it ended within ``wait`` seconds."""
    try:
        with contextlib.suppress(OSError):  # gone already (or not ours to signal: waited for all the same)
            signal.pidfd_send_signal(handle, signal.SIGKILL)
        poller = select.poll()
        poller.register(handle, select.POLLIN)  # readable once the process has exited
        deadline = time.monotonic() + wait
        while not poller.poll(0):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.01)
        with contextlib.suppress(ChildProcessError):  # someone else's child: its parent reaps it
            os.waitid(os.P_PIDFD, handle, os.WEXITED | os.WNOHANG)
        return True
    finally:
        os.close(handle)


async def _socket_folder_of(init, wait=30.0):
    """An O_PATH descriptor of the kernel's socket folder, once kernel_folders.py has mounted it; None if the
    sandbox ends first.

    The kernel runs below the sandbox's init (its first program, kernel_folders.py, and then the kernel, in the
    same process). Its folder is reached through ``/proc/PID/root``, which the grader's user may read (its own
    process, in a namespace it made); it is the one to take once it is a file system of its own (another device
    than the sandbox's root): before that, it is the read-only folder of bubblewrap's root.
    """
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if _parent_of(init) is None:
            return None
        for pid in _children_of(init):
            root = f"/proc/{pid}/root"
            try:
                handle = os.open(root + SOCKETS_INSIDE.rsplit("/", 1)[0], os.O_PATH | os.O_DIRECTORY)
            except OSError:
                continue
            try:
                if os.fstat(handle).st_dev != os.stat(root).st_dev and _parent_of(pid) == init:
                    return handle
            except OSError:
                pass
            os.close(handle)
        await asyncio.sleep(0.01)
    return None


def _children_of(parent):
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    return [int(name) for name in entries if name.isdigit() and _parent_of(int(name)) == parent]


# The kernel's folders, in its sandbox: what it may write, each a tmpfs of the size and number of files below,
# mounted by kernel_folders.py in a namespace of the kernel's own and gone with it. Nothing of the machine's is
# writable (docs/threat-model.md, "The notebook kernel's folders").
PRIVATE_FOLDERS = ("/tmp", "/work", "/dev/shm")  # limits.SCRATCH_BYTES and limits.SCRATCH_FILES each
SOCKETS_INSIDE = "/sockets/kernel"  # the kernel's Unix sockets are SOCKETS_INSIDE-<port>
SOCKET_FOLDER_BYTES = 1024 * 1024
SOCKET_FOLDER_FILES = 256
FOLDERS_PROGRAM = Path(__file__).with_name("kernel_folders.py").read_text()
