"""The code that runs beside a student's submission, in its own process.

Run as ``python worker.py --zygote FD [--isolate | --users]``: a fork server
(its comment, below, says how jobs are kept apart). It imports nothing of the
grader, so it runs where the grader's files are out of reach, and it imports
torch once for every job it forks. A job reads from its input pipe, in frames:

    the submission   JSON: the student's code as chunks (a .py file is one
                     chunk, a notebook one chunk per code cell), the name of
                     the file, the tasks to run and the limits to set
    the plan         (correctness jobs) the probes to run, task by task, as
                     torch.save bytes: which function to call on which
                     inputs. No expected output, tolerance or point is in it.

A correctness job writes to its output pipe, in frames: which chunks failed
to run and the names defined (kind L), then per task, for each probe, the
outputs as plain CPU tensors and plain data, or the exception raised (kind R).
Comparing those outputs with the reference is the grader's job, in its own
process; nothing here knows whether an answer is right.

A timing job (see autograder/core/timing.py) loads the code the same way, then
answers the grader's commands, one JSON line each: build the inputs of a
score path, call it once, report sampled output values. It keeps no clock:
the grader times each call from its own process.
"""

import _thread
import builtins
import ctypes
import fcntl
import gc
import json
import json.encoder
import json.scanner
import os
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback
import types

import numpy
import torch
import torch.overrides

# The worker's own builtins: a submission that replaces one (builtins.isinstance = ...) changes them for its
# own code, not for the worker's. Taken when the fork server starts, before any job.
__builtins__ = dict(vars(builtins))

MAX_TEXT = 2000

# Taken before any submitted code runs, so that code cannot swap them: the device sync that ends a
# timed call, and the allocator's statistics that give its peak memory.
_CUDA_SYNCHRONIZE = getattr(torch._C, "_cuda_synchronize", None)
_CUDA_MEMORY_STATS = getattr(torch._C, "_cuda_memoryStats", None)
_CUDA_RESET_PEAK = getattr(torch._C, "_cuda_resetPeakMemoryStats", None)


def _libc(name):
    try:
        import ctypes

        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


_MALLOPT, _MALLOC_TRIM = _libc("mallopt"), _libc("malloc_trim")
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def _mmap_threshold(size):
    """Allocations of ``size`` bytes and more get their own mapping, given back to the system when freed.

    Freed heap memory is kept for the next call rather than given back, so that a timed call does not pay
    for page faults that the previous one caused; the reference's process is set up the same way.
    """
    if _MALLOPT is not None:
        _MALLOPT(_M_MMAP_THRESHOLD, size)
        _MALLOPT(_M_TRIM_THRESHOLD, 1 << 30)


def _where(error, chunks):
    """The last line of the submission that the traceback passes through."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if any(frame.filename == chunk["label"] for chunk in chunks):
            line = _line_of(chunks, frame.filename, frame.lineno)
            return f"{frame.filename}, line {frame.lineno}: {line}"[:MAX_TEXT]
    return ""


def _line_of(chunks, label, number):
    """Line ``number`` of the chunk labelled ``label``, stripped. The pieces of a .py file that did not compile share
    its name, each with the file's line numbers (blank lines before it): the line is in the piece where it is not
    blank."""
    for chunk in chunks:
        if chunk["label"] == label:
            lines = chunk["source"].splitlines()
            line = lines[number - 1].strip() if 0 < (number or 0) <= len(lines) else ""
            if line:
                return line
    return ""


def _lines_by_label(chunks):
    """{label: the lines of its chunks}: the lines of a .py file's pieces (see ``_line_of``) merged into the file's."""
    found = {}
    for chunk in chunks:
        lines = chunk["source"].splitlines()
        kept = found.setdefault(chunk["label"], [])
        kept += [""] * (len(lines) - len(kept))
        for number, line in enumerate(lines):
            if line.strip() and not kept[number].strip():
                kept[number] = line
    return found


def _type_name(kind):
    """A class's name as plain text, whatever its metaclass does (the grader's schema wants short text)."""
    try:
        name = type.__dict__["__qualname__"].__get__(kind)  # type's own, not one a metaclass replaced
    except BaseException:
        name = "<a class whose name could not be read>"
    return str(name)[:200]


def _error(error, chunks):
    kind = type(error)
    try:
        message = str(error)
    except BaseException:  # a hostile __str__ must not take the worker down
        message = "<the exception's message could not be read>"
    return {
        "error": {
            "type": _type_name(kind),
            "mro": [_type_name(cls) for cls in kind.__mro__][:64],
            "message": message[:MAX_TEXT],
            "where": _where(error, chunks),
        }
    }


def _plain_tensor(value):
    # Strip any Tensor subclass (and its __torch_function__) before the data leaves.
    with torch._C.DisableTorchFunctionSubclass():
        plain = value.detach()
        if plain.layout != torch.strided:
            plain = plain.to_dense()
        device = str(plain.device)
        plain = plain.to("cpu").clone().contiguous()
    if type(plain) is not torch.Tensor:
        plain = torch.Tensor._make_subclass(torch.Tensor, plain)
    return plain, device


def _encode(value):
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():  # the tensor's own answer, not a subclass's property
            meta = _TB.is_meta.__get__(value)
        if meta:  # a tensor without data (the meta device): what it is and where, nothing to copy
            return _described(value)
        tensor, device = _plain_tensor(value)
        return {"tensor": tensor, "device": device}
    kind = type(value)
    try:
        text = repr(value)
    except BaseException:
        text = "<unprintable>"
    try:
        name = f"{kind.__module__}.{kind.__qualname__}".replace("builtins.", "")
    except BaseException:
        name = "<a type whose name could not be read>"
    return {"type_name": str(name)[:300], "repr": str(text)[:200]}


def _described(value):
    """A meta tensor as its dtype, shape and device (protocol.py's form for a tensor without data).

    The type name and text stand for it where a check wants values: it is told apart from a tensor there."""
    with torch._C.DisableTorchFunctionSubclass():  # read through TensorBase: a subclass's properties could lie
        shape = [int(size) for size in _TB.shape.__get__(value)]
        dtype, device = str(_TB.dtype.__get__(value)).replace("torch.", ""), str(_TB.device.__get__(value))
    return {"type_name": f"tensor on {device} (it holds no data)"[:300],
            "repr": f"tensor(..., device='{device}', size={tuple(shape)}, dtype=torch.{dtype})"[:200],
            "device": device[:64], "shape": shape, "dtype": dtype}


def _warm_the_meta_device():
    """Run a few operations on the meta device once, when the fork server starts (``zygote``), so each job forks
    with them loaded. Not at import: the grader and nbgrader's kernels import this module and need none of it.

    Its kernels are Python (torch._refs, torch._decomp), loaded and set up on first use: 1 to 3 s, which every job
    would otherwise pay inside a task's time limit, the first time a probe asks for device="meta"."""
    try:
        whole = torch.arange(4, device="meta")
        fraction = torch.arange(0, 8, 2, device="meta", dtype=torch.float64)
        torch.full((), 0.5, device="meta").pow(whole.to(torch.int32))
        torch.stack((fraction.sin(), fraction.cos()), dim=-1).reshape(-1).to(torch.float32)
    except Exception:  # a torch without the meta device: its probes then fail in the job, and say why
        pass



def _decode_argument(value):
    if isinstance(value, dict) and "__dtype__" in value:
        return getattr(torch, value["__dtype__"])
    if isinstance(value, dict) and "__device__" in value:
        return _DEVICE(value["__device__"])
    if isinstance(value, list):
        return [_decode_argument(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_decode_argument(item) for item in value)
    if isinstance(value, dict):
        return {key: _decode_argument(item) for key, item in value.items()}
    return value


MAX_CHANGED, MAX_PATH = 64, 200  # the places a reply names, and the length of each (as protocol.py allows)
_MAX_NESTING = 8  # how deep into lists, tuples and dicts the copies look; a probe's inputs are shallower


def _copies(args, kwargs=None):
    """A copy of every tensor reachable in ``args`` and ``kwargs`` (through lists, tuples and dicts), to tell
    afterwards whether a call changed it: [(where, the tensor, its copy)]. ``where`` is what the reply says:
    a top-level positional argument's position (an integer), a keyword argument's name ("slopes"), or the path
    to a tensor inside an argument ("args[1][0]", "tables['b'][1]")."""
    found = []

    def walk(value, where, depth):
        if isinstance(value, _TENSOR):
            found.append((where, value, _snapshot(value)))
        elif depth < _MAX_NESTING and isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                walk(item, f"{where}[{index}]", depth + 1)
        elif depth < _MAX_NESTING and isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{where}[{key!r}]", depth + 1)

    for index, value in enumerate(args):
        walk(value, index if isinstance(value, _TENSOR) else f"args[{index}]", 0)
    for name, value in (kwargs or {}).items():
        walk(value, str(name), 0)
    return found


def _snapshot(tensor):
    # A meta tensor has no data to copy or compare: its shape and dtype stand for it.
    if _TB.is_meta.__get__(tensor):
        return (tuple(_TB.shape.__get__(tensor)), _TB.dtype.__get__(tensor))
    return _TB.clone(tensor)


def _same(tensor, copy):
    if isinstance(copy, tuple):
        return (tuple(_TB.shape.__get__(tensor)), _TB.dtype.__get__(tensor)) == copy
    if _EQUAL(tensor, copy):
        return True
    # torch.equal says NaN != NaN: a tensor holding NaN is the same when its NaNs and other entries are.
    if not (_TB.is_floating_point(copy) or _TB.is_complex(copy)) or _TB.shape.__get__(tensor) != _TB.shape.__get__(copy):
        return False
    holes = _TB.isnan(copy)
    return (_TB.dtype.__get__(tensor) == _TB.dtype.__get__(copy) and _EQUAL(_TB.isnan(tensor), holes)
            and _EQUAL(_TB.masked_fill(tensor, holes, 0), _TB.masked_fill(copy, holes, 0)))


def _changed(copies):
    """Where the tensors are that a call changed in place (a tensor it made unreadable counts as changed), in the
    order of ``copies`` (see ``_copies``)."""
    changed = []
    for where, tensor, copy in copies:
        try:
            same = _same(tensor, copy)
        except BaseException:
            same = False
        if not same:
            changed.append(where if isinstance(where, int) else where[:MAX_PATH])
    return changed[:MAX_CHANGED]


def _call(namespace, call, chunks, unit=None):
    function = namespace.get(call["name"])
    if function is None:
        return {"missing": call["name"]}
    args = _decode_argument(call.get("args", []))
    kwargs = _decode_argument(call.get("kwargs", {}))
    # The behaviour contracts (autograder/core/behaviour.py): inputs in another memory layout, inputs a model
    # trains (their gradients sent back), the global state watched, the call made twice.
    for where, how in call.get("layout", ()):
        _set(args, kwargs, where, _laid_out(_get(args, kwargs, where), how))
    trained = [_get(args, kwargs, where) for where in call.get("trained", ())]
    for tensor in trained:
        _TB.requires_grad_(tensor)
    copies = _copies(args, kwargs)
    before = _global_state() if call.get("state") else None

    def once():
        returned = function(*args, **kwargs)
        if call.get("view") and unit is not None:
            # The unit's view of what came back as one tensor (a (cos, sin) pair stacked, say); a value it cannot
            # view is sent as it is, and the grader says what it was.
            try:
                return returned, unit.VIEWS[call["view"]](returned)
            except BaseException:
                pass
        return returned, returned

    try:
        returned, value = once()
        outcome = {"value": _encode(value)}
    except BaseException as error:  # SystemExit and KeyboardInterrupt included
        return _error(error, chunks)
    changed = _changed(copies)
    if changed:  # the grader's side says so: a function must leave the caller's tensors as they were
        outcome["changed"] = changed
    if before is not None:
        outcome["state"] = _state_changes(before)
    if trained:
        outcome["grads"] = _gradients(value, trained, call["grad_out"], chunks)
    if call.get("again"):  # the caller changes the result in place, then calls again with the same arguments
        _bump(returned)
        outcome["aliased"] = [where for where in _changed(copies) if where not in changed]
        try:
            outcome["again"] = {"value": _encode(once()[1])}
        except BaseException as error:
            outcome["again"] = _error(error, chunks)
    return outcome


def _get(args, kwargs, where):
    return args[where] if isinstance(where, int) else kwargs[where]


def _set(args, kwargs, where, value):
    if isinstance(where, int):
        args[where] = value
    else:
        kwargs[where] = value


def _laid_out(tensor, how):
    """The same values in another memory layout: "transposed" (the axes' memory order reversed, as a transpose
    leaves it), "strided" (every other entry of a buffer twice as long), ["expand", shape] (broadcast along its
    axes of size 1, no memory of their own)."""
    if how == "transposed":
        order = list(range(_TB.dim(tensor)))[::-1]
        return _TB.permute(_TB.contiguous(_TB.permute(tensor, order)), order)
    if how == "strided":
        return _TB.select(torch.stack((tensor, tensor), -1), -1, 0)
    return _TB.expand(tensor, list(how[1]))


_GET_RNG, _SET_RNG = torch.get_rng_state, torch.set_rng_state
# torch.manual_seed also seeds every accelerator's generators; where one is not initialised yet, it queues the
# seed for later with the stack of the call, formatted (about 0.5 ms a call: a third of a class's probes' time).
# Without a GPU only the CPU's generator draws, and it alone is seeded.
_SEED = torch.manual_seed if torch.cuda.is_available() else torch.default_generator.manual_seed
_GET_DTYPE, _SET_DTYPE = torch.get_default_dtype, torch.set_default_dtype
_GRAD_ON, _SET_GRAD = torch.is_grad_enabled, torch.set_grad_enabled
_THREADS, _SET_THREADS = torch.get_num_threads, torch.set_num_threads


def _global_state():
    return {"random state": _GET_RNG(), "default dtype": _GET_DTYPE(), "grad mode": _GRAD_ON(),
            "thread count": _THREADS()}


def _restore(state):
    _SET_RNG(state["random state"])
    if _GET_DTYPE() != state["default dtype"]:
        _SET_DTYPE(state["default dtype"])
    _SET_GRAD(state["grad mode"])
    if _THREADS() != state["thread count"]:
        _SET_THREADS(state["thread count"])


def _state_changes(before):
    """Which of torch's global settings the call changed (each put back as it was): their names."""
    after = _global_state()
    changed = [name for name in before if not (_EQUAL(before[name], after[name]) if name == "random state"
                                                else before[name] == after[name])]
    _restore(before)
    return changed


def _gradients(value, trained, weights, chunks):
    """The gradient of sum(value * weights) with respect to each trained input (None where none reaches it), or
    the error that backward raised."""
    try:
        if isinstance(value, _TENSOR) and _TB.requires_grad.__get__(value):
            torch.autograd.backward(value, weights)
        return {"value": [_encode(_TB.grad.__get__(tensor)) for tensor in trained]}
    except BaseException as error:
        return _error(error, chunks)


def _bump(returned):
    """Add one to every tensor the call returned (flip a bool), in place, as a caller may; one that cannot be
    written to (it shares an entry between places, as an expanded tensor does) is left as it is."""
    for tensor in (returned if isinstance(returned, (tuple, list)) else (returned,)):
        if isinstance(tensor, _TENSOR) and not _TB.is_meta.__get__(tensor):
            try:
                with torch.no_grad():
                    if _TB.dtype.__get__(tensor) == torch.bool:
                        _TB.logical_not_(tensor)
                    else:
                        _TB.add_(tensor, 1)
            except BaseException:
                pass


def _run_module_probe(namespace, probe, chunks):
    """Build the student's nn.Module, optionally move it to a device and load a weight, run forward and
    backward (and the behaviour contracts' parts a probe asks for: x's layout and gradient, the global
    state, forward twice)."""
    cls = namespace.get(probe["name"])
    if cls is None:
        return {"missing": probe["name"]}
    out = {}
    init = _decode_argument(probe.get("init", []))
    if probe.get("state"):
        out["state"] = _init_state(cls, init, probe["seeds"])
        _SEED(probe.get("seed", 0))
    try:
        module = cls(*init)
    except BaseException as error:
        out["init"] = _error(error, chunks)
        return out
    out["init"] = {"value": {"type_name": "module", "repr": ""}}
    weight = getattr(module, "weight", None)
    out["weight"] = {"value": _encode(weight)}
    out["weight_is_parameter"] = isinstance(weight, torch.nn.Parameter)
    try:
        out["weight_registered"] = any(param is weight for _, param in module.named_parameters())
    except BaseException:
        out["weight_registered"] = False
    if probe.get("x") is None:
        return out
    x = probe["x"] if probe.get("layout") is None else _laid_out(probe["x"], probe["layout"])
    try:
        if probe.get("device") is not None:  # moved as a model is (model.to("cuda")): the meta case, no GPU needed
            module.to(_decode_argument(probe["device"]))
        if probe.get("weight") is not None:
            with torch.no_grad():
                module.weight.copy_(probe["weight"])
        if probe.get("x_grad"):
            _TB.requires_grad_(x)
        copies = _copies([x])
        before = _global_state()
        output = module(x)
        out["forward"] = {"value": _encode(output)}
        changed = _changed(copies)
        if changed:
            out["forward"]["changed"] = changed
        if probe.get("state"):
            out["forward"]["state"] = _state_changes(before)
        if probe.get("again"):
            _bump(output)
            aliased = [where for where in _changed(copies) if where not in changed]
            if aliased:
                out["forward"]["aliased"] = aliased
            try:
                out["again"] = {"value": _encode(module(x))}
            except BaseException as error:
                out["again"] = _error(error, chunks)
        if probe.get("grad_out") is not None:
            module.weight.grad = None
            (output * probe["grad_out"]).sum().backward()
            out["grad"] = {"value": _encode(module.weight.grad)}
            if probe.get("x_grad"):
                out["x_grad"] = {"value": _encode(_TB.grad.__get__(x))}
    except BaseException as error:
        out["forward"] = _error(error, chunks)
    return out


def _init_state(cls, init, seeds):
    """The global settings a module's __init__ changed. Its random stream may go on (it draws the initial
    weight) but not start again: built from two seeds, the stream after it must differ."""
    changed, streams = [], []
    for seed in seeds:
        _SEED(seed)
        before = _global_state()
        try:
            cls(*init)
        except BaseException:
            pass
        streams.append(_GET_RNG())
        changed += [name for name in _state_changes(before) if name != "random state" and name not in changed]
    return (["random state"] if _EQUAL(*streams) else []) + changed


def run_probe(namespace, probe, chunks, unit=None):
    # Whatever a call does to torch's global settings is undone after it: the next probe starts as this one did.
    state = _global_state()
    try:
        _SEED(probe.get("seed", 0))
        if probe["op"] == "sequence":  # calls made one after another in the same process (calls are independent)
            return {"calls": [run_probe(namespace, call, chunks, unit) for call in probe["calls"]]}
        if probe["op"] == "module":
            return _run_module_probe(namespace, probe, chunks)
        substitutes = probe.get("substitute") or []
        substitutes = [substitutes] if isinstance(substitutes, dict) else substitutes  # one, or several at once
        # The stand-in goes in whatever the helper's name holds, or if it holds nothing: a helper whose cell did
        # not compile, raised before it was defined, or never defined it costs its own task only, as a stub does
        # (DESIGN.md, invariant 10). What the name held is put back after the call (``swapped_in``).
        swaps = {}
        for substitute in substitutes:
            stand_in, key = unit.STAND_INS[substitute["stand_in"]], tuple(substitute["key"])
            swaps[substitute["name"]] = (lambda stand_in, key: lambda *args, **kwargs:
                                         stand_in(*args, **kwargs, key=key))(stand_in, key)
        return _SANDBOX["swapped_in"](namespace, swaps, lambda: _call(namespace, probe, chunks, unit))
    finally:
        _restore(state)


def _unit_code(submission):
    """The unit's job code (stand-ins, timed paths: its job.py), run in a module of its own before the student's.

    It comes with the request, as the student's code does, so that nothing of the grader's folders has to be
    readable in the job."""
    unit = types.ModuleType(submission.get("unit_module", "unit_job"))
    unit.__dict__["__builtins__"] = builtins
    code = submission.get("unit_code")
    if code:
        exec(compile(code, "<the unit's job.py>", "exec"), unit.__dict__)
    return unit


def _load(chunks, filename, module_name):
    module = types.ModuleType(module_name)
    module.__file__ = filename
    module.__dict__["__builtins__"] = builtins  # the real ones, not the worker's own
    sys.modules[module_name] = module
    errors = []
    for chunk in chunks:
        try:
            code = compile(chunk["source"], chunk["label"], "exec")
            exec(code, module.__dict__)
        except BaseException as error:
            entry = _error(error, chunks)["error"]
            if isinstance(error, SyntaxError) and error.filename == chunk["label"] and error.lineno:
                # Python's own words alone: str(error) repeats the label and line, which "where" holds
                if isinstance(error.msg, str):
                    entry["message"] = error.msg[:MAX_TEXT]
                entry["where"] = f"{chunk['label']}, line {error.lineno}: {(error.text or '').strip()}"[:MAX_TEXT]
            entry["chunk"] = chunk["label"]
            errors.append(entry)
    return module.__dict__, errors


def _limit_self(limits):
    """Limits on this process, set before the submission's code runs (they bind its children too)."""
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


# ---------------------------------------------------------------------------------------------
# The timing job (serve mode). What it says is what the grader trusts for the timing tier: that a call is
# done, and the entries of its output. So the job's own code is kept out of the submission's reach:
#
#  * No code of the submission runs in the job's main thread. Loading the code, setting up a path and each
#    timed call run in a thread started for that step (``_step``), through functions whose globals are a
#    dictionary of their own (``_SANDBOX``): no frame the submission can walk to (f_back) holds the worker's
#    globals, and a mode, a trace function or a signal handler it sets is its thread's, not the main one's.
#  * An audit hook, installed before any submitted code runs, refuses in every other thread what would reach
#    the main thread or the worker's objects from there: new audit hooks, trace and profile functions, the
#    other threads' frames, the garbage collector's lists of objects, ctypes, new processes and exec,
#    symbolic links, and the job's own memory files in /proc (``mem``, ``clear_refs``: see invariant 7).
#  * Everything the main thread calls once the submission has run was taken before it ran (the names
#    below, and builtins of the worker's own: ``__builtins__`` above), so a patched module (json, os,
#    numpy, torch.Tensor) or builtin changes nothing here.
#  * The main thread frees nothing the submission made (a freed object can run code: __del__, weakref
#    callbacks): what it held is handed to the next step's thread (``keep``), which frees it in the job's own
#    time. The garbage collector is off in the main thread's turns, and an output is read only once no other
#    thread of the job is left, with no torch function mode or dispatch mode, from the tensor's raw memory.
#
# Every timed call's inputs are made in the call's own step, from the grader's seed for that call, inside the
# grader's timed window: nothing of the submission can run between the inputs and the call untimed.

_OS_READ, _OS_WRITE, _SLEEP, _MONOTONIC = os.read, os.write, time.sleep, time.monotonic
_SCAN = json.scanner.c_make_scanner(json.JSONDecoder())  # the C scanner, with float and int bound in it
_QUOTE = json.encoder.c_encode_basestring_ascii or json.encoder.py_encode_basestring_ascii
_FLOAT_REPR, _INT_REPR = float.__repr__, int.__repr__
_START_THREAD, _NEW_LOCK, _THREAD_ID, _THREADS = _thread.start_new_thread, _thread.allocate_lock, _thread.get_ident, \
    _thread._count
_GC_DISABLE = gc.disable
_SENTINEL, _LOCK_TYPE = _thread._set_sentinel, _thread.LockType
_ADD_AUDIT_HOOK = sys.addaudithook
_FUNCTION_MODES, _DISPATCH_MODES = torch._C._len_torch_function_stack, torch._C._len_torch_dispatch_stack
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction
_TENSOR, _STRIDED, _BFLOAT16 = torch.Tensor, torch.strided, torch.bfloat16
_NP_ASARRAY, _NP_ARRAY, _NP_UNRAVEL, _NP_INT64, _NP_UINT32, _NP_FLOAT32 = (
    numpy.asarray, numpy.array, numpy.unravel_index, numpy.int64, numpy.uint32, numpy.float32)
_TYPESTRS = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2", torch.bfloat16: "<u2",
             torch.int64: "<i8", torch.int32: "<i4", torch.int16: "<i2", torch.int8: "|i1", torch.uint8: "|u1",
             torch.bool: "|b1"}
_TB = torch._C.TensorBase
_DEVICE, _NEW_TENSOR, _LONG, _FLOAT64 = torch.device, torch.tensor, torch.long, torch.float64
_DTYPES = {name: getattr(torch, name) for name in ("float32", "float64", "float16", "bfloat16")}
_EQUAL = torch.equal  # taken before any submitted code runs, which may replace torch.equal
_SETTRACE, _GETTRACE, _FUNCTION_MODE = sys.settrace, sys.gettrace, torch.overrides.TorchFunctionMode
_QUALNAME = type.__dict__["__qualname__"].__get__  # type's own, not one a metaclass replaced
STEP_THREADS_SECONDS = 2.0  # how long a step's end waits for threads the submission started to end

# What the audit hook refuses outside the main thread (see above). "open" is checked by its path.
_REFUSED_EVENTS = frozenset((
    "sys.addaudithook", "sys.settrace", "sys.setprofile", "sys._current_frames", "sys._current_exceptions",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.call_function", "ctypes.cdata",
    "ctypes.cdata/buffer", "ctypes.addressof", "ctypes.string_at", "ctypes.wstring_at", "ctypes.PyObj_FromPtr",
    "ctypes.create_string_buffer", "ctypes.create_unicode_buffer", "ctypes.seh_exception",
    "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.system", "subprocess.Popen",
    "os.symlink", "os.link", "os.chroot", "os.putenv", "os.unsetenv",
))
_PROC_FILES = frozenset(("mem", "clear_refs", "pagemap", "map_files", "environ"))


def _refused(what):
    return PermissionError(f"the timing job does not allow {what} in a submission's code: it would reach the "
                        "grader's own code in the job, or the figures it reads")


def _audit(event, args):
    """The serve job's audit hook (see above): refuses ``_REFUSED_EVENTS`` and the job's memory files, in every
    thread but the main one, which runs no submitted code. It calls no method of what it is given."""
    if _THREAD_ID() == _MAIN[0]:
        return
    if event == "sys.settrace" and _TRACE_GRANTS[0] > 0:
        _TRACE_GRANTS[0] -= 1  # the counter's own trace function, set and taken away in a count step
        return
    if event in _REFUSED_EVENTS:
        raise _refused(event)
    if event == "open" or event == "os.chdir":
        path = args[0] if args else None
        kind = type(path)
        if kind is int:
            return  # an open descriptor: it was opened by path, and checked then
        if kind is bytes:
            path = path.decode("utf-8", "replace")
        elif kind is not str:
            raise _refused("opening a path that is not a plain string")
        parts = path.replace("\\", "/").split("/")
        if event == "os.chdir" and ("proc" in parts or path.startswith("/dev/fd")):
            raise _refused("changing folder into /proc")
        if parts and parts[-1] in _PROC_FILES or "clear_refs" in path:
            raise _refused(f"opening {parts[-1]}")


_MAIN = [None]  # the main thread's id in the job
# How many sys.settrace calls the audit hook lets through outside the main thread: two for each count step (the
# counter sets its trace function before the path runs and takes it away after), none at any other time.
_TRACE_GRANTS = [0]


# The code of each step's thread. Its globals are a dictionary of its own: nothing in it leads to the worker.
_SANDBOX_SOURCE = '''
def step(keep, done, box, task, arguments, labels, sentinel, ends):
    ends.append(sentinel())  # a lock released once this thread is gone: the main thread waits on it
    try:
        try:
            keep.clear()  # what the job held from earlier steps, freed here in the job's own time
            box.append((True, task(*arguments)))
        except BaseException as error:
            box.append((False, describe(error, labels)))
    finally:
        done.release()


def describe(error, labels):
    """(type, its classes' names, message, where) of an exception, as plain text."""
    def name(kind):
        try:
            return str(type.__dict__["__qualname__"].__get__(kind))[:200]
        except BaseException:
            return "<a class whose name could not be read>"
    kind = type(error)
    try:
        message = str(error)
    except BaseException:
        message = "<the exception's message could not be read>"
    where = ""
    try:
        trace = error.__traceback__
        while trace is not None:
            code = trace.tb_frame.f_code
            if code.co_filename in labels:
                lines = labels[code.co_filename]
                number = trace.tb_lineno
                line = lines[number - 1].strip() if 0 < (number or 0) <= len(lines) else ""
                where = f"{code.co_filename}, line {number}: {line}"
            trace = trace.tb_next
    except BaseException:
        pass
    try:
        classes = [name(cls) for cls in type.__dict__["__mro__"].__get__(kind)][:64]
    except BaseException:
        classes = []
    return (name(kind), classes, message, where)


def load(chunks, scope):
    errors = []
    for chunk in chunks:
        try:
            exec(compile(chunk["source"], chunk["label"], "exec"), scope)
        except BaseException as error:
            errors.append(chunk["label"])
    return errors


class Draw:
    """The tensors of one timed call: windows of the path's pool, at offsets and scales drawn from the
    grader's seed for the call (splitmix64), each in fresh storage. Cheap (one pass over each tensor), so the
    call's time is the path's, and no two calls alike."""

    def __init__(self, pool, seed, device, dtype):
        self.pool, self.state, self.device, self.dtype = pool, seed, device, dtype

    def next(self):
        mask = (1 << 64) - 1
        self.state = (self.state + 0x9E3779B97F4A7C15) & mask
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    def __call__(self, *shape, dtype=None):
        count = 1
        for size in shape:
            count *= size
        room = self.pool.shape[0] - count
        if room < 0:
            raise ValueError(f"the timing pool holds {self.pool.shape[0]} numbers, a tensor of {shape} needs more")
        offset = self.next() % (room + 1)
        scale = 0.5 + (self.next() % 4096) / 4096.0
        return (self.pool[offset:offset + count] * scale).view(*shape).to(dtype=dtype or self.dtype)


POOL_FACTOR = 4  # the pool of a path holds this many times its largest input, plus POOL_EXTRA numbers
POOL_EXTRA = 1 << 16


def pool_size(torch, unit, spec):
    """The numbers a path's pool holds at ``spec``'s length (the longest of its calls): POOL_FACTOR times the
    largest input the unit's ``timing_inputs`` draws there, and POOL_EXTRA, so that each draw starts at an offset
    of its own. The inputs are drawn on the meta device, where nothing is made: the pool is sized by what the unit
    draws (q and k of (B, H, L, dh) in the first units, windows of patches in the fourth), not by a shape assumed
    here."""
    largest = [0]

    def sizes(*shape, dtype=None):
        count = 1
        for size in shape:
            count *= size
        largest[0] = max(largest[0], count)
        return torch.empty(shape, dtype=dtype, device="meta")

    unit.timing_inputs(spec, sizes)
    return POOL_FACTOR * largest[0] + POOL_EXTRA


def pool_for(torch, spec, seed, size):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=generator).to(spec["device"])


def swapped_in(namespace, swaps, task):
    """``task()`` with the stand-ins of ``swaps`` ({name: function}) in the namespace, whatever the names held
    before (a helper whose cell failed holds nothing): what they held is put back after, a name that held nothing
    taken away again."""
    absent = object()
    kept = {name: namespace.get(name, absent) for name in swaps}
    namespace.update(swaps)
    try:
        return task()
    finally:
        for name, value in kept.items():
            if value is absent:
                namespace.pop(name, None)
            else:
                namespace[name] = value


def path_with_stand_ins(unit, namespace, spec, swaps):
    """The spec's score path as ``namespace`` wrote it, with the stand-ins of ``swaps`` in place: while the path is
    made (a path that takes a helper from the namespace once takes the stand-in) and during every call (a function
    of the student's that looks the helper up when it runs finds the stand-in)."""
    if not swaps:
        return unit.score_path(namespace, spec)
    path = swapped_in(namespace, swaps, lambda: unit.score_path(namespace, spec))

    def with_stand_ins(*inputs):
        return swapped_in(namespace, swaps, lambda: path(*inputs))

    return with_stand_ins


def setup(torch, unit, namespace, spec):
    swaps = {name: unit.STAND_INS[stand_in] for name, stand_in in spec.get("stand_ins", {}).items()}
    path = path_with_stand_ins(unit, namespace, spec, swaps)
    pool = pool_for(torch, spec, spec["seed"], pool_size(torch, unit, spec))
    dtype = getattr(torch, spec["dtype"])
    for number in range(spec["warmup"]):
        path(*unit.timing_inputs(spec, Draw(pool, spec["seed"] + number, spec["device"], dtype)))
    return path, pool


def call(unit, spec, seed, pool, path, dtype):
    inputs = unit.timing_inputs(spec, Draw(pool, seed, spec["device"], dtype))
    return path(*inputs), inputs


def count(unit, spec, seed, pool, path, dtype, labels, settrace, gettrace, mode_class):
    """One call of the path, its steps counted (autograder/core/loop_check.py, ``counted``): ((Python steps, torch
    operations, intact, output), inputs). The inputs are drawn before the count starts; the output is checked
    against the reference's like a timed call's."""
    inputs = unit.timing_inputs(spec, Draw(pool, seed, spec["device"], dtype))
    # counted: autograder/core/loop_check.py's, written into this dictionary from the job's header (serve jobs)
    output, python_steps, operations, intact = counted(lambda: path(*inputs), labels.__contains__, settrace,
                                                       gettrace, mode_class)
    return (python_steps, operations, intact, output), inputs

'''
_SANDBOX = {"__builtins__": builtins, "__name__": "the timing job's steps"}
exec(compile(_SANDBOX_SOURCE, "<the timing job's steps>", "exec"), _SANDBOX)


class StepFailed(Exception):
    """A step of the timing job ended without its result; the reply is an error with these words."""

    def __init__(self, kind, message, where="", classes=()):
        super().__init__(message)
        self.reply = {"error": {"type": kind, "mro": list(classes), "message": message[:MAX_TEXT],
                                "where": where[:MAX_TEXT]}}


def _step(task, arguments, keep, labels):
    """Run ``task(*arguments)`` (a function of ``_SANDBOX``) in a thread of its own; its value, once no thread
    but the main one is left. Raises StepFailed with the exception it raised, or when threads it started run on."""
    done, box, ends = _NEW_LOCK(), [], []
    done.acquire()
    _START_THREAD(_SANDBOX["step"], (keep, done, box, task, arguments, labels, _SENTINEL, ends))
    done.acquire()
    _GC_DISABLE()
    end = ends[0] if type(ends) is list and len(ends) == 1 else None
    if type(end) is _LOCK_TYPE:
        end.acquire(True, STEP_THREADS_SECONDS)  # the step's thread gone (its state deleted), in one wait
    deadline = _MONOTONIC() + STEP_THREADS_SECONDS
    while _THREADS() != 0:  # the step's own thread finishing, and any the submission started
        _SLEEP(0.0002)
        if _MONOTONIC() > deadline:
            keep.append(box)
            raise StepFailed("RuntimeError", "a thread your code started was still running when its step ended "
                             "(the import, the setup of the path, or a call): the timing tier times your function "
                             "alone, so start no thread in it or at import")
    _GC_DISABLE()  # a thread that ended meanwhile may have turned it back on; none is left to do it again
    keep.append(box)
    keep.append(ends)
    entry = box[0] if type(box) is list and len(box) == 1 else None
    if type(entry) is not tuple or len(entry) != 2:
        raise StepFailed("RuntimeError", "the step ended without a result (its thread was stopped)")
    ok, value = entry
    if ok is True:
        return value
    if type(value) is not tuple or len(value) != 4:
        raise StepFailed("RuntimeError", "the step raised an exception that could not be described")
    kind, classes, message, where = value
    plain = [part if type(part) is str else "" for part in (kind, message, where)]
    classes = [name for name in classes if type(name) is str] if type(classes) is list else []
    raise StepFailed(plain[0], plain[1], plain[2], classes)


def _pair(value):
    """A step's (a, b), checked to be a plain pair: unpacking anything else could run its code here."""
    if type(value) is not tuple or len(value) != 2:
        raise StepFailed("RuntimeError", "the step's result was changed by the submission's code")
    return value


def _json(value):
    """``value`` (dicts with text keys, lists, text, numbers, booleans, None) as JSON, without the json module."""
    kind = type(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return _INT_REPR(value)
    if kind is float:
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return _FLOAT_REPR(value)
    if kind is str:
        return _QUOTE(value)
    if kind is list or kind is tuple:
        return "[" + ",".join([_json(item) for item in value]) + "]"
    if kind is dict:
        return "{" + ",".join([_QUOTE(key) + ":" + _json(item) for key, item in value.items()]) + "}"
    raise TypeError("a reply holds only plain data")


class _Raw:
    """A tensor's memory as numpy sees it (``__array_interface__``): no torch call, no ctypes."""
    __slots__ = ("__array_interface__",)


def _entries(tensor, indices):
    """The entries of CPU tensor ``tensor`` at the given flat (row-major) indices, as floats, read from its raw
    memory; indices past its end skipped. The caller checked it is a plain strided tensor on the CPU."""
    with _NO_TORCH_FUNCTION():  # no mode, no subclass between the job and the tensor's own fields
        shape = tuple(_TB.shape.__get__(tensor))
        strides = tuple(_TB.stride(tensor))
        dtype = _TB.dtype.__get__(tensor)
        size, base = _TB.element_size(tensor), _TB.data_ptr(tensor)  # data_ptr: the first entry, offset included
    numel = 1
    for extent in shape:
        numel *= extent
    wanted = [index for index in indices if type(index) is int and 0 <= index < numel]
    if not wanted or numel == 0:
        return []
    raw = _Raw()
    raw.__array_interface__ = {"version": 3, "shape": shape, "typestr": _TYPESTRS[dtype], "data": (base, True),
                               "strides": tuple(stride * size for stride in strides)}
    array = _NP_ASARRAY(raw)
    picked = array[_NP_UNRAVEL(_NP_ARRAY(wanted, dtype=_NP_INT64), shape)]
    if dtype == _BFLOAT16:
        picked = (picked.astype(_NP_UINT32) << 16).view(_NP_FLOAT32)
    return [float(value) for value in picked.tolist()]


def _entries_on_gpu(tensor, indices):
    """The entries of a GPU tensor, copied to the CPU by torch (the main thread has no mode of its own)."""
    with _NO_TORCH_FUNCTION():
        numel = _TB.numel(tensor)
        wanted = [index for index in indices if type(index) is int and 0 <= index < numel]
        flat = _TB.reshape(_TB.detach(tensor), (-1,))
        picked = _TB.index_select(flat, 0, _NEW_TENSOR(wanted, dtype=_LONG, device=_TB.device.__get__(tensor)))
        return _TB.tolist(_TB.to(picked, "cpu", _FLOAT64))


def _synchronize(device):
    if device.startswith("cuda") and _CUDA_SYNCHRONIZE is not None:
        _CUDA_SYNCHRONIZE()


def _cuda_peak_bytes(device):
    if not device.startswith("cuda") or _CUDA_MEMORY_STATS is None:
        return None
    return int(_CUDA_MEMORY_STATS(_DEVICE(device).index or 0).get("allocated_bytes.all.peak", 0))


def _cuda_allocated_bytes(device):
    if not device.startswith("cuda") or _CUDA_MEMORY_STATS is None:
        return None
    return int(_CUDA_MEMORY_STATS(_DEVICE(device).index or 0).get("allocated_bytes.all.current", 0))


def _modes_words():
    """Words for a torch mode left active in the main thread (there should never be one), or ""."""
    if _FUNCTION_MODES() or _DISPATCH_MODES():
        return "a torch function mode or dispatch mode was active where the job reads outputs"
    return ""


def _serve_one(command, state):
    """One command of the timing tier (see the comment above)."""
    kind = command.get("command")
    if "refused" in state:
        return state["refused"]
    labels = state["labels"]
    if kind == "setup":
        spec = command["spec"]
        state["keep"].append(state.pop("path", None))
        state["keep"].append(state.pop("pool", None))
        state["spec"], state["device"] = spec, spec["device"]
        try:
            made = _pair(_step(_SANDBOX["setup"], (torch, state["unit"], state["namespace"], spec),
                               state["keep"], labels))
        except StepFailed as failed:
            return failed.reply
        state["path"], state["pool"] = made
        _synchronize(spec["device"])
        return {"ok": True}
    if kind == "call":
        if "path" not in state:
            return {"error": {"type": "RuntimeError", "mro": [], "message": "call before setup", "where": ""}}
        spec, device = state["spec"], state["device"]
        state["keep"].append(state.pop("last", None))  # freed by the call's own step, in its timed window
        # For a call measured for memory, every large tensor is a fresh mapping, so that memory freed earlier and
        # reused shows as new; calls timed for speed use the allocator as usual.
        _mmap_threshold(64 * 1024 if command.get("fresh_mappings") else 32 * 1024 * 1024)
        if command.get("fresh_mappings") and _MALLOC_TRIM is not None:
            _MALLOC_TRIM(0)
        if device.startswith("cuda") and _CUDA_RESET_PEAK is not None:
            _CUDA_RESET_PEAK(_DEVICE(device).index or 0)
        baseline = _cuda_allocated_bytes(device)
        call_spec = dict(spec)
        call_spec["length"] = command.get("length", spec["length"])
        try:
            output, inputs = _pair(_step(_SANDBOX["call"], (state["unit"], call_spec, command["seed"], state["pool"],
                                                       state["path"], _DTYPES[spec["dtype"]]),
                                   state["keep"], labels))
            _synchronize(device)
        except StepFailed as failed:
            return failed.reply
        state["last"] = output
        state["keep"].append(inputs)
        return {"done": command["nonce"], "cuda_baseline": baseline}
    if kind == "count":
        # One call of the path at the grader's length, its steps counted (autograder/core/loop_check.py, ``counted``);
        # its output is kept for the grader's samples, as a timed call's is: a path that answers the count with
        # something cheap and wrong is caught there. The audit hook lets the counter's trace function through, and
        # only it.
        if "path" not in state:
            return {"error": {"type": "RuntimeError", "mro": [], "message": "count before setup", "where": ""}}
        call_spec = dict(state["spec"])
        call_spec["length"] = command.get("length", call_spec["length"])
        state["keep"].append(state.pop("last", None))
        _TRACE_GRANTS[0] = 2
        try:
            counts, inputs = _pair(_step(_SANDBOX["count"], (state["unit"], call_spec, command["seed"], state["pool"],
                                                        state["path"], _DTYPES[call_spec["dtype"]], state["labels"],
                                                        _SETTRACE, _GETTRACE, _FUNCTION_MODE),
                                         state["keep"], labels))
        except StepFailed as failed:
            return failed.reply
        finally:
            _TRACE_GRANTS[0] = 0
        state["keep"].append(inputs)
        if type(counts) is not tuple or len(counts) != 4 or type(counts[0]) is not int or type(counts[1]) is not int:
            return {"error": {"type": "RuntimeError", "mro": [], "message": "the count was changed", "where": ""}}
        state["last"] = counts[3]
        _synchronize(call_spec["device"])
        return {"steps": counts[0], "operations": counts[1], "intact": counts[2] is True}
    if kind == "sample":
        last = state.get("last")
        if type(last) is not _TENSOR or _TB.layout.__get__(last) != _STRIDED:
            try:
                name = _QUALNAME(type(last))
            except BaseException:
                name = "value"
            return {"value": {"type_name": str(name)[:300] if type(name) is str else "value", "repr": ""}}
        modes = _modes_words()
        if modes:
            return {"error": {"type": "RuntimeError", "mro": [], "message": modes, "where": ""}}
        with _NO_TORCH_FUNCTION():
            shape = list(_TB.shape.__get__(last))
            dtype = _TB.dtype.__get__(last)
            on_gpu = _TB.is_cuda.__get__(last)
            where = str(_TB.device.__get__(last))
        if on_gpu or dtype not in _TYPESTRS:
            values = _entries_on_gpu(last, command["indices"])
        else:
            values = _entries(last, command["indices"])
        return {"values": values, "shape": shape, "dtype": str(dtype).replace("torch.", ""), "device": where,
                "cuda_peak": _cuda_peak_bytes(state["device"])}
    return {"error": {"type": "ValueError", "mro": [], "message": f"unknown command {kind}", "where": ""}}


def serve(state, commands, replies):
    """Answer the timing tier's commands, one JSON line each, until the grader closes the pipe."""
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = _OS_READ(commands, 1 << 16)
            if not chunk:
                return
            pending += chunk
        line, pending = pending.split(b"\n", 1)
        command, _ = _SCAN(line.decode("utf-8"), 0)
        reply = (_json(_serve_one(command, state)) + "\n").encode("utf-8")
        view = memoryview(reply)
        while view:
            view = view[_OS_WRITE(replies, view):]


def _timing_inputs(unit, spec, seed):
    """The inputs of a score path for ``seed`` as a timing job makes them (for the in-kernel timing of nbgrader)."""
    dtype = getattr(torch, spec["dtype"])
    pool = _SANDBOX["pool_for"](torch, spec, spec["seed"], _SANDBOX["pool_size"](torch, unit, spec))
    return unit.timing_inputs(spec, _SANDBOX["Draw"](pool, seed, spec["device"], dtype))


def _score_path(namespace, spec, unit):
    """The spec's score path as ``namespace`` wrote it, with the stand-ins of ``spec["stand_ins"]`` in place."""
    swaps = {name: unit.STAND_INS[stand_in] for name, stand_in in spec.get("stand_ins", {}).items()}
    return _SANDBOX["path_with_stand_ins"](unit, namespace, spec, swaps)


def pack(value):
    """``value`` (dicts, lists, text, numbers, booleans, None and plain CPU tensors) as a data frame's bytes.

    The grader reads it back with autograder/sandbox/protocol.py, which builds only plain data and tensors: four
    bytes of header length, a JSON header in which each tensor is {"$tensor": [dtype, shape, offset,
    nbytes]}, then the tensors' bytes.
    """
    blobs, offset = [], 0

    def tree(node):
        nonlocal offset
        if isinstance(node, torch.Tensor):
            plain = node.detach().to("cpu").contiguous()
            data = plain.reshape(-1).view(torch.uint8).numpy().tobytes() if plain.numel() else b""
            spec = [str(plain.dtype).replace("torch.", ""), list(plain.shape), offset, len(data)]
            blobs.append(data)
            offset += len(data)
            return {"$tensor": spec}
        if isinstance(node, dict):
            return {str(key): tree(item) for key, item in node.items()}
        if isinstance(node, (list, tuple)):
            return [tree(item) for item in node]
        return node

    header = json.dumps(tree(value)).encode()
    return struct.pack("<I", len(header)) + header + b"".join(blobs)


# ---------------------------------------------------------------------------------------------
# Frames: how the grader and a job talk over a pipe. A frame is one byte of kind, eight of
# length, then the payload. The grader checks every frame it reads: a job runs the student's
# code, which can write anything to the same pipe.

def _read_exactly(fd, size):
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the grader closed the pipe")
        data += chunk
    return bytes(data)


def read_frame(fd):
    kind, size = struct.unpack("<cQ", _read_exactly(fd, 9))
    return kind, _read_exactly(fd, size)


def frame(kind, payload):
    return struct.pack("<cQ", kind, len(payload)) + payload


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _grade_job(job_in, job_out):
    """A correctness job: read the submission, load the code, say so; then read the probes and run each task's.

    The grader sends the probes (the hidden inputs) only once it has the L frame: nothing of them is in the job
    while the submission's top-level code runs, and what that code printed holds none of them.
    """
    _, header = read_frame(job_in)
    submission = json.loads(header)
    _limit_self(submission.get("limits", {}))
    chunks = submission["chunks"]
    unit = _unit_code(submission)
    namespace, errors = _load(chunks, submission["filename"], submission.get("module", "submission"))
    defined = sorted(name for name in namespace if not name.startswith("__"))[:500]
    _write_all(job_out, frame(b"L", pack({"errors": errors, "defined": defined})))
    os.set_blocking(job_in, True)  # as it was, whatever the code did to it while it loaded
    _, plan_bytes = read_frame(job_in)
    os.close(job_in)
    import io

    plan = torch.load(io.BytesIO(plan_bytes), weights_only=True)
    wanted = submission.get("tasks")
    for task in plan["tasks"]:
        if wanted is not None and task["task"] not in wanted:
            continue
        probes = task["probes"]
        if "rename" in task:  # the error model's: every mutant of a job shares the same probes (see _renamed)
            probes = [_renamed(probe, tuple(task["rename"]), {}) for probe in probes]
        results = {probe["id"]: run_probe(namespace, probe, chunks, unit) for probe in probes}
        _write_all(job_out, frame(b"R", task["task"].encode() + b"\0" + pack(results)))


def _renamed(probe, rename, copies):
    """``probe`` calling ``rename[1]`` where it calls ``rename[0]``, at any depth (a sequence's calls too; a stand-in's
    own "name" is left), with tensors of its own: the error model sends one copy of a task's probes for all the
    mutants of a job (core/mutants.py), and a mutant that changes its input in place, or a gradient that builds up on
    a trained input, must not reach the next mutant's calls. A tensor the probe holds twice (one input passed to two
    calls of a sequence) is one tensor in the copy too (``copies``: {id: copy})."""
    if isinstance(probe, dict):
        return {key: (rename[1] if key == "name" and value == rename[0] else
                      value if key == "substitute" else _renamed(value, rename, copies))
                for key, value in probe.items()}
    if isinstance(probe, (list, tuple)):
        return type(probe)(_renamed(item, rename, copies) for item in probe)
    if isinstance(probe, _TENSOR):
        if id(probe) not in copies:
            copies[id(probe)] = _TB.clone(probe)
        return copies[id(probe)]
    return probe


def _serve_job(job_in, job_out):
    """A timing job: read the code, load it in a step of its own, then answer commands on the same two pipes
    (see the comment above ``_OS_READ``)."""
    _, header = read_frame(job_in)
    submission = json.loads(header)
    _limit_self(submission.get("limits", {}))
    _MAIN[0] = _THREAD_ID()
    _ADD_AUDIT_HOOK(_audit)  # before any submitted code: it cannot be removed, and no other hook can be added
    sys.modules["__main__"] = types.ModuleType("__main__")  # the worker is not to be found by its name
    chunks = submission["chunks"]
    unit = _unit_code(submission)
    # The timing tier's counter of a path's steps (loop_check.counted), sent as text as the unit's code is, and run
    # from the steps' own dictionary: written in before any submitted code runs.
    exec(compile(submission.get("counter_code", ""), "<the timing job's counter>", "exec"), _SANDBOX)
    name = submission.get("module", "submission")
    module = types.ModuleType(name)
    module.__file__ = submission["filename"]
    module.__dict__["__builtins__"] = builtins
    sys.modules[name] = module
    state = {"unit": unit, "namespace": module.__dict__, "keep": [],
             "labels": _lines_by_label(chunks)}
    _GC_DISABLE()
    try:
        _step(_SANDBOX["load"], (chunks, module.__dict__), state["keep"], state["labels"])
    except StepFailed as failed:  # threads left running at import: no command will be answered but with this
        state["refused"] = failed.reply
    serve(state, job_in, job_out)


# ---------------------------------------------------------------------------------------------
# The fork server. ``python worker.py --zygote FD [--isolate]`` imports torch once, then forks a
# job for each request that arrives on the socket FD (a JSON request and the job's descriptors).
# Each job is two processes:
#
#   keeper   forked from the server; runs no student code. With --isolate it first moves into new
#            user, mount, PID, network, IPC and UTS namespaces. It forks the runner, reports the
#            runner's process id, and waits on it and on the lifeline: when the grader shuts the
#            lifeline, or goes away, it kills the runner; when the runner ends, it sends the exit
#            status and leaves. With --isolate the runner is the first process of its own PID
#            namespace, so its death takes every process it started with it.
#   runner   with --isolate: a fresh private /work, /tmp and /dev/shm, no capabilities, not
#            traceable or readable through /proc by other jobs; then the limits, then the code.
#
# The server itself runs inside bubblewrap (see sandbox.py); --isolate keeps the jobs that share
# it apart from each other.
#
# With --users instead (where no namespace can be made: a container under Docker's default seccomp
# profile), the server runs as root outside any sandbox, and each request names a user of its own
# for the job (the grader keeps a pool of them, see autograder/sandbox/users.py). The runner becomes that
# user for good (no groups, no capabilities, no new privileges from setuid programs), then installs
# a seccomp filter that refuses what a grading job never needs (sockets other than Unix ones,
# ptrace, namespaces, mounts, keyrings, BPF, System V IPC...), and only then runs the code. The
# keeper is a subreaper: when the runner ends, it kills every process of the job's user, wherever
# it went, and reaps them, before it reports the exit status. The request comes with a sixth
# descriptor, the user id's lease (users.Lease, an flock): the keeper holds it until it leaves, so
# that the id is never leased to another grader while a keeper that would kill its processes lives,
# not even when the grader that started the job has crashed. Its job never holds it.

_libc_handle = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
_CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND = 0x1, 0x2, 0x4, 0x20, 0x1000
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _enter_namespaces():
    """In the keeper: new namespaces, the same user and group ids inside as outside."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc_handle.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC
                                | _CLONE_NEWUTS), "unshare")
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1")


SCRATCH_BYTES = 128 * 1024**2  # the default size of each private folder; the request may say otherwise


def _private_folders(keep, size):
    """In the job's first process: its own empty /work, /tmp and /dev/shm, each at most ``size`` bytes.

    ``keep`` are read-only folders of the server's view that lie below one of those (a Python
    environment in /tmp): they are mounted again, read-only, over the fresh folder. What a job writes
    there is gone with its mount namespace, and is counted by the job's memory limit meanwhile.
    """
    _check(_libc_handle.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make mounts private")
    held = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep}
    options = f"mode=0777,size={int(size)},nr_inodes=16384".encode()
    for folder in (b"/work", b"/tmp", b"/dev/shm"):
        if os.path.isdir(folder):
            _check(_libc_handle.mount(b"tmpfs", folder, b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
                   f"mount {folder.decode()}")
    for path, handle in held.items():
        os.makedirs(path, exist_ok=True)
        source, target = f"/proc/self/fd/{handle}".encode(), path.encode()
        _check(_libc_handle.mount(source, target, None, _MS_BIND | _MS_REC, None), f"mount {path} again")
        _check(_libc_handle.mount(None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV,
                                  None),
               f"make {path} read-only")
        os.close(handle)

def _drop_capabilities():
    """In the runner: no capabilities left (in its own user namespace) to undo what was set up."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    _check(_libc_handle.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()), "drop capabilities")


def _become(uid, gid):
    """In the runner (root until now): the job's own user and group, for good, and nothing else."""
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("1000")  # out of memory, the kernel ends a job before the grader
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # the capabilities go with root; the process is no longer dumpable
    _check(_libc_handle.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no new privileges")
    _check(_libc_handle.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent death signal")
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (gid,) * 3 or os.getgroups():
        raise OSError(f"could not become user {uid} alone")
    try:
        os.setresuid(0, 0, 0)
    except PermissionError:
        return
    raise OSError("the job's user could become root again")


# What the seccomp filter refuses (with EPERM), beyond sockets of other families than AF_UNIX, clone
# with a namespace flag, the TIOCSTI ioctl and prctl(PR_SET_DUMPABLE): calls that a job needs
# no more than to read its inputs, compute and write its outputs.
REFUSED_CALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsmount", "fsconfig",
    "move_mount", "open_tree", "fspick", "mount_setattr",
    "bpf", "perf_event_open", "userfaultfd", "fanotify_init", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "open_by_handle_at", "name_to_handle_at",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
    "capset", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "vhangup", "mknod", "mknodat",
    "iopl", "ioperm", "lookup_dcookie", "uselib", "personality",
    "shmget", "semget", "msgget", "mq_open",  # what these make outlives the job's processes
)
_AF_UNIX, _TIOCSTI, _CLONE_THREAD = 1, 0x5412, 0x00010000
_NAMESPACE_FLAGS = (_CLONE_NEWNS, _CLONE_NEWUTS, _CLONE_NEWIPC, _CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWNET,
                    0x02000000, 0x00000080)  # CLONE_NEWCGROUP, CLONE_NEWTIME
_SECCOMP = None  # libseccomp's binding, imported by the server before any job (see zygote)


def _seccomp_binding():
    """libseccomp's Python binding: Debian's python3-seccomp (``seccomp``), else ``pyseccomp`` from PyPI."""
    try:
        import seccomp
    except ImportError:
        import pyseccomp as seccomp
    return seccomp


def _filter_system_calls(processes=True):
    """In the runner, as the job's user: load the seccomp filter (see REFUSED_CALLS); raises if it cannot.

    Without ``processes`` (a timing job) it refuses new processes too, threads apart: all the job's work is
    then done in the runner's own threads, where the grader's CPU clock of the runner counts it; and exec,
    which would make the process dumpable again (its /proc files its user's, ``clear_refs`` among them: the
    memory figure's high-water mark could be restarted from inside).
    """
    import errno

    seccomp = _SECCOMP
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)  # calls of another architecture: the process dies
    for name in REFUSED_CALLS:
        rules.add_rule(refuse, name)
    for name in ("socket", "socketpair"):
        rules.add_rule(refuse, name, seccomp.Arg(0, seccomp.NE, _AF_UNIX))
    for flag in _NAMESPACE_FLAGS:
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")  # its flags are out of a filter's reach: libc falls back
    rules.add_rule(refuse, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, _TIOCSTI))
    rules.add_rule(refuse, "prctl", seccomp.Arg(0, seccomp.EQ, _PR_SET_DUMPABLE))
    if not processes:
        for name in ("fork", "vfork", "execve", "execveat"):
            rules.add_rule(refuse, name)
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0))
    rules.load()


def _end_user(uid, lease=None):
    """In the keeper: kill every process of user ``uid`` and reap the ones that came back here; whether none is left.

    A process of that user is forked to signal them all at once (kill(-1) from it reaches its own user's
    processes only, and spares itself), until /proc shows none alive. It keeps ``lease`` (the keeper's
    descriptor of the id's lease) open until it has ended: whatever becomes of the keeper meanwhile (killed
    with its fork server's tree), the id stays leased while anything may still kill in its name, so no
    other grader's job on that id can be killed by it. It is not dumpable, so no process of the job's user
    can reach that descriptor through /proc.
    """
    for _ in range(200):
        pid = os.fork()
        if pid == 0:
            try:
                _libc_handle.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        while True:  # orphans of the job, reparented to this subreaper
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not processes_of(uid):
            return True
        time.sleep(0.005)
    return False


def processes_of(uid):
    """The ids of the live (not zombie) processes whose real user is ``uid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as handle:
                status = handle.read()
        except OSError:
            continue
        fields = dict(line.split(b":", 1) for line in status.splitlines() if b":" in line)
        if int(fields.get(b"Uid", b"-1 ").split()[0]) == uid and fields.get(b"State", b"").split()[:1] not in \
                ([b"Z"], [b"X"]):
            found.append(int(entry))
    return found


def _runner(request, fds, isolate):
    """The runner: the job's code, and the student's. Never returns."""
    code = 0
    try:
        if isolate:
            _drop_capabilities()
        else:
            os.setsid()
        if "uid" in request:
            _become(request["uid"], request["gid"])  # not dumpable from here on: its /proc is root's
        elif not request.get("traceable"):
            _libc_handle.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        os.chdir(request.get("workdir") or "/work")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds["stdout"], 1)
        os.dup2(fds["stderr"], 2)
        keep = sorted({0, 1, 2, fds["in"], fds["out"]})
        for low, high in zip(keep, keep[1:] + [1 << 16]):
            os.closerange(low + 1, high)
        for name, value in request.get("environment", {}).items():
            os.environ[name] = value
        if "uid" in request:
            _filter_system_calls(processes=request["mode"] != "serve")  # the last step before any of its code
        if request["mode"] == "grade":
            _grade_job(fds["in"], fds["out"])
        elif request["mode"] == "serve":
            _serve_job(fds["in"], fds["out"])
    except SystemExit as error:
        code = error.code if isinstance(error.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)


def _first(request, fds, isolate, keeper_alive, status, keep):
    """The job's first process (with --isolate, the init of its PID namespace): sets up, starts the
    runner, waits for it and writes its exit status to ``status``. Never returns; runs no student code."""
    try:
        _libc_handle.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if select.select([keeper_alive], [], [], 0)[0]:
            os._exit(1)  # the keeper died before the line above: nobody would stop this job
        if isolate:
            _private_folders(keep, request.get("scratch_bytes") or SCRATCH_BYTES)
        runner = os.fork()
        if runner == 0:
            os.close(status)
            os.close(keeper_alive)
            _libc_handle.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            _runner(request, fds, isolate)
        for fd in fds.values():
            os.close(fd)
        while True:
            pid, code = os.wait()  # the runner, and with --isolate any orphan of the namespace
            if pid == runner:
                break
        code = -os.WTERMSIG(code) if os.WIFSIGNALED(code) else os.WEXITSTATUS(code)
        os.write(status, json.dumps({"exit": code}).encode())
    except BaseException as error:
        try:
            os.write(status, json.dumps({"failed": f"{type(error).__name__}: {error}"}).encode())
        except BaseException:
            pass
    os._exit(0)


def _keeper(request, received, isolate, keep):
    """The keeper of one job (see above). Never returns."""
    lifeline = socket.socket(fileno=received[0])
    fds = {"in": received[1], "out": received[2], "stdout": received[3], "stderr": received[4]}
    lease = received[5] if len(received) > 5 else None  # held until this process leaves; never the job's
    try:
        if _SECCOMP is not None and not (isinstance(request.get("uid"), int) and request["uid"] >= 1000
                                         and isinstance(request.get("gid"), int) and request["gid"] >= 1000):
            raise ValueError("a job of a --users server must name its own unprivileged user")
        if "uid" in request:  # the grader's lock on the id, the same open file: taking it again cannot block
            if lease is None:
                raise ValueError("a job with a user of its own must come with that user's lease")
            fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if isolate:
            _enter_namespaces()
        if "uid" in request:  # no PID namespace: what the job leaves running comes back here, to be ended
            _check(_libc_handle.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "become a subreaper")
        alive_read, alive_write = os.pipe()
        status_read, status_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            lifeline.detach()
            if lease is not None:
                os.close(lease)
            os.close(alive_write)
            os.close(status_read)
            _first(request, fds, isolate, alive_read, status_write, keep)
        os.close(alive_read)
        os.close(status_write)
        for fd in fds.values():
            os.close(fd)
        lifeline.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        first = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(lifeline, select.POLLIN)
        poller.register(first, select.POLLIN)
        while True:
            events = dict(poller.poll())
            if first in events:
                break
            if lifeline.fileno() in events:  # the grader wants it stopped, or is gone
                os.kill(pid, signal.SIGKILL)  # with --isolate, the whole PID namespace goes with it
                break
        os.waitpid(pid, 0)
        report = os.read(status_read, 4096) or json.dumps({"exit": -signal.SIGKILL}).encode()
        if "uid" in request and not _end_user(request["uid"], lease):
            report = json.dumps({"failed": f"processes of the job's user {request['uid']} outlived it"}).encode()
        try:
            lifeline.sendall(report + b"\n")
        except OSError:
            pass
        os._exit(0)
    except BaseException as error:
        try:
            lifeline.sendall(json.dumps({"failed": f"{type(error).__name__}: {error}"}).encode() + b"\n")
        finally:
            os._exit(71)


def zygote(control_fd, isolate, keep=(), users=False):
    """Serve fork requests until the grader closes the socket."""
    global _SECCOMP
    if users:
        _SECCOMP = _seccomp_binding()  # before any job: a job cannot choose what it loads
    _warm_the_meta_device()
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    while True:
        while True:  # reap the keepers that have left
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not select.select([control], [], [], 1.0)[0]:
            continue
        message, received, _, _ = socket.recv_fds(control, 1 << 16, 6)
        if not message:
            return
        if len(received) not in (5, 6):
            for fd in received:
                os.close(fd)
            continue
        if os.fork() == 0:
            control.close()
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            _keeper(json.loads(message), received, isolate, keep)
        for fd in received:
            os.close(fd)


if __name__ == "__main__":
    zygote(int(sys.argv[sys.argv.index("--zygote") + 1]), "--isolate" in sys.argv,
           [sys.argv[at + 1] for at, word in enumerate(sys.argv) if word == "--keep"], "--users" in sys.argv)
