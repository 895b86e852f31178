"""pytest in a student's folder, as ``python -m pytest`` runs it there, forked from a process that has imported torch.

The tests of the self-checks' content (does each known mistake fail its task's checks, does a correct formulation
pass them) run pytest once per submission, a hundred times and more, and a fresh ``python -m pytest`` spends most of
its time importing torch (1.5 s of 2.1 s here). So a server (this file, run as a script: it imports nothing of the
kit or of the tests) imports torch, numpy and pytest once, and each run is a fork of it that enters the folder, puts
the folder first on the import path as ``python -m`` does, takes the run's environment, and calls ``pytest.main``
with the same arguments, its output to files. Everything the student's pytest does is its own: collection, the
folder's conftest and checks, in a process of its own. A test of how a student starts pytest (the command itself)
keeps ``subprocess``.

    python tests/helpers/forked_pytest.py    (the server: one JSON request a line on stdin, "id exit-code" out)
"""

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
from pathlib import Path


def _child(request):
    """In the fork: pytest in the request's folder; never returns."""
    code = 3
    try:
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            opened = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["folder"])
        sys.path.insert(0, request["folder"])  # python -m puts the folder it starts in first
        import pytest

        sys.argv = [pytest.__file__, *request["args"]]
        code = int(pytest.main(list(request["args"])))
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else 1
    except BaseException:  # noqa: BLE001  (what happened is in the stderr file)
        import traceback

        traceback.print_exc()
        code = 3
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def serve():
    """Fork a child for each request line; write "id exit-code" when it ends. Ends when stdin closes."""
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch  # noqa: F401  (the point: imported once, for every run)

    running, buffer, open_input = {}, b"", True
    while open_input or running:
        readable, _, _ = select.select([0] if open_input else [], [], [], 0.02)
        if readable:
            chunk = os.read(0, 1 << 16)
            open_input = bool(chunk)
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(request)
                running[pid] = request["id"]
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            os.write(1, f"{running.pop(pid)} {os.waitstatus_to_exitcode(status)}\n".encode())


class _Server:
    def __init__(self):
        here = Path(__file__).resolve()
        self.process = subprocess.Popen([sys.executable, str(here)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        cwd=tempfile.gettempdir())
        self.lock, self.done, self.codes, self.next = threading.Lock(), {}, {}, 0
        threading.Thread(target=self._read, daemon=True).start()
        atexit.register(self.close)

    def _read(self):
        for line in self.process.stdout:
            number, code = line.decode().split()
            with self.lock:
                self.codes[int(number)] = int(code)
                event = self.done.get(int(number))
            if event is not None:
                event.set()
        with self.lock:  # the server is gone: nobody waits for ever
            for event in self.done.values():
                event.set()

    def run(self, request, timeout):
        event = threading.Event()
        with self.lock:
            number = self.next = self.next + 1
            self.done[number] = event
            self.process.stdin.write((json.dumps({**request, "id": number}) + "\n").encode())
            self.process.stdin.flush()
        if not event.wait(timeout):
            raise subprocess.TimeoutExpired(["pytest", *request["args"]], timeout)
        with self.lock:
            self.done.pop(number)
            if number not in self.codes:
                raise RuntimeError("the forked pytest server ended before the run did")
            return self.codes.pop(number)

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)


_SERVER, _START = None, threading.Lock()


def run(folder, *args, timeout=120, env=None):
    """``subprocess.run([python, -m, pytest, *args], cwd=folder, capture_output=True, text=True)``, forked: a
    CompletedProcess with pytest's exit code, stdout and stderr."""
    global _SERVER
    with _START:
        if _SERVER is None or _SERVER.process.poll() is not None:
            _SERVER = _Server()
    with tempfile.TemporaryDirectory(prefix="forked-pytest-") as scratch:
        paths = [Path(scratch) / name for name in ("stdout", "stderr")]
        for path in paths:
            path.touch()
        request = {"folder": str(Path(folder).resolve()), "args": list(args),
                   "env": dict(os.environ if env is None else env), "stdout": str(paths[0]), "stderr": str(paths[1])}
        code = _SERVER.run(request, timeout)
        out, err = (path.read_text(encoding="utf-8", errors="replace") for path in paths)
    return subprocess.CompletedProcess([sys.executable, "-m", "pytest", *args], code, out, err)


if __name__ == "__main__":
    serve()
