"""The code that runs beside a student's submission, in its own process.

Run as ``python worker.py WORKDIR``; it imports nothing of the grader, so it
can run where the grader's files are out of reach. WORKDIR holds:

    submission.json   the student's code as chunks (a .py file is one chunk,
                      a notebook one chunk per code cell)
    plan.pt           the probes to run, task by task: which function to call
                      on which inputs. No expected output, tolerance or point
                      is in it.

It writes, each file atomically (a temporary name, then a rename):

    loaded.json       which chunks failed to run, and the names defined
    result-TASK.pt    per task, for each probe, the outputs as plain CPU
                      tensors and plain data, or the exception raised

Comparing those outputs with the reference is the grader's job, in its own
process; nothing here knows whether an answer is right.

``python worker.py WORKDIR --serve`` is the timing tier's side (see
autograder/timing.py): it loads the code the same way, then answers the
grader's commands, one JSON line each, on two pipes named by their fd numbers:
build the inputs of a score path, call it once, report sampled output values.
It keeps no clock: the grader times each call from its own process.
"""

import json
import os
import resource
import sys
import traceback
import types

import torch

MODULE_NAME = "positional_encodings"
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


def _write_atomically(path, write):
    temporary = path + ".tmp"
    write(temporary)
    os.replace(temporary, path)


def _where(error, chunks):
    """The last line of the submission that the traceback passes through."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        for chunk in chunks:
            if frame.filename == chunk["label"]:
                lines = chunk["source"].splitlines()
                line = lines[frame.lineno - 1].strip() if 0 < (frame.lineno or 0) <= len(lines) else ""
                return f"{chunk['label']}, line {frame.lineno}: {line}"[:MAX_TEXT]
    return ""


def _error(error, chunks):
    kind = type(error)
    try:
        message = str(error)
    except BaseException:  # a hostile __str__ must not take the worker down
        message = "<the exception's message could not be read>"
    return {
        "error": {
            "type": kind.__qualname__,
            "mro": [cls.__qualname__ for cls in kind.__mro__],
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
        tensor, device = _plain_tensor(value)
        return {"tensor": tensor, "device": device}
    kind = type(value)
    try:
        text = repr(value)
    except BaseException:
        text = "<unprintable>"
    return {"type_name": f"{kind.__module__}.{kind.__qualname__}".replace("builtins.", ""), "repr": text[:200]}


def _decode_argument(value):
    if isinstance(value, dict) and "__dtype__" in value:
        return getattr(torch, value["__dtype__"])
    if isinstance(value, list):
        return [_decode_argument(item) for item in value]
    if isinstance(value, dict):
        return {key: _decode_argument(item) for key, item in value.items()}
    return value


def _call(namespace, call, chunks):
    function = namespace.get(call["name"])
    if function is None:
        return {"missing": call["name"]}
    args = _decode_argument(call.get("args", []))
    kwargs = _decode_argument(call.get("kwargs", {}))
    try:
        return {"value": _encode(function(*args, **kwargs))}
    except BaseException as error:  # SystemExit and KeyboardInterrupt included
        return _error(error, chunks)


def _run_module_probe(namespace, probe, chunks):
    """Build the student's nn.Module, optionally load a weight, run forward and backward."""
    cls = namespace.get(probe["name"])
    if cls is None:
        return {"missing": probe["name"]}
    out = {}
    try:
        module = cls(*_decode_argument(probe.get("init", [])))
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
    try:
        if probe.get("weight") is not None:
            with torch.no_grad():
                module.weight.copy_(probe["weight"])
        output = module(probe["x"])
        out["forward"] = {"value": _encode(output)}
        if probe.get("grad_out") is not None:
            module.weight.grad = None
            (output * probe["grad_out"]).sum().backward()
            out["grad"] = {"value": _encode(module.weight.grad)}
    except BaseException as error:
        out["forward"] = _error(error, chunks)
    return out


# Stand-ins for a helper task, so that a task that calls another is graded on its own: the
# stand-in returns valid but scrambled indices (no reference values), and the grader knows
# what the task should make of them. The grader imports these same two functions.

def scrambled_relative_positions(length_q, length_k, max_relative_position, *, device=None, key=(3, 5, 1)):
    """Stand-in for clipped_relative_positions: (Lq, Lk) int64 in [0, 2k], not the real table."""
    a, b, c = key
    query = torch.arange(length_q, device=device)[:, None]
    keys = torch.arange(length_k, device=device)[None, :]
    return (keys * a + query * b + c) % (2 * max_relative_position + 1)


def scrambled_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128, *, key=(7, 3, 1)):
    """Stand-in for t5_relative_position_bucket: int64 in [0, num_buckets), depending on every argument."""
    a, b, c = key
    return (relative_position.long() * a + b * int(bool(bidirectional)) + c * int(max_distance)) % num_buckets


STAND_INS = {"scrambled_relative_positions": scrambled_relative_positions, "scrambled_buckets": scrambled_buckets}


def run_probe(namespace, probe, chunks):
    torch.manual_seed(probe.get("seed", 0))
    if probe["op"] == "module":
        return _run_module_probe(namespace, probe, chunks)
    substitute = probe.get("substitute")
    if not substitute or substitute["name"] not in namespace:
        return _call(namespace, probe, chunks)
    original = namespace[substitute["name"]]
    stand_in, key = STAND_INS[substitute["stand_in"]], tuple(substitute["key"])
    namespace[substitute["name"]] = lambda *args, **kwargs: stand_in(*args, **kwargs, key=key)
    try:
        return _call(namespace, probe, chunks)
    finally:
        namespace[substitute["name"]] = original


def _load(chunks, filename):
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = filename
    sys.modules[MODULE_NAME] = module
    errors = []
    for chunk in chunks:
        try:
            code = compile(chunk["source"], chunk["label"], "exec")
            exec(code, module.__dict__)
        except BaseException as error:
            entry = _error(error, chunks)["error"]
            if isinstance(error, SyntaxError):
                entry["where"] = f"{chunk['label']}, line {error.lineno}: {(error.text or '').strip()}"
            entry["chunk"] = chunk["label"]
            errors.append(entry)
    return module.__dict__, errors


def _limit_self(limits):
    """Limits on this process, set before the submission's code runs (they bind its children too)."""
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def _timing_inputs(spec):
    """The inputs of a score path, drawn from the spec's seed: the same in every process that asks."""
    generator = torch.Generator().manual_seed(spec["seed"])
    batch, heads, length, head_dim = spec["batch"], spec["heads"], spec["length"], spec["head_dim"]
    device, dtype = spec["device"], getattr(torch, spec["dtype"])
    q = torch.randn(batch, heads, length, head_dim, generator=generator).to(device=device, dtype=dtype)
    k = torch.randn(batch, heads, length, head_dim, generator=generator).to(device=device, dtype=dtype)
    rel_k = torch.randn(2 * spec["max_relative"] + 1, head_dim, generator=generator).to(device=device, dtype=dtype)
    table = torch.randn(spec["num_buckets"], heads, generator=generator).to(device=device, dtype=dtype)
    return q, k, rel_k, table


def _timed_call(namespace, spec):
    """A function of no arguments that runs the spec's score path once, as the student wrote it."""
    q, k, rel_k, table = _timing_inputs(spec)
    length = spec["length"]
    if spec["path"] == "shaw":
        shaw_scores = namespace["shaw_scores"]
        return lambda: shaw_scores(q, k, rel_k, spec["max_relative"])
    t5_bias, biased_scores = namespace["t5_bias"], namespace["biased_scores"]
    return lambda: biased_scores(q, k, t5_bias(length, length, table), scale=1.0)


def _synchronize(device):
    if device.startswith("cuda") and _CUDA_SYNCHRONIZE is not None:
        _CUDA_SYNCHRONIZE()


def _cuda_peak_bytes(device):
    if not device.startswith("cuda") or _CUDA_MEMORY_STATS is None:
        return None
    return int(_CUDA_MEMORY_STATS(torch.device(device).index or 0).get("allocated_bytes.all.peak", 0))


def _serve_one(namespace, chunks, command, state):
    kind = command["command"]
    if kind == "setup":
        spec = command["spec"]
        state.clear()
        state["device"] = spec["device"]
        try:
            state["call"] = _timed_call(namespace, spec)
            for _ in range(spec["warmup"]):
                state["call"]()
            _synchronize(spec["device"])
        except BaseException as error:
            state.pop("call", None)
            return _error(error, chunks)
        return {"ok": True}
    if kind == "reset_peak":
        state.pop("last", None)
        # For the call measured next, every large tensor is a fresh mapping, so the kernel's high-water mark
        # sees all of it; calls timed later use the allocator as usual (the threshold at its usual maximum).
        _mmap_threshold(64 * 1024 if command.get("fresh_mappings") else 32 * 1024 * 1024)
        if command.get("fresh_mappings") and _MALLOC_TRIM is not None:
            _MALLOC_TRIM(0)  # free heap memory goes back to the system: reusing it shows as new memory
        if state["device"].startswith("cuda") and _CUDA_RESET_PEAK is not None:
            _synchronize(state["device"])
            _CUDA_RESET_PEAK(torch.device(state["device"]).index or 0)
        return {"ok": True, "cuda_baseline": _cuda_peak_bytes(state["device"])}
    if kind == "run":
        state.pop("last", None)  # free the previous output before the next call, as the reference does
        try:
            state["last"] = state["call"]()
            _synchronize(state["device"])
        except BaseException as error:
            return _error(error, chunks)
        return {"done": command["nonce"]}
    if kind == "sample":
        last = state.get("last")
        if not isinstance(last, torch.Tensor):
            return {"value": _encode(last)}
        with torch._C.DisableTorchFunctionSubclass():
            flat = last.detach().reshape(-1)
            index = torch.tensor(command["indices"], dtype=torch.long, device=flat.device)
            index = index[index < flat.numel()]
            values = flat[index].to("cpu", torch.float64).tolist()
            return {"values": values, "shape": list(last.shape), "dtype": str(last.dtype).replace("torch.", ""),
                    "device": str(last.device), "cuda_peak": _cuda_peak_bytes(state["device"])}
    return {"error": {"type": "ValueError", "mro": [], "message": f"unknown command {kind}", "where": ""}}


def serve(namespace, chunks, commands, replies):
    """Answer the timing tier's commands until the grader closes the pipe."""
    with os.fdopen(commands, "r", encoding="utf-8") as reader, os.fdopen(replies, "w", encoding="utf-8") as writer:
        state = {}
        for line in reader:
            reply = _serve_one(namespace, chunks, json.loads(line), state)
            writer.write(json.dumps(reply) + "\n")
            writer.flush()


def main(workdir):
    os.chdir(workdir)
    with open("submission.json", encoding="utf-8") as handle:
        submission = json.load(handle)
    _limit_self(submission.get("limits", {}))
    chunks = submission["chunks"]
    namespace, errors = _load(chunks, submission["filename"])
    defined = sorted(name for name in namespace if not name.startswith("__"))[:500]

    def write_loaded(path):
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"errors": errors, "defined": defined}, handle)

    _write_atomically("loaded.json", write_loaded)
    if "--serve" in sys.argv:
        at = sys.argv.index("--serve")
        serve(namespace, chunks, int(sys.argv[at + 1]), int(sys.argv[at + 2]))
        return
    plan = torch.load("plan.pt", weights_only=True)
    wanted = submission.get("tasks")
    for task in plan["tasks"]:
        if wanted is not None and task["task"] not in wanted:
            continue
        results = {probe["id"]: run_probe(namespace, probe, chunks) for probe in task["probes"]}
        _write_atomically(f"result-{task['task']}.pt", lambda path: torch.save(results, path))


if __name__ == "__main__":
    main(sys.argv[1])
