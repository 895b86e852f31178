"""The notebook's kernel under bubblewrap, as `nbgrader autograde` starts it with the course config.

A real ipykernel, started by nbclient with SandboxedKernelManager: what the student's code can reach
from the kernel, and what is left once the notebook has run.
"""

import os
import signal
import time
import uuid

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.course.build import ROOT
from autograder.sandbox.server import bubblewrap
from red_team_corpus import processes_named
from conftest import REFERENCE

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap (bwrap) is not installed here")


def _run(cells, folder, timeout=60):
    from autograder.sandbox.kernel import SandboxedKernelManager

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(notebook, timeout=timeout, kernel_manager_class=SandboxedKernelManager,
                            resources={"metadata": {"path": str(folder)}}, interrupt_on_timeout=True,
                            allow_errors=True)
    client.execute()
    return ["".join(output.get("text", "") or output.get("ename", "") for output in cell.outputs)
            for cell in notebook.cells]


def test_the_kernel_cannot_reach_the_grader_the_gradebook_or_the_network(tmp_path):
    folder, course = tmp_path / "autograded" / "alice", tmp_path / "course"
    folder.mkdir(parents=True)
    course.mkdir()
    (course / "gradebook.db").write_text("grades")
    marker = f"kernel-{uuid.uuid4().hex[:8]}"
    outputs = _run([
        "import os, socket\nprint(sorted(os.listdir('.')))",
        f"print([os.path.exists(p) for p in ({str(REFERENCE)!r}, {str(ROOT / 'autograder')!r}, {str(course)!r})])",
        "try:\n    import autograder, solutions\n    print('imported')\nexcept ImportError:\n    print('no grader')",
        f"for path in ({str(course / 'gradebook.db')!r}, {str(folder / marker)!r}, {str(ROOT / marker)!r}):\n"
        "    try:\n        open(path, 'w').write('0')\n        print('wrote', path)\n    except OSError as error:\n"
        "        print('refused', error.errno)",
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    print('connected')\n"
        "except OSError:\n    print('no network')",
        "import torch\ntry:\n    kept = torch.empty(16 * 1024**3, dtype=torch.uint8)\n    print('allocated')\n"
        "except RuntimeError:\n    print('refused')",
    ], folder)
    assert outputs[0].strip() == "[]"
    assert outputs[1].strip() == "[False, False, False]"
    assert outputs[2].strip() == "no grader"
    # The gradebook and the notebook's folder are refused; a write to the kit's folder is refused, or lands in
    # the sandbox's private /tmp when the kit sits below /tmp (a clone in /tmp): either way nothing outside.
    assert outputs[3].splitlines()[:2] == ["refused 2", "refused 30"], outputs[3]
    assert outputs[4].strip() == "no network"
    assert outputs[5].strip() == "refused"  # 16 GiB of address space, past the worker's limit
    assert (course / "gradebook.db").read_text() == "grades"
    assert not (folder / marker).exists() and not (ROOT / marker).exists()


def test_a_daemon_started_in_the_kernel_dies_with_it_and_an_endless_cell_is_interrupted(tmp_path):
    marker = f"daemon-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    outputs = _run([
        f"import subprocess, sys, time\ndaemon = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', "
        f"'{marker}'], start_new_session=True)\ntime.sleep(0.5)\nprint('started' if daemon.poll() is None else 'died')",
        "while True:\n    pass",
        "print('after the interrupt')",
    ], tmp_path, timeout=5)
    assert outputs[0].strip() == "started"
    assert "KeyboardInterrupt" in outputs[1]
    assert outputs[2].strip() == "after the interrupt"
    assert time.monotonic() - started < 60
    time.sleep(0.5)
    survivors = processes_named(marker)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert survivors == []


def test_matplotlib_in_the_sandbox_writes_no_fontconfig_error():
    """The kernel's stderr goes into the student's feedback: drawing text must not complain about fontconfig
    (its configuration, /etc/fonts, is mounted read-only like the other system folders)."""
    import subprocess
    import sys

    from autograder.sandbox.server import READ_ONLY_ROOT, bubblewrap_problem, sandbox_options

    if bubblewrap_problem():
        pytest.skip(f"bubblewrap cannot run here: {bubblewrap_problem()}")
    if not os.path.isdir("/etc/fonts"):
        pytest.skip("this machine has no fontconfig configuration to mount")
    options, _ = sandbox_options()
    script = ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; plt.figure(); "
              "plt.text(0, 0, 'x'); plt.savefig('/tmp/picture.png'); print('drawn')")
    run = subprocess.run(options + READ_ONLY_ROOT + ["--setenv", "HOME", "/tmp", "--setenv", "MPLCONFIGDIR", "/tmp",
                                                     sys.executable, "-c", script],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "drawn" in run.stdout, run.stderr
    assert "Fontconfig" not in run.stderr, run.stderr


# The first lines of a cell that writes in the kernel's socket folder: `folder` is its path, as the kernel sees it.
IN_THE_SOCKET_FOLDER = ("import json, os, stat\nfrom ipykernel.connect import get_connection_file\n"
                        "folder = os.path.dirname(json.load(open(get_connection_file()))['ip'])\n"
                        "print('socket folder', folder)\n")


def _run_in_the_socket_folder(cell, folder):
    """Run ``IN_THE_SOCKET_FOLDER + cell`` in a sandboxed kernel; its output. The folder is the sandbox's own (a
    tmpfs in the kernel's mount namespace, tests/sandbox/test_kernel_folders.py): no folder of the machine's."""
    from autograder.sandbox import kernel

    outputs = _run([IN_THE_SOCKET_FOLDER + cell], folder)
    own = outputs[0].split("socket folder ", 1)[1].split()[0]
    assert own == os.path.dirname(kernel.SOCKETS_INSIDE), own
    return outputs[0].split("\n", 1)[1]


def test_a_deep_tree_in_the_kernels_socket_folder_stops_at_its_bound(tmp_path):
    """The kernel's socket folder holds SOCKET_FOLDER_FILES files and folders at most: a tree thousands deep stops
    there (before, on the host, a 3,000-level tree crashed a recursive removal with RecursionError)."""
    from autograder.sandbox import kernel

    output = _run_in_the_socket_folder(
        "fd, made = os.open(folder, os.O_RDONLY), 0\n"
        "try:\n"
        "    for _ in range(3000):\n        os.mkdir('d', dir_fd=fd)\n"
        "        inner = os.open('d', os.O_RDONLY, dir_fd=fd)\n"
        "        os.close(fd)\n        fd = inner\n        made += 1\n"
        "except OSError as error:\n    print('stopped:', error.strerror)\n"
        "print('deep', made)", tmp_path)
    assert "stopped: No space left on device" in output, output
    assert 0 < int(output.split("deep ")[1].split()[0]) < kernel.SOCKET_FOLDER_FILES, output


def test_the_kernels_socket_folder_is_bounded_and_private(tmp_path):
    """The socket folder is a file system of its own of SOCKET_FOLDER_BYTES, wherever the grader runs (root or not):
    a notebook that writes far more there is stopped at the bound (before, where the grader was not root, it wrote
    into the host's /tmp). It is the kernel's user's alone (mode 0700)."""
    from autograder.sandbox import kernel

    output = _run_in_the_socket_folder(
        "print('mode', oct(stat.S_IMODE(os.stat(folder).st_mode)))\n"
        "written = 0\n"
        "try:\n"
        "    with open(os.path.join(folder, 'filler'), 'wb') as handle:\n"
        "        for _ in range(64):\n            handle.write(b'x' * 2 ** 20)\n            handle.flush()\n"
        "            written += 2 ** 20\n"
        "except OSError as error:\n    print('stopped', error.strerror)\n"
        "print('written', written)", tmp_path)
    assert "mode 0o700" in output, output
    written = int(output.split("written ")[1].split()[0])
    assert "stopped No space left on device" in output and written <= kernel.SOCKET_FOLDER_BYTES, output
