"""Loads your functions for the self-checks: ``pytest -k MODULE_TASK`` (or another task word).

The checks test the functions defined in ``MODULE_NAME.ipynb`` when
this folder has it, else in ``MODULE_NAME.py``; ``--source=FILE``
picks another notebook or .py file (write the "=": after a space, pytest
first takes FILE for tests to collect, which fails for a file in another
folder). A notebook's code cells run in order, each on its own, so an error
in one cell does not hide the functions of the others; magics, shell lines,
the locked test cells and the pictures are left out.

A failure shows your own line (``MODULE_NAME.ipynb, code cell 7, `def f(...)`:12``
is line 12 of the seventh code cell, the one that starts with ``def f(``; markdown cells are not counted).
When torch raised the error inside your function, a part headed
"what went wrong, in words" follows: which of your functions stopped, at which
line, the shapes of the tensors on that line and of the arguments the check
passed, and what torch's message means. Where your function returned exactly
what one of the grade's known mistakes returns on a check's inputs, the failure
names that mistake in the grade's words ("Likely mistake: ...", from
``known_mistakes.json``).
"""

import dis
import functools
import inspect
import keyword
import linecache
import os
import re
import sys
import types
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MODULE = "MODULE_NAME"  # the module your functions are in
DEFAULT_SOURCES = (f"{MODULE}.ipynb", f"{MODULE}.py")
_loaded = {}


def pytest_addoption(parser):
    parser.addoption("--source", metavar="FILE",  # given as --source=FILE: see the docstring
                     help="the notebook or .py file whose functions to check "
                          f"(default: {MODULE}.ipynb here, else {MODULE}.py)")


def _source_path(config):
    given = config.getoption("--source")
    if given:
        path = Path(given).expanduser().resolve()
        if not path.is_file():
            raise pytest.UsageError(f"--source {given}: no such file")
        return path
    for name in DEFAULT_SOURCES:
        if (HERE / name).is_file():
            return HERE / name
    raise pytest.UsageError(f"found neither {' nor '.join(DEFAULT_SOURCES)} in {HERE}; use --source=FILE")


def pytest_configure(config):
    from notebook_loader import LoadError, load

    os.environ.setdefault("MPLBACKEND", "Agg")  # a plot in your code must not open a window
    path = _source_path(config)
    try:
        submission = load(path)
    except LoadError as error:
        raise pytest.UsageError(str(error)) from None
    module = types.ModuleType(MODULE)
    module.__file__ = str(path)
    errors, labels = [], set()
    shown = {}  # the pieces of a .py file that does not compile share its name, each at its own lines
    for chunk in submission.chunks:
        shown[chunk["label"]] = _merged(shown.get(chunk["label"], ""), chunk["source"])
        show_in_tracebacks(chunk["label"], shown[chunk["label"]])
        labels.add(chunk["label"])
        try:
            exec(compile(chunk["source"], chunk["label"], "exec"), module.__dict__)
        except Exception as error:  # keep going: the other cells may define what a task needs
            errors.append(_load_error(error, chunk["label"]))
    sys.modules[MODULE] = checked_module(module, labels)
    _loaded.update(path=path, errors=errors, notes=submission.skipped, labels=labels)


def show_in_tracebacks(label, source):
    """Let a traceback show the lines of the code compiled as ``label``, the text that ran.

    A notebook's cell has no file to read them from (pytest printed ``???``), and a .py file's name, given without
    its folder, could be read from another folder."""
    linecache.cache[label] = (len(source), None, source.splitlines(keepends=True), label)  # None: never reread


def _merged(text, piece):
    """``text`` with the lines of ``piece`` where ``text`` has none: a file's pieces, back at their own lines."""
    lines, more = text.split("\n"), piece.split("\n")
    lines += [""] * (len(more) - len(lines))
    return "\n".join(line if line.strip() else (more[at] if at < len(more) else line) for at, line in enumerate(lines))


def _load_error(error, label):
    """What running the code compiled as ``label`` raised, said with the line of it where it stopped (on a line of
    its own: a line of code may leave a parenthesis open)."""
    if isinstance(error, SyntaxError) and error.filename == label:
        line = f"\n    {error.text.strip()}" if (error.text or "").strip() else ""
        what = "of that cell" if ", code cell " in label else "of that statement"  # a .py file is cut at statements
        return (f"{label}, line {error.lineno} is not valid Python ({type(error).__name__}: {error.msg}), so none "
                f"{what} ran:{line}")
    found, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == label:
            found = tb.tb_lineno
        tb = tb.tb_next
    text = linecache.getline(label, found).strip() if found else ""
    return (f"{label}{f', line {found}' if found else ''} raised {type(error).__name__}: {error}"
            + (f"\n    {text}" if text else ""))


def pytest_collection_modifyitems(config, items):
    """``-k TASK`` runs TASK's checks alone, also where TASK's name is part of another task's (``-k`` matches
    parts of names: ``ntk_inverse_frequencies`` is in ``dynamic_ntk_inverse_frequencies``)."""
    word = (config.getoption("keyword") or "").strip()
    if not (HERE / f"test_{word}.py").is_file():  # not a task word: pytest's own -k, unchanged
        return
    others = [item for item in items if item.path.name != f"test_{word}.py"]
    if others:
        config.hook.pytest_deselected(items=others)
        items[:] = [item for item in items if item.path.name == f"test_{word}.py"]


def pytest_runtest_setup(item):
    """Each check draws its inputs from the same seed, whatever ran before it: so the inputs of a check are those
    ``known_mistakes.json`` was made with, and a run is the same run again."""
    _calls.clear()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


def pytest_report_header(config):
    failed = [f"  {line}" for error in _loaded["errors"] for line in error.split("\n")]
    return ([f"checking the functions defined in {_loaded['path'].name}"]
            + ([f"code in {_loaded['path'].name} that failed to run (fix it first):"] + failed if failed else [])
            + [f"  note: {n}" for n in _loaded["notes"]])


_NOT_IMPORTED = re.compile(rf"cannot import name '(\w+)' from '{re.escape(MODULE)}'")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A check file that cannot import a function of yours says why in your terms, the failed cell first: not
    pytest's guess about module names, which is never the reason here."""
    outcome = yield
    report = outcome.get_result()
    missing = _NOT_IMPORTED.search(str(report.longrepr)) if report.failed else None
    if missing is None:
        return
    name, where = missing.group(1), _loaded["path"].name
    errors = _loaded.get("errors") or []
    if errors:
        _loaded["told"] = True
        report.longrepr = ("\n".join(errors) + f"\n\nSo {name} is not defined, and {collector.path.name} cannot "
                           f"import it: fix the line above, save {where} and run pytest again.")
    else:
        report.longrepr = (f"{where} defines no function named {name}, so {collector.path.name} cannot import it. "
                           f"Keep the cell that defines {name}, under that name (the assignment's stub names it), "
                           "and run it before saving.")


def pytest_terminal_summary(terminalreporter):
    if _loaded.get("errors") and not _loaded.get("told"):  # told already, first, where a check could not import
        terminalreporter.section(f"code in {_loaded['path'].name} that failed to run", sep="-")
        for error in _loaded["errors"]:
            terminalreporter.line(error)


# Which task each function of the assignment belongs to (the grader's rubric says the same).
TASK_OF = {}  # {function or method: task}, written in by the build


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    words = None
    if call.excinfo is not None:
        error, labels = call.excinfo.value, _loaded.get("labels", ())
        called = _last_call.pop("words", None) if _last_call.pop("error", None) is error else None
        try:
            words = failure_in_words(error, call.excinfo.tb, labels, _torch_meaning(), called)
            if words is not None:  # the traceback ends at the student's line: torch's own frames say nothing to them
                _end_at_the_student_s_line(call.excinfo.tb, labels)
                call.excinfo.traceback = type(call.excinfo.traceback)(call.excinfo.tb)
        except Exception:  # noqa: BLE001  (the words are a help: a fault in them must not hide the failure)
            words = None
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None:
        return
    try:
        named = named_mistakes(item.nodeid, list(_calls))
    except Exception:  # noqa: BLE001  (the name is a help: a fault in it must not hide the failure)
        named = None
    if named:
        if hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection(MISTAKE_HEADING, named)
        else:
            report.sections.append((MISTAKE_HEADING, named))
    if words is None and call.excinfo.errisinstance(NotImplementedError):  # a stub's own raise, not torch's
        task = item.module.__name__.removeprefix("test_")
        raised_in = call.excinfo.traceback[-1].name  # the function that still raises it
        helper_task = TASK_OF.get(raised_in, task)
        if helper_task != task:  # this task's function is written, but it calls another task's that is not
            report.longrepr = (
                f"Task {task} calls {raised_in}, of task {helper_task}, which is not written yet (it still raises "
                f"NotImplementedError). Write {raised_in} first (pytest -k {helper_task} checks it), then run "
                f"pytest -k {task} again. (The grader grades task {task} with its own stand-in for "
                f"{raised_in}, so {task}'s points do not depend on it.)"
            )
            return
        report.longrepr = (
            f"Task {task} is not written yet: its function still raises NotImplementedError.\n"
            f"Fill it in, in {_loaded['path'].name}, where it says # YOUR CODE HERE: delete the line "
            f"raise NotImplementedError(...), write the body, then run pytest -k {task} again."
        )
        return
    if words is not None:  # after the traceback and torch's message, which stay as they are
        if hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection(WORDS_HEADING, words)
        else:
            report.sections.append((WORDS_HEADING, words))


# --- a torch error in your code, in words ---------------------------------------------------------------------
# The checks call your functions through a thin wrapper that, when a call raises, writes down the arguments it got
# (their shapes, dtypes and devices) and raises the same error again, untouched. Your own code calls your functions
# themselves: the wrappers are only in the module the checks import.

WORDS_HEADING = "what went wrong, in words"
_last_call = {}  # {"error": the error a checked call raised, "words": that call, in words}
_TORCH_KINDS = (RuntimeError, TypeError, IndexError, ValueError, NotImplementedError)
_GENERIC = ("torch refused that operation, and its message above says what it checked. Compare it with the shapes "
            "listed here: write each tensor's shape beside the line ((B, H, Lq, dh) and so on) and find the one "
            "that is not what the line assumes.")


def checked_module(module, labels):
    """The module the checks import: ``module`` (the student's) with each function defined in its code (compiled
    as one of ``labels``) wrapped by ``_watched``. The functions' own globals stay ``module``'s."""
    checked = types.ModuleType(module.__name__)
    checked.__dict__.update(module.__dict__)
    for name, value in module.__dict__.items():
        if isinstance(value, types.FunctionType) and value.__code__.co_filename in labels:
            checked.__dict__[name] = _watched(value)
    return checked


def _watched(function):
    @functools.wraps(function)
    def watched(*args, **kwargs):
        __tracebackhide__ = True  # pytest shows your frames, not this one
        try:
            given = fingerprint([list(args), kwargs]), _copied(args), _copied(kwargs)
        except Exception:  # noqa: BLE001  (only the name of a mistake is lost)
            given = None
        try:
            result = function(*args, **kwargs)
        except BaseException as error:
            _remember(error, function, args, kwargs)
            raise
        try:
            if given is not None:
                _calls.append((function.__name__, *given, _copied(result)))
        except Exception:  # noqa: BLE001  (a value that cannot be copied: only the name of a mistake is lost)
            pass
        return result

    return watched


# --- a known mistake, in the grade's words --------------------------------------------------------------------
# known_mistakes.json holds, for each call these checks make of your functions, what each of the grade's known
# mistakes of that task returns on the call's inputs (never the inputs of the grade's own cases, never the code
# of an answer): {check: [{"function", "arguments" (a fingerprint), "label", "atol", "rtol", "mistakes": [[words,
# [output, ...]]]}]}. A mistake whose output is the right one on a call is not listed there; a call that lists none
# keeps no tolerances (None).

MISTAKE_HEADING = "the grade's name for this mistake"
MISTAKES_FILE = HERE / "known_mistakes.json"
_calls = []  # this check's calls of your functions: (name, fingerprint of the arguments, args, kwargs, returned)


def _copied(value):
    """``value`` with each tensor in it copied (a later in-place change must not alter what was returned)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(item) for item in value) if not hasattr(value, "_fields") else value
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    return value


def fingerprint(value):
    """What a check's argument is, for finding the call in ``known_mistakes.json``: plain values as themselves
    (their repr), a tensor by its dtype, shape, device and two sums of its values (a machine's last bits of a
    random draw may differ: the sums are compared within a tolerance)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        described = ["tensor", str(value.dtype).removeprefix("torch."), list(value.shape), value.device.type]
        if value.device.type == "meta":
            return described
        values = value.detach().to("cpu", torch.float64)
        finite = values[torch.isfinite(values)]
        return described + [float(finite.sum()), float(finite.abs().sum()), values.numel() - finite.numel()]
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [fingerprint(item) for item in value]]
    if isinstance(value, dict):
        return ["dict", [[repr(key), fingerprint(item)] for key, item in value.items()]]
    if value is None or isinstance(value, (bool, int, float, str, complex)) or (
            torch is not None and isinstance(value, (torch.dtype, torch.device))):
        return ["value", repr(value)]
    return ["object", type(value).__name__]


def _same_arguments(a, b):
    """Whether two fingerprints are of the same arguments (a tensor's sums within a relative 1e-5)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1.0)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_arguments(x, y) for x, y in zip(a, b))
    return a == b


@functools.lru_cache(maxsize=1)
def _known_mistakes():
    if not MISTAKES_FILE.is_file():
        return {}
    import json

    return json.loads(MISTAKES_FILE.read_text(encoding="utf-8"))


def _tensor(stored):
    import torch

    return torch.tensor(stored["values"], dtype=torch.float64).reshape(stored["shape"])


def _one_tensor(value, torch):
    """What a function returned, as the grade reads it: a number as a float64 tensor of no axes, a pair of tensors
    of one shape and dtype ((cos, sin), say) stacked on a new first axis; anything else as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=torch.float64)
    if (isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(part, torch.Tensor) for part in value)
            and value[0].shape == value[1].shape and value[0].dtype == value[1].dtype):
        return torch.stack(tuple(value))
    return value


def named_mistakes(check, calls):
    """"Likely mistake: ..." where the known mistakes of this check's calls explain what your functions returned;
    else None. A mistake is named when, on every call of this check where it changes the output, your function
    returned exactly its output (as the grade names one only where it explains the whole output)."""
    known = _known_mistakes().get(check)
    if not known or not calls:
        return None
    from checks import mismatch

    torch = sys.modules["torch"]
    unused = list(known)
    shown, missed = {}, set()  # {words: the first call it explains}, and the mistakes some call rules out
    for name, arguments, _, _, returned in calls:
        entry = next((entry for entry in unused if entry["function"] == name
                      and _same_arguments(entry["arguments"], arguments)), None)
        if entry is None:
            continue
        unused.remove(entry)
        returned = _one_tensor(returned, torch)
        atol, rtol = (_tensor(tol) if isinstance(tol, dict) else tol for tol in (entry["atol"], entry["rtol"]))
        for words, outputs in entry["mistakes"]:
            same = isinstance(returned, torch.Tensor) and returned.device.type != "meta" and any(
                tuple(returned.shape) == tuple(stored["shape"]) and mismatch(
                    returned.detach().cpu(), _tensor(stored).to(returned.dtype), atol=atol, rtol=rtol,
                    check_dtype=False) is None for stored in outputs)
            if same:
                shown.setdefault(words, entry["label"])
            else:
                missed.add(words)
    named = [words for words in shown if words not in missed]
    if not named:
        return None
    first, *others = named
    return (f"Likely mistake: {first}"
            + "".join(f"\nOr, with exactly this output on every call that shows it: {other}" for other in others)
            + f"\n(The grade names it so too: your function returned exactly this mistake's output on "
              f"{shown[first]}.)")


def _remember(error, function, args, kwargs):
    try:
        try:
            arguments = list(inspect.signature(function).bind_partial(*args, **kwargs).arguments.items())
        except (TypeError, ValueError):  # a call that does not fit the signature: Python's own TypeError says so
            arguments = [(None, value) for value in args] + list(kwargs.items())
        devices = _off_the_cpu(value for _, value in arguments)
        shown = [_value_words(value, devices) if name is None else f"{name}={_value_words(value, devices)}"
                 for name, value in arguments]
        _last_call.update(error=error, words=f"{function.__name__}({', '.join(shown)})")
    except Exception:  # noqa: BLE001  (only the words are lost; the error itself goes on untouched)
        pass


def _torch_meaning():
    try:
        from checks import torch_error_meaning
    except ImportError:  # a checks.py from before it had one: the words still name the function, line and shapes
        return None
    return torch_error_meaning


def failure_in_words(error, tb, labels, meaning=None, called=None):
    """What went wrong, in words, when ``error`` (raised through traceback ``tb``) is torch's, raised inside the
    student's code (compiled as one of ``labels``); else None, and the error is told as pytest tells it.

    Torch's: raised by a torch operation on a line of theirs (not by their own ``raise`` or ``assert``), or inside
    torch's own Python code that a line of theirs called. The words name the function that stopped and the line,
    the tensors on that line with their shapes, the call the check made (``called``, from the wrapper; else the
    arguments as the function holds them), and what the message means (``meaning(message)``, None where unknown).
    """
    entries = []  # (frame, line, instruction) of each level of the traceback, outermost first
    while tb is not None:
        entries.append((tb.tb_frame, tb.tb_lineno, tb.tb_lasti))
        tb = tb.tb_next
    mine = [entry for entry in entries if entry[0].f_code.co_filename in labels]
    if not mine or not isinstance(error, Exception):
        return None
    message = str(error)
    meant = meaning(message) if meaning is not None else None
    frame, line, instruction = mine[-1]
    operands = _operands(frame, line, instruction)
    if entries[-1][0] is frame:  # raised on a line of theirs
        if _raises(frame.f_code, instruction) or not isinstance(error, _TORCH_KINDS):
            return None  # their own raise or assert, or Python's NameError, KeyError...: told as it is
        torch = sys.modules.get("torch")
        if meant is None and "ensor" not in message and not (
                torch is not None and any(isinstance(value, torch.Tensor) for _, value in operands)):
            return None  # Python's own error on Python values (a list's index, a dict's key)
    elif not _in_torch(entries[-1][0].f_code.co_filename):
        return None
    outer, inner = _function_name(mine[0][0]), _function_name(frame)
    devices = _off_the_cpu(value for _, value in operands)
    head = f"{outer} stopped with {type(error).__name__}" + (f" in {inner}" if inner != outer else "")
    head += f", at {frame.f_code.co_filename}, line {line}"
    segment = " ".join(_segment(frame, line, instruction).split())
    if segment:
        head += f", in `{segment}`"
    lines = [head + (", where" if operands else ".")]
    lines += [f"  {name} is {_value_words(value, devices)}" for name, value in operands]
    lines.append(f"The check called {called or _arguments_words(mine[0][0])}.")
    lines.append("What it means: " + (meant or _GENERIC))
    return "\n".join(lines)


def _end_at_the_student_s_line(tb, labels):
    """Leave torch's own levels out of traceback ``tb`` (``module(x)``'s on the way in, those under the student's
    last line): pytest rebuilds what it shows from the chain, so the chain itself is relinked."""
    levels = []
    while tb is not None:
        levels.append(tb)
        tb = tb.tb_next
    last = max((at for at, level in enumerate(levels) if level.tb_frame.f_code.co_filename in labels), default=None)
    if last is None:
        return
    kept = [level for level in levels[1:last + 1] if not _in_torch(level.tb_frame.f_code.co_filename)]
    for level, after in zip([levels[0]] + kept, kept + [None]):  # the first is pytest's own level: always kept
        level.tb_next = after


def _raises(code, instruction):
    """Whether the instruction at offset ``instruction`` of ``code`` is a raise statement (or an assert's)."""
    for step in dis.get_instructions(code):
        if step.offset == instruction:
            return step.opname in ("RAISE_VARARGS", "RERAISE")
    return False


def _in_torch(filename):
    torch = sys.modules.get("torch")
    folder = os.path.dirname(getattr(torch, "__file__", None) or "") if torch is not None else ""
    return bool(folder) and os.path.abspath(filename).startswith(folder + os.sep)


def _function_name(frame):
    """A frame's function as the student wrote it: ``name``, or ``Class.name`` for a method."""
    code = frame.f_code
    if code.co_argcount and code.co_varnames[0] == "self" and "self" in frame.f_locals:
        return f"{type(frame.f_locals['self']).__name__}.{code.co_name}"
    return code.co_name


def _segment(frame, line, instruction):
    """The text of the expression that raised: the instruction's own columns where Python keeps them (3.11 on),
    else its whole line."""
    lines = linecache.getlines(frame.f_code.co_filename)
    try:
        start, end, column, end_column = list(frame.f_code.co_positions())[instruction // 2]
        if start and end and column is not None and end_column is not None and end <= len(lines):
            text = [row.encode("utf-8") for row in lines[start - 1:end]]  # the columns count bytes
            text[-1] = text[-1][:end_column]
            text[0] = text[0][column:]
            return b"".join(text).decode("utf-8", "replace")
    except (AttributeError, IndexError, TypeError, ValueError):  # before Python 3.11, or no position kept
        pass
    return lines[line - 1].split("#")[0].strip() if 0 < line <= len(lines) else ""


_STRING = re.compile(r"""(?s)('''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")""")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)(?!\s*=(?!=))")  # not a keyword=
_MISSING = object()


def _operands(frame, line, instruction):
    """[(name, value)] of the tensors (and None and numbers) that the expression which raised names, up to 6."""
    torch = sys.modules.get("torch")
    text = _STRING.sub("''", _segment(frame, line, instruction))
    found = {}
    for dotted in _DOTTED.findall(text):
        parts = [part.strip() for part in dotted.split(".")]
        if keyword.iskeyword(parts[0]):
            continue
        value, name = frame.f_locals.get(parts[0], frame.f_globals.get(parts[0], _MISSING)), parts[0]
        for part in parts[1:]:
            inner = _attribute(value, part)
            if inner is _MISSING:
                break
            value, name = inner, f"{name}.{part}"
        shown = value is None or isinstance(value, (bool, int, float)) or (torch is not None and (
            isinstance(value, torch.Tensor) or (isinstance(value, (list, tuple)) and value and all(
                isinstance(item, torch.Tensor) for item in value))))
        if value is not _MISSING and shown and name not in found:
            found[name] = value
    return list(found.items())[:6]


def _attribute(value, name):
    """``value.name`` where it is data the object holds (a module's parameter, an attribute set on it), else
    _MISSING: a property or a method is never run to show it."""
    if value is _MISSING or isinstance(value, types.ModuleType):
        return _MISSING
    held = getattr(value, "__dict__", None)
    if not isinstance(held, dict):
        return _MISSING
    for store in ("_parameters", "_buffers", "_modules"):  # where torch.nn.Module keeps its tensors
        if isinstance(held.get(store), dict) and name in held[store]:
            return held[store][name]
    return held.get(name, _MISSING)


def _off_the_cpu(values):
    """Whether any tensor among ``values`` (or in a list among them) is on a device other than the CPU."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    for value in values:
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(item, torch.Tensor) and item.device.type != "cpu":
                return True
    return False


def _value_words(value, devices=False):
    """A value as the words show it: a tensor by its shape and dtype ("(2, 3, 5, 4) float32", its device added
    when ``devices``), a list of tensors by theirs, a number or None as itself."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        words = f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
        return f"{words} on {value.device}" if devices else words
    if torch is not None and isinstance(value, (list, tuple)) and value and all(
            isinstance(item, torch.Tensor) for item in value):
        shown = ", ".join(_value_words(item, devices) for item in value[:4])
        return f"a {type(value).__name__} of {len(value)} tensors: {shown}{', ...' if len(value) > 4 else ''}"
    if value is None or isinstance(value, (bool, int, float, complex)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else repr(value[:37]) + "..."
    return f"a {type(value).__name__}"


def _arguments_words(frame):
    """A frame's call, from its arguments as the function holds them when it stopped (a method's: no wrapper saw
    the call); an argument the function reassigns is marked so."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + bool(
        code.co_flags & inspect.CO_VARKEYWORDS)
    names = [name for name in code.co_varnames[:count] if name != "self"]
    reassigned = set()
    for step in dis.get_instructions(code):
        if step.opname.startswith(("STORE_FAST", "DELETE_FAST", "STORE_DEREF")):
            reassigned.update(step.argval if isinstance(step.argval, tuple) else (step.argval,))
    values = [(name, frame.f_locals.get(name, _MISSING)) for name in names]
    values = [(name, value) for name, value in values if value is not _MISSING]
    devices = _off_the_cpu(value for _, value in values)
    shown = [f"{name}={_value_words(value, devices)}"
             + (" (as it is when it stopped: your code reassigns it)" if name in reassigned else "")
             for name, value in values]
    return f"{_function_name(frame)}({', '.join(shown)})"
