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
notebook's folder read-only, a private /tmp, and the worker's address-space
limit (``prlimit``, inside). It talks to nbgrader over
unix sockets in a folder of its own (the ``ipc`` transport: there is no network
inside, and ipykernel warns of a TCP kernel's plain-text traffic), and an interrupt
goes as a message, since a signal to bubblewrap does not reach the kernel. The
kernel and everything it started die with it, before the manager's cleanup returns.

Registered in the course's ``nbgrader_config.py`` as the ``Execute``
preprocessor's ``kernel_manager_class``.
"""

import asyncio
import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import HBChannel
from traitlets import DottedObjectName, Integer, Type

from autograder.sandbox import cleanup, limits
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
    client_class = DottedObjectName("autograder.sandbox.kernel.BoundedKernelClient")
    client_factory = Type(BoundedKernelClient)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._sockets = tempfile.mkdtemp(prefix="kernel-sockets-")  # 0700: the grader's user's alone
        self._bounded = _bound(self._sockets)
        self.transport = "ipc"
        self.ip = os.path.join(self._sockets, "kernel")
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
        command, kwargs = await super()._async_pre_start_kernel(**kwargs)
        self.kernel_spec.interrupt_mode = "message"
        folder = os.path.realpath(kwargs.get("cwd") or os.getcwd())
        connection = os.path.realpath(self.connection_file)
        options, _ = sandbox_options()
        # Inside, the kernel's parent is bubblewrap's init, pid 1, not the launcher's JPY_PARENT_PID. ipykernel takes
        # 1 as a parent it need not watch (--die-with-parent does that job here); without the variable it takes
        # itself for a kernel started by hand and prints its "Ctrl-C will not work" banner into nbgrader's log.
        options += ["--setenv", "JPY_PARENT_PID", "1", "--bind", self._sockets, self._sockets,
                    "--ro-bind", connection, connection, "--ro-bind", folder, folder, "--chdir", folder]
        options += READ_ONLY_ROOT if not os.path.exists("/dev/nvidiactl") else READ_ONLY_ROOT[2:]
        environment = {name: value for name, value in (kwargs.get("env") or os.environ).items()
                       if name in KEPT_VARIABLES}
        environment.update({"HOME": "/tmp", "TMPDIR": "/tmp", "MPLCONFIGDIR": "/tmp", "IPYTHONDIR": "/tmp/.ipython",
                            "JUPYTER_RUNTIME_DIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
        kwargs["env"] = environment
        # The limits are set inside, on the kernel itself: set from outside they would bind bubblewrap only.
        limits = [shutil.which("prlimit") or "/usr/bin/prlimit", f"--as={self.memory_bytes}", "--core=0", "--"] \
            if shutil.which("prlimit") else []
        return options + limits + command, kwargs

    async def _async_launch_kernel(self, kernel_cmd, **kwargs):
        await super()._async_launch_kernel(kernel_cmd, **kwargs)
        self._sandbox = await _sandbox_of(self.provisioner.pid)

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
        if not restart:  # whatever the kernel wrote there, however deep: gone (a recursive rmtree is not enough)
            if self._bounded:
                _unbound(self._sockets)
            if not cleanup.remove(self._sockets):
                self.log.warning("Could not remove everything the kernel wrote in %s", self._sockets)


def _parent_of(pid):
    """The parent's pid of a running process; None once it has exited."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in "ZX" else int(fields[1])


async def _sandbox_of(bubblewrap_pid, wait=5.0):
    """A pidfd of the sandbox's init (bubblewrap's one child, pid 1 of the namespace), or None where there is none.

    Killing that process ends every process of the sandbox (the kernel and whatever it started), and it exits only
    once they have all gone: its exit is the sandbox's end. A pidfd names that very process, never a later one that
    gets its pid.
    """
    if not hasattr(os, "pidfd_open"):
        return None
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            entries = os.listdir("/proc")
        except OSError:
            return None
        for pid in (int(name) for name in entries if name.isdigit()):
            if _parent_of(pid) != bubblewrap_pid:
                continue
            try:
                handle = os.pidfd_open(pid)
            except OSError:  # gone already, or no pidfds (Linux before 5.3)
                continue
            if _parent_of(pid) == bubblewrap_pid:  # still bubblewrap's child: the pidfd is of that process
                return handle
            os.close(handle)
        if _parent_of(bubblewrap_pid) is None:  # bubblewrap itself is gone
            return None
        await asyncio.sleep(0.01)
    return None


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


# The kernel's socket folder, the one host folder it may write: where the grader is root, a file system of its own
# of this size (a tmpfs), so that a notebook cannot fill the host's /tmp through it; elsewhere it is bounded by the
# kernel's limits only (docs/threat-model.md, invariant 4).
SOCKET_FOLDER_BYTES = 1024 * 1024
SOCKET_FOLDER_FILES = 256


def _bound(folder):
    """Mount a small tmpfs on ``folder`` where this process may (root); whether it did."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        return False
    options = f"size={SOCKET_FOLDER_BYTES},nr_inodes={SOCKET_FOLDER_FILES},mode=0700,nosuid,nodev,noexec"
    done = subprocess.run([mount, "-t", "tmpfs", "-o", options, "kernel-sockets", folder], capture_output=True)
    return done.returncode == 0


def _unbound(folder):
    umount = shutil.which("umount")
    if umount is not None:
        subprocess.run([umount, "--lazy", folder], capture_output=True)
