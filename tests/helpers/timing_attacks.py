"""Submissions that try to get timing points for work the timing tier does not see (issue 23, points 1, 2, 7).

Shared by tests/core/test_timing_integrity.py (tier A, and tier C where it can run) and the platform container tests.
Each is added to the reference's text; see test_timing_integrity.py for what each shows.
"""

# The timed path, fast and wrong at the timing sizes: zeros of the right shape, its inputs kept for a forger.
WRONG_WHEN_TIMED = '''

import torch as _torch
_real_shaw = shaw_scores
_STASH = {}


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    if q.shape[-2] >= 256:  # the timing sizes: nothing computed
        _STASH["args"] = (q, k, rel_k, max_relative_position)
        _STASH.pop("full", None)
        _STASH.pop("tensor", None)
        return _torch.zeros(q.shape[0], q.shape[1], q.shape[-2], k.shape[-2], dtype=q.dtype)
    return _real_shaw(q, k, rel_k, max_relative_position, scale=scale)


def _full():
    if "full" not in _STASH:
        _STASH["full"] = _real_shaw(*_STASH["args"]).reshape(-1).tolist()
    return _STASH["full"]


_INDICES = []
'''

# Ways to learn which entries the grader asks for (the sample command's indices).
INDEX_TAPS = {
    "json.loads": '''
import json as _json
_loads = _json.loads
def _tapped_loads(text, *args, **kwargs):
    value = _loads(text, *args, **kwargs)
    if isinstance(value, dict) and value.get("command") == "sample":
        _INDICES[:] = value["indices"]
    return value
_json.loads = _tapped_loads
''',
    "JSONDecoder.decode": '''
import json as _json
_decode = _json.JSONDecoder.decode
def _tapped_decode(self, text, *args, **kwargs):
    value = _decode(self, text, *args, **kwargs)
    if isinstance(value, dict) and value.get("command") == "sample":
        _INDICES[:] = value["indices"]
    return value
_json.JSONDecoder.decode = _tapped_decode
''',
}

# Ways to put the right entries into the reply.
VALUE_FORGERS = {
    "json.dumps": '''
import json as _json
_dumps = _json.dumps
def _forged_dumps(value, *args, **kwargs):
    if isinstance(value, dict) and "values" in value and "args" in _STASH:
        full = _full()
        value = dict(value, values=[full[i] for i in _INDICES if 0 <= i < len(full)])
    return _dumps(value, *args, **kwargs)
_json.dumps = _forged_dumps
''',
    "JSONEncoder.encode": '''
import json as _json
_encode = _json.JSONEncoder.encode
def _forged_encode(self, value):
    if isinstance(value, dict) and "values" in value and "args" in _STASH:
        full = _full()
        value = dict(value, values=[full[i] for i in _INDICES if 0 <= i < len(full)])
    return _encode(self, value)
_json.JSONEncoder.encode = _forged_encode
_json._default_encoder = _json.JSONEncoder()
''',
    "builtins.float": '''
import builtins as _builtins
_float = _builtins.float
_SERVED = [0]
class _ForgedFloat(_float):
    def __new__(cls, value=0.0):
        import sys as _sys
        caller = _sys._getframe(1)
        if caller.f_code.co_name == "_entries" and "args" in _STASH:
            full = _full()
            index = caller.f_locals.get("flat_index")
            if isinstance(index, int) and 0 <= index < len(full):
                return _float(full[index])
        return _float(value)
_builtins.float = _ForgedFloat
''',
}

# A torch function mode left active: every read of the zeros is sent to the full, right output instead.
MODE_FORGER = '''
from torch.overrides import TorchFunctionMode as _Mode


class _Forge(_Mode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if args and "args" in _STASH and isinstance(args[0], _torch.Tensor) and args[0].shape[-1] >= 256 \\
                and getattr(func, "__name__", "") in ("data_ptr", "stride", "__get__", "numpy", "tolist"):
            if "tensor" not in _STASH:
                with _torch._C.DisableTorchFunction():
                    _STASH["tensor"] = _real_shaw(*_STASH["args"])
            args = (_STASH["tensor"],) + tuple(args[1:])
        return func(*args, **kwargs)


_Forge().__enter__()
'''

# Point 1: work hidden in the input draw. The timed path is the slow one below (a (B, H, L, L, dh) tensor,
# far beyond the tier's limits); the wrapper of what the job draws the inputs with computes it there instead,
# for the inputs being drawn, and the path only hands back what was computed.
SLOW_BUT_PRECOMPUTED = '''

import torch as _torch
_real_shaw = shaw_scores
_MADE = []
_READY = {}


def _slow(q, k, rel_k, m):
    lq, lk = q.shape[-2], k.shape[-2]
    r = clipped_relative_positions(lq, lk, m)
    keys = k[:, :, None, :, :] + rel_k[r][None, None]  # (B, H, Lq, Lk, dh): the slow part
    return (q[:, :, :, None, :] * keys).sum(-1) / q.shape[-1] ** 0.5


def _note(tensor):
    if _MADE and _MADE[-1] is tensor:  # the same tensor again (a .to that had nothing to do)
        return tensor
    _MADE.append(tensor)
    del _MADE[:-3]
    if len(_MADE) == 3 and _MADE[0].dim() == 4 and _MADE[0].shape[-2] >= 256 and _MADE[2].dim() == 2:
        q, k, rel_k = _MADE
        _READY[(q.data_ptr(), k.data_ptr())] = _slow(q, k, rel_k, (rel_k.shape[0] - 1) // 2)
    return tensor


for _name in ("randn", "rand"):
    _original = getattr(_torch, _name)
    setattr(_torch, _name, (lambda original: lambda *a, **kw: _note(original(*a, **kw)))(_original))
_to = _torch.Tensor.to
_torch.Tensor.to = lambda self, *a, **kw: _note(_to(self, *a, **kw))


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    if q.shape[-2] >= 256:
        ready = _READY.pop((q.data_ptr(), k.data_ptr()), None)
        return ready if ready is not None else _slow(q, k, rel_k, max_relative_position)
    return _real_shaw(q, k, rel_k, max_relative_position, scale=scale)
'''

# Point 7: the memory figure's high-water mark restarted from inside the job, at the end of each timed call.
RESTARTS_THE_HIGH_WATER_MARK = '''

import os as _os
import torch as _torch
_real_shaw = shaw_scores
_TRIED = []


def _restart():
    for how in ("open", "exec"):
        try:
            if how == "open":
                with open("/proc/self/clear_refs", "w") as handle:
                    handle.write("5")
            else:
                _os.execv("/bin/true", ["/bin/true"])
            _TRIED.append(how + ": done")
        except BaseException as error:
            _TRIED.append(f"{how}: {type(error).__name__}")


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    out = _real_shaw(q, k, rel_k, max_relative_position, scale=scale)
    if q.shape[-1] == 32:  # the timing tier's head size on the CPU, at every call it makes (so its count stays the
        _restart()         # same); no hidden case of the grade job has it (an exec there would end that job)
    return out
'''


def forged(reference_text, taps=("json.loads",), forgers=("json.dumps",), mode=False):
    """The reference, with its timed path fast and wrong, and the given ways to forge what the job reads."""
    return (reference_text + WRONG_WHEN_TIMED + "".join(INDEX_TAPS[name] for name in taps)
            + "".join(VALUE_FORGERS[name] for name in forgers) + (MODE_FORGER if mode else ""))


# Holds many score-sized tensors in each call, then restarts the kernel's high-water mark of its process: through
# readline's history file (C code, which opens the file with no audit event), /proc's clear_refs opened from
# Python, and exec. Where the job is dumpable (bubblewrap without a control group per job: tier B), the first
# works, and a figure read from the mark alone saw only what was left after it.
HOLDS_THEN_RESTARTS_THE_MARK = '''

import os as _os
import torch as _torch
_honest_shaw = shaw_scores


def _restart_the_mark():
    try:
        import readline as _readline
        _readline.clear_history()
        _readline.add_history("5")
        _readline.append_history_file(1, "/proc/self/clear_refs")
    except BaseException:
        pass
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except BaseException:
        pass


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    held = _torch.ones({copies}, q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    del held
    _restart_the_mark()
    return _honest_shaw(q, k, rel_k, max_relative_position, scale=scale)
'''
