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
inside), and an interrupt goes as a message, since a signal to bubblewrap does
not reach the kernel. The kernel and everything it started die with it.

Registered in the course's ``nbgrader_config.py`` as the ``Execute``
preprocessor's ``kernel_manager_class``.
"""

import os
import shutil
import subprocess
import tempfile

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
        # Inside, the kernel's parent is bubblewrap's init, pid 1, and the launcher's JPY_PARENT_PID is no
        # process there: ipykernel would think its parent gone. --die-with-parent does that job here.
        options += ["--unsetenv", "JPY_PARENT_PID", "--bind", self._sockets, self._sockets,
                    "--ro-bind", connection, connection, "--ro-bind", folder, folder, "--chdir", folder]
        options += READ_ONLY_ROOT if not os.path.exists("/dev/nvidiactl") else READ_ONLY_ROOT[2:]
        environment = {name: value for name, value in (kwargs.get("env") or os.environ).items()
                       if name in KEPT_VARIABLES}  # not JPY_PARENT_PID: inside, the parent is pid 1
        environment.update({"HOME": "/tmp", "TMPDIR": "/tmp", "MPLCONFIGDIR": "/tmp", "IPYTHONDIR": "/tmp/.ipython",
                            "JUPYTER_RUNTIME_DIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
        kwargs["env"] = environment
        # The limits are set inside, on the kernel itself: set from outside they would bind bubblewrap only.
        limits = [shutil.which("prlimit") or "/usr/bin/prlimit", f"--as={self.memory_bytes}", "--core=0", "--"] \
            if shutil.which("prlimit") else []
        return options + limits + command, kwargs

    async def _async_cleanup_resources(self, restart=False):
        await super()._async_cleanup_resources(restart=restart)
        if not restart:  # whatever the kernel wrote there, however deep: gone (a recursive rmtree is not enough)
            if self._bounded:
                _unbound(self._sockets)
            if not cleanup.remove(self._sockets):
                self.log.warning("Could not remove everything the kernel wrote in %s", self._sockets)


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
