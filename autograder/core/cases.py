"""The cases API: how a unit's hidden cases are built, and what they share. Instructor-only.

``build_cases(unit, seed)`` returns {task: [Case, ...]} in rubric order, each case
with a stable id ``<test>/<n>``. Expected outputs are computed here, on the trusted
side, from the unit's reference in ``solutions/``; none of it is sent to a
submission. Each task's cases are the module ``cases/<task>.py`` of its unit.

What every task's hidden cases share: the Case record and the checks.

A case is one probe (a call sent to the student's process) and one check
(run here, on the trusted side) that turns what came back into a verdict. A
check compares with the reference's output; when the output is wrong it also
runs the task's known mistakes on the same inputs and, if one of them gives
exactly the student's output, names it.
"""

import inspect
import random
import re
import weakref
from dataclasses import dataclass, field
from typing import Callable

import torch

from autograder.core.compare import _scalar_tolerance, first_wrong, mismatch, relation, torch_error_meaning
from autograder.core.contracts import same_designs
from autograder.core.voice import class_name, name_of, quote


@dataclass
class Verdict:
    passed: bool
    message: str = ""  # on a pass, an optional note (partial credit carried forward)
    mistake: str = ""  # on a failure, the known mistake that explains the whole output, when one does
    raised: bool = False  # on a failure, the call raised (or was not written)
    unnamed: str = ""  # the message without the mistake's name, for when other cases show it is not that one
    # Every known mistake that explains the whole output, ``mistake`` first, each with its message: on a case
    # where two mistakes give the same output (a query at position 0 hides which rotation went wrong), the test
    # names the one its other failing cases show too.
    explained: tuple = ()
    how: str = ""  # on a failure no known mistake explains, how the output relates to the right one (the grader's)
    first_wrong: tuple = None  # the index of the output's first wrong entry, where it has the right shape

    def explanations(self):
        """((mistake, message), ...) for every known mistake that explains the output; () where none does."""
        return self.explained or (((self.mistake, self.message),) if self.mistake else ())


@dataclass
class Case:
    test: str  # the rubric test this case belongs to
    label: str  # the call as the student would write it
    probe: dict  # sent to the worker (no expected value in it)
    check: Callable[[dict], Verdict]
    id: str = field(default="")
    # What sets this case apart, for telling under which condition a task fails (autograder/core/diagnosis.py):
    # {"lengths": "Lq > Lk", "dtype": "float64", "Lq": 5, ...}; numbers are sizes an error message may quote.
    features: dict = field(default_factory=dict)
    sizes: dict = field(default_factory=dict)  # {"Lq": 5, "Lk": 9}: to say which size an error message quotes
    scored: bool = True  # False: a probe for the diagnosis only, run with the others but worth no points


@dataclass
class Mistake:
    """A known wrong formulation: its output on the case's inputs, and what to tell the student."""

    explain: str
    output: Callable[[], torch.Tensor]  # computed only when needed


class Returned:
    """A stand-in for a non-tensor the student's function returned (the object stays in their process). Its
    ``type_name`` is as the feedback shows it (voice.class_name: a name the student's code gave is quoted)."""

    def __init__(self, type_name, text):
        self.type_name, self.text = type_name, text


def dtype_arg(dtype):
    """How a dtype travels in a probe (the worker turns it back into torch.<name>)."""
    return {"__dtype__": str(dtype).replace("torch.", "")}


def device_arg(device):
    """How a device travels in a probe (the worker turns it back into torch.device(<name>)): "meta" runs a function
    that takes device= where no GPU is, and tells whether it builds its tensors there."""
    return {"__device__": str(torch.device(device))}


def call_label(name, args=(), kwargs=None):
    def show(value):
        if isinstance(value, torch.Tensor):
            return f"<{str(value.dtype).replace('torch.', '')} tensor {tuple(value.shape)}>"
        if isinstance(value, dict) and "__dtype__" in value:
            return f"torch.{value['__dtype__']}"
        if isinstance(value, dict) and "__device__" in value:
            return f"torch.device({value['__device__']!r})"
        if isinstance(value, list):
            return f"[{', '.join(show(item) for item in value)}]"
        if isinstance(value, tuple):
            return f"({', '.join(show(item) for item in value)}{',' if len(value) == 1 else ''})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{key!r}: {show(item)}" for key, item in value.items()) + "}"
        return repr(value)

    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in (kwargs or {}).items()]
    return f"{name}({', '.join(parts)})"


def call_probe(name, args=(), kwargs=None, substitute=None, view=None):
    """A call of the student's ``name``; ``substitute`` swaps one of their helpers for a stand-in meanwhile;
    ``view`` names the function of the unit's job code (its ``VIEWS``) that makes the returned value one tensor."""
    probe = {"op": "call", "name": name, "args": list(args), "kwargs": dict(kwargs or {})}
    if substitute:
        probe["substitute"] = substitute
    if view:
        probe["view"] = view
    return probe


def passed(function, args, kwargs):
    """{parameter: value} of the arguments a call of ``function`` passes, by their names, defaults left out: how a
    cases module's ``check_at(args, kwargs)`` (the check at any call's inputs, for the self-checks' table of known
    mistakes: autograder/course/mistake_table.py) reads a call."""
    return dict(inspect.signature(function).bind(*args, **kwargs).arguments)


def lengths(length_q, length_k):
    """The feature that tells the lengths' relation, exactly: Lq < Lk, Lq == Lk or Lq > Lk (a mistake that
    swaps the lengths often fails one way only, and "Lq != Lk" would say less than the cases show)."""
    return "Lq < Lk" if length_q < length_k else "Lq == Lk" if length_q == length_k else "Lq > Lk"


def size_one(*sizes):
    """The feature that tells cases with an axis of length 1 (where squeeze() and friends bite)."""
    return "a size of 1" if 1 in sizes else "no size of 1"


def score_factors(head_dim, scale=None):
    """The constants a wrong score is often off by, named for the relation's sentence."""
    root = head_dim ** 0.5
    factors = {"sqrt(dh)": root, "1/sqrt(dh)": 1 / root, "dh": float(head_dim), "1/dh": 1 / head_dim}
    if scale is not None:
        factors = {"scale": scale, "1/scale": 1 / scale, "sqrt(dh) * scale": root * scale,
                   "1 / (sqrt(dh) * scale)": 1 / (root * scale), **factors}
    return {name: value for name, value in factors.items() if value != 1}


# --- reading what came back -------------------------------------------------------------

# What an exception from the student's code usually means, by the first (type, pattern in its message) that
# matches: a sentence that says where to look, after the student's own line. The last one matches anything.
EXCEPTION_LESSONS = (
    (("RuntimeError",), r"must match the size|size of tensor|shape .* is invalid|cannot be broadcast|mat1 and mat2|"
                        r"size mismatch|expanded size|doesn't match the broadcast shape|shapes? .* (?:cannot|can't)",
     "Two tensors' shapes do not line up at that line: write each one's shape beside it (as (B, H, Lq, Lk) and "
     "so on) for a call with different sizes on every axis, and see which axis is taken from the wrong place."),
    (("RuntimeError", "TypeError"), r"expected .*device|same device|\bmeta\b|cuda",
     "A tensor made on one device meets one on another: make every new tensor on the device of the inputs (or the "
     "device= asked for), e.g. torch.arange(n, device=x.device)."),
    (("RuntimeError", "TypeError"), r"dtype|scalar type|not implemented for '|result type|can't be cast|\bHalf\b|\bBFloat16\b",
     "Two tensors of different dtypes meet, or an operation refuses a dtype: keep the dtype the contract names "
     "(that of the inputs, or dtype= asked for) and convert integer positions with .to(dtype) before they mix."),
    (("IndexError",), r"",
     "An index runs past the end of an axis: check each index against the axis's length for a call whose lengths "
     "differ (Lq != Lk), and for a length of 1."),
    (("TypeError",), r"unexpected keyword argument|got multiple values|positional argument",
     "The call does not fit your function's signature: keep the parameter names, their order and which are "
     "keyword-only exactly as the stub gave them (the grader calls them as the docstring shows)."),
    (("TypeError",), r"",
     "A value is not of the type that line expects (a tensor where a number is needed, None where a value was "
     "meant, or the reverse): check what each argument can be in the docstring."),
    (("AttributeError",), r"",
     "That line asks a value for something it does not have: often a number where a tensor was meant, or None "
     "returned by an in-place method (x.add_ returns x, but list.sort returns None)."),
    (("ZeroDivisionError",), r"",
     "A division by zero: a size, a count or a scale can be 0 or 1 within the contract; handle that case."),
    (("ValueError",), r"",
     "Your function refused a call the contract allows: the arguments shown are valid, so raise ValueError only "
     "for what the docstring calls invalid."),
    (("AssertionError",), r"",
     "An assert of yours failed on a call the contract allows: the arguments shown are valid, so the assert's "
     "condition is stricter than the docstring."),
    ((), r"",
     "Your function stopped with this error before it returned: call it yourself with the arguments shown to see "
     "the whole traceback."),
)


def lesson_of(error):
    """The sentence that teaches what an exception from the student's code usually means (EXCEPTION_LESSONS)."""
    names = set(error.get("mro") or []) | {error.get("type", "")}
    for types, pattern, lesson in EXCEPTION_LESSONS:
        if (not types or names & set(types)) and re.search(pattern, error.get("message") or "", re.IGNORECASE):
            return lesson
    raise AssertionError("EXCEPTION_LESSONS ends with a lesson for every error")


def failure_of(outcome, name):
    """A message when the call did not return a value at all (missing, not implemented, raised), else None."""
    if outcome is None:
        return f"{name} did not run."
    if "missing" in outcome:
        return f"{name_of(outcome['missing'])} is not defined in your submission."
    if "error" in outcome:
        error = outcome["error"]
        if "NotImplementedError" in error["mro"]:
            return f"{name} is not implemented yet (it raised NotImplementedError)."
        return f"{name} raised {raised_text(error)}\n{lesson_of(error)}"
    return None


def raised_text(error):
    """An exception of the student's as the grader quotes it: its class, its message on one line in quotes (the
    student's text, which may hold anything), and the line of theirs it came from, on a line of its own."""
    message = f": {quote(error['message'])}" if error.get("message") else ""
    where = f"\n  (raised at {quote(error['where'])})" if error.get("where") else ""
    return f"{class_name(error['type'])}{message}{where}"


def returned_value(outcome):
    """The student's returned value: a plain tensor, or a Returned stand-in for anything else."""
    value = outcome["value"]
    if "tensor" in value:
        return value["tensor"]
    return Returned(class_name(value.get("type_name", "object")), value.get("repr", ""))


def device_of(outcome):
    return outcome["value"].get("device", "cpu")


# --- checks -------------------------------------------------------------------------------

def diagnose(got, mistakes, atol, rtol, right=()):
    """The explanation of the first known mistake that reproduces ``got`` exactly, else None."""
    return next(iter(explanations(got, mistakes, atol, rtol, right)), None)


def explanations(got, mistakes, atol, rtol, right=()):
    """The explanations of every known mistake that reproduces ``got`` exactly, in the order given.

    A mistake whose output on this case equals one of ``right`` (the right answers) explains nothing here, and
    is never named: on a table of one pair, the halves layout is the interleaved one.

    A tolerance given entry by entry (a tensor, shaped for the right answer) is used whole where it fits the output;
    against an output of another shape (a mistake that drops a row, say) its largest entry is used.
    """
    if not isinstance(got, torch.Tensor):
        return
    atol, rtol = _fitted(atol, got.shape), _fitted(rtol, got.shape)
    for mistake in mistakes:
        try:
            candidate = mistake.output()
        except Exception:
            continue
        if not isinstance(candidate, torch.Tensor) or candidate.shape != got.shape:
            continue
        if any(candidate.shape == answer.shape and mismatch(candidate.to(answer.dtype), answer, atol=atol, rtol=rtol,
                                                             check_dtype=False) is None for answer in right):
            continue
        if mismatch(got, candidate.to(got.dtype), atol=atol, rtol=rtol, check_dtype=False) is None:
            yield mistake.explain


def _fitted(tolerance, shape):
    """``tolerance`` where it broadcasts to ``shape`` (a number always does), else its largest entry."""
    if not isinstance(tolerance, torch.Tensor):
        return tolerance
    try:
        fits = torch.broadcast_shapes(tolerance.shape, shape) == torch.Size(shape)
    except RuntimeError:
        fits = False
    return tolerance if fits else _scalar_tolerance(tolerance)


def _right_but_for_the_form(got, expected, atol, rtol):
    """A sentence when ``got`` holds the right values, in order, and only its dtype or shape is wrong; else None."""
    if not isinstance(got, torch.Tensor) or got.numel() != expected.numel():
        return None
    same = got.to(expected.dtype) if expected.is_floating_point() or not got.is_floating_point() else got
    coarser = (got.is_floating_point() and expected.is_floating_point()
               and torch.finfo(got.dtype).eps > torch.finfo(expected.dtype).eps)
    if coarser:  # a float16 result where float32 is asked, say: its values are compared at its own precision
        eps = torch.finfo(got.dtype).eps
        finite = expected[torch.isfinite(expected)]
        largest = float(finite.abs().max()) if finite.numel() else 0.0
        atol, rtol = (torch.clamp(tol, min=floor) if isinstance(tol, torch.Tensor) else max(tol, floor)
                      for tol, floor in ((atol, 4 * eps * largest), (rtol, 4 * eps)))
    if mismatch(same.reshape(expected.shape), expected, atol=atol, rtol=rtol, check_dtype=False) is not None:
        return None
    if got.shape != expected.shape:
        return (f" The values are right, in the right order: only the shape differs (a reshape, or a dimension "
                f"of size 1 {'too many' if got.dim() > expected.dim() else 'missing or misplaced'}).")
    if coarser:
        return (f" The values are right to {str(got.dtype).replace('torch.', '')}'s precision: only the dtype "
                f"differs, and with it the precision the contract asks for.")
    return " The values are right: only the dtype differs."


def _right_to_float32_only(got, expected):
    """A sentence when a float64 ``got`` holds the right values to float32's precision only, else None: somewhere a
    float32 step lost the rest (a float32 constant, a .float(), a float32 buffer)."""
    if not (isinstance(got, torch.Tensor) and got.dtype == expected.dtype == torch.float64
            and got.shape == expected.shape and expected.numel()):
        return None
    eps = torch.finfo(torch.float32).eps
    finite = expected[torch.isfinite(expected)]
    largest = float(finite.abs().max()) if finite.numel() else 0.0
    if mismatch(got, expected, atol=4 * eps * largest, rtol=4 * eps, check_dtype=False) is not None:
        return None
    return (" The values are right to float32's precision only: with float64 inputs the result keeps float64's, so "
            "somewhere on the way a step is in float32 (a .float(), a float32 constant or buffer); compute in the "
            "inputs' dtype.")


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


def _argument(where, names):
    """How the sentence names one place the worker reported (see worker._copies): a position, a keyword's name, or
    a path inside a positional ("args[1][0]") or keyword ("slopes[2]") argument."""
    def positional(index):
        return (f"its {ORDINALS[index] if index < len(ORDINALS) else f'argument {index + 1}'} argument"
                + (f" ({names[index]})" if names and index < len(names) else ""))

    if isinstance(where, int):
        return positional(where)
    inside = re.fullmatch(r"args\[(\d+)\](\[.*\])", where)
    if inside:
        return f"the tensor at {inside[2]} in {positional(int(inside[1]))}"
    keyword = re.fullmatch(r"([A-Za-z_]\w*)(\[.*\])?", where)
    if keyword and keyword[2]:
        return f"the tensor at {keyword[2]} in its keyword argument {keyword[1]}"
    return f"its keyword argument {where}"


def changed_inputs(outcome, label, names=None):
    """A sentence when the call changed one of its input tensors in place (the worker says which, positional or
    keyword, top level or inside a list, tuple or dict), else "". ``names`` names the positional arguments."""
    changed = (outcome or {}).get("changed") or []
    if not changed:
        return ""
    said = [_argument(where, names) for where in changed]
    listed = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"
    return (f"{label} changed {listed} in place. A function must leave its inputs as they were: its "
            "caller still uses them (the same q serves every head's scores, the same x the next layer). Compute "
            "into a new tensor: q * scale rather than q *= scale or q.mul_(scale), x + rows rather than x += rows.")


def _meta_meaning(message):
    """What an error on the meta device means: torch_error_meaning's words for it (a tensor copied off the device,
    one of another device met, values read), else the meta device's rule."""
    return torch_error_meaning(message) or (
        "On the meta device a tensor has a shape and a dtype but no values, so reading values back (.item(), "
        ".tolist(), .numpy(), float(t), if t.any()) fails there. Build the result with torch operations on the "
        "device asked for, and do any arithmetic on plain numbers in Python.")


def computed_on_the_cpu(function, *args, **kwargs):
    """What the reference's ``function`` returns for a call on the meta device, computed on the CPU: each meta tensor
    given becomes zeros of its shape and dtype there, and a device "meta" the CPU. A meta case checks the output's
    shape and dtype (device_check), which are the same on every device.

    Why not on the meta device: torch's first operation there imports torch._dynamo (its decompositions wrap their
    functions to keep the compiler out), about a second of CPU, and the grader would pay it in every process that
    grades (a command, an nbgrader run, each Gradescope container) to build its cases. The jobs' server makes that
    import once, before it forks them, for the student's code on the meta device.
    """
    def on_the_cpu(value):
        if isinstance(value, torch.Tensor):
            return torch.zeros(value.shape, dtype=value.dtype) if value.is_meta else value
        if isinstance(value, torch.device) and value.type == "meta" or isinstance(value, str) and value == "meta":
            return torch.device("cpu")
        return value

    return function(*map(on_the_cpu, args), **{name: on_the_cpu(value) for name, value in kwargs.items()})


def device_check(label, expected_device, expected_shape, expected_dtype, inputs=None):
    """A check that the call returned a tensor on ``expected_device`` (the meta device, say, which holds no data:
    so no values are compared) of ``expected_shape`` and ``expected_dtype``: type, then device, shape, dtype.
    ``inputs`` names the call's positional arguments, as for tensor_check."""
    expected_device = str(torch.device(expected_device))
    expected_shape = tuple(expected_shape)

    def check(outcome):
        error = (outcome or {}).get("error")
        if expected_device == "meta" and error and re.search(r"\bmeta\b", error["message"], re.IGNORECASE):
            # Not "not implemented yet" (the meta device's refusal is a NotImplementedError): say what it means.
            return Verdict(False, f"{label} raised {raised_text(error)}\n{_meta_meaning(error['message'])}",
                           raised=True)
        failed = failure_of(outcome, label)
        if failed:
            return Verdict(False, failed, raised=outcome is not None and "missing" not in outcome)
        value = outcome["value"]
        if "tensor" in value:
            shape, dtype = tuple(value["tensor"].shape), value["tensor"].dtype
        elif "shape" in value:  # a tensor without data (worker._described)
            shape, dtype = tuple(value["shape"]), getattr(torch, value["dtype"])
        else:
            shown = class_name(value.get("type_name", "object"))
            return Verdict(False, f"{label} should be a torch.Tensor, but it is a {shown}.")
        device = device_of(outcome)
        if device != expected_device:
            return Verdict(False, f"{label} returned a tensor on {device}, expected {expected_device}: build new "
                                  "tensors on the device asked for, device=... (torch.arange(n, device=device), not "
                                  "torch.arange(n)): a table made on the CPU is copied to the GPU at every call.")
        if shape != expected_shape:
            return Verdict(False, f"{label} has shape {shape}, expected {expected_shape}.")
        if dtype != expected_dtype:
            return Verdict(False, f"{label} has dtype {dtype}, expected {expected_dtype}.")
        changed = changed_inputs(outcome, label, inputs)
        return Verdict(False, changed) if changed else Verdict(True)

    check.expected_dtype, check.expected_device = expected_dtype, expected_device  # for a reader (core/form_slips.py)
    return check


def tensor_check(label, expected, *, atol=1e-5, rtol=1e-5, mistakes=(), expected_device="cpu",
                 also_accept=None, axes=None, factors=None, coordinates=None, advice=(), terms=None,
                 also_terms=None, inputs=None):
    """A check that the call returned ``expected`` (same dtype and shape, values within tolerance).

    ``also_accept`` is a second right answer: what the task should return when it
    calls its helper and the helper is the grader's stand-in (see worker.STAND_INS).
    When no known mistake explains a wrong output, ``compare.relation`` says how it relates to the right one
    (``axes``, ``factors``, ``coordinates`` and ``terms``, with ``also_terms`` those of ``also_accept``, name
    what it may quote); ``advice``, ``(pattern, words)`` pairs,
    adds what such a relation usually means where the pattern matches its sentence. ``inputs`` names the
    call's arguments, for saying which one the call changed in place (a failure even when the values are right).
    """

    def check(outcome):
        failed = failure_of(outcome, label)
        if failed:
            return Verdict(False, failed, raised=outcome is not None and "missing" not in outcome)
        got = returned_value(outcome)
        problem = mismatch(got, expected, what=f"{label}", atol=atol, rtol=rtol)
        changed = changed_inputs(outcome, label, inputs)
        right_but_changed = Verdict(False, changed.replace(" changed", " returns the right values, but it changed",
                                                           1)) if changed else Verdict(True)
        if problem is None:
            device = device_of(outcome)
            if device != expected_device:
                return Verdict(False, f"{label} returned a tensor on {device}, expected {expected_device}: "
                                      "build new tensors on the input's device (device=...).")
            return right_but_changed
        if also_accept is not None and mismatch(got, also_accept, atol=atol, rtol=rtol) is None:
            return right_but_changed
        if also_accept is not None and _nearer(got, also_accept, expected, atol, rtol):
            # Told against the answer it is near: the stand-in's, with what that is (a function that calls its
            # helper, told against the reference's values, would read "expected 1, got 0.21" for a slip of 1e-5).
            problem = mismatch(got, also_accept, what=f"{label}", atol=atol, rtol=rtol) + (
                "\n(Expected here: what this function gives when it calls its helper right, with the grader's "
                "stand-in in the helper's place while this task is graded, so that only this task's own work "
                "counts.)")
        right = [expected] + ([also_accept] if also_accept is not None else [])
        form = next(filter(None, (_right_but_for_the_form(got, answer, atol, rtol) for answer in right)), None)
        if form:  # no mistake of value to name
            return Verdict(False, problem + form)
        found = list(dict.fromkeys(explanations(got, mistakes, atol, rtol, right)))
        precision = None if found else next(filter(None, (_right_to_float32_only(got, answer) for answer in right)), None)
        if precision:  # right but for a float32 step: no relation of values to tell
            return Verdict(False, problem + precision)
        answers = [(expected, terms)] + ([(also_accept, also_terms)] if also_accept is not None else [])
        how = next(filter(None, (relation(got, answer, atol=atol, rtol=rtol, axes=axes, factors=factors,
                                          coordinates=coordinates, terms=parts)
                                 for answer, parts in reversed(answers))), None)
        meaning = " ".join(words for pattern, words in advice if how and re.search(pattern, how))
        also = f"\nAlso: {changed}" if changed else ""
        how = how and how + (f" {meaning}" if meaning else "")
        told = (f"{problem}\nHow it goes wrong: {how}" if how else problem) + also
        index = first_wrong(got, next((answer for answer in right if isinstance(got, torch.Tensor)
                                       and answer.shape == got.shape), expected), atol=atol, rtol=rtol)
        if found:
            named = tuple((explanation, f"{problem}\n{likely((explanation,))}{also}") for explanation in found)
            return Verdict(False, named[0][1], mistake=found[0], unnamed=told, explained=named, how=how or "",
                           first_wrong=index)
        return Verdict(False, told, how=how or "", first_wrong=index)

    # What the check holds, for tools that read a unit's cases (check-unit: is each declared mistake caught?).
    check.expected, check.mistakes, check.atol, check.rtol = expected, tuple(mistakes), atol, rtol
    check.axes, check.coordinates, check.advice = axes, dict(coordinates or {}), tuple(advice)
    check.also_accept = also_accept
    return check


def likely(explanations):
    """The line that names a mistake ("Likely mistake: ..."), and after it every other mistake that gives the same
    output on every case that fails: none of them is then THE mistake. (Readers take the mistakes from the test's
    Diagnosis, never from these lines: see autograder/core/voice.py.)"""
    first, *others = explanations
    return f"Likely mistake: {first}" + "".join(f"\nOr, with exactly this output on every case that fails: {other}"
                                                for other in others)


def _nearer(got, this, that, atol, rtol):
    """Whether ``got`` is nearer ``this`` than ``that`` (two right answers of its shape), in tolerances: the mean
    over the entries of |got - answer| / (atol + rtol |answer|)."""
    if not all(isinstance(x, torch.Tensor) and x.is_floating_point() and x.shape == got.shape and x.device.type != "meta"
               for x in (got, this, that)):
        return False

    def distance(answer):
        gap = (got.double() - answer.double()).abs() / (atol + rtol * answer.double().abs())
        return float(gap.nan_to_num(nan=float("inf")).mean())

    return distance(this) < distance(that)


def raises_check(label, exception="ValueError", why="", must_mention=()):
    """A check that the call raised ``exception`` (a subclass counts), naming each of ``must_mention``."""

    def check(outcome):
        if outcome is None or "missing" in outcome:
            return Verdict(False, failure_of(outcome, label))
        if "error" in outcome:
            error = outcome["error"]
            if "NotImplementedError" in error["mro"]:
                return Verdict(False, failure_of(outcome, label))
            if exception not in error["mro"]:
                return Verdict(False, f"{label} should raise {exception}{why}, but it raised {raised_text(error)}"
                                      f"\nRaise {exception} itself, with a message that says which "
                                      f"value is wrong: a caller that catches {exception} does not catch "
                                      f"{class_name(error['type'])} (an assert raises AssertionError, and is skipped "
                                      "altogether under python -O).")
            absent = [str(v) for v in must_mention if not re.search(rf"(?<!\d){re.escape(str(v))}(?!\d)", error["message"])]
            if absent:
                return Verdict(False, f"{label} raised {exception} as it should, but its message "
                                      f"{quote(error['message'])} does not mention {' and '.join(absent)}: "
                                      "say which values are in conflict, so the user can fix the call.")
            return Verdict(True)
        got = returned_value(outcome)
        shown = (f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor)
                 else f"a {got.type_name}")
        return Verdict(False, f"{label} should raise {exception}{why}, but it returned {shown}.")

    check.raises = exception  # what it wants, for a reader of the case (core/form_slips.py)
    return check

def hints_of(unit, task):
    """What a task's conditions of failure usually mean: its module's ``HINTS`` (see diagnosis.condition)."""
    return getattr(unit.cases_module(task), "HINTS", {})


# {unit: {contract: its design}}: the designs of each unit's shared seed, which every seed's cases hold.
_SHARED_DESIGNS = weakref.WeakKeyDictionary()


def shared_designs(unit):
    """{contract: rows} of ``unit``'s shared seed: the design of every seed's cases (contracts.same_designs)."""
    if unit not in _SHARED_DESIGNS:
        build_cases(unit)
    return _SHARED_DESIGNS[unit]


def build_cases(unit, seed=None):
    """{task: [Case]}: the hidden cases of ``unit`` at ``seed`` (default: the shared seed, ``rubric.SEED``).

    Every seed's contract cases hold the rows of the shared seed's designs (``shared_designs``), with values
    drawn from their own seed: the shared seed's cases are what they would be drawn alone, and every student's
    own seed sends the same combinations of levels."""
    shared = unit.rubric.SEED
    seed = shared if seed is None else seed
    store = _SHARED_DESIGNS.get(unit)
    if store is None:  # the shared seed's cases, built first, draw the designs
        store = {}
        with same_designs(store):
            cases = _build_cases(unit, shared)
        _SHARED_DESIGNS[unit] = store
        if seed == shared:
            return cases
    with same_designs(store):
        return _build_cases(unit, seed)


def _build_cases(unit, seed):
    rubric = unit.rubric
    by_task = {}
    for number, task in enumerate(rubric.TASK_NAMES):
        module = unit.cases_module(task)
        rng = random.Random(f"{seed}:{task}")
        generator = torch.Generator().manual_seed(seed * 100 + number)
        cases = module.build(rng, generator)
        behaviour = getattr(module, "BEHAVIOUR", None)  # its behaviour contract (autograder/core/behaviour.py)
        if behaviour is not None:
            cases += behaviour.cases(unit, task, seed)
        counts, probes = {}, {}
        for case in cases:
            if case.scored:
                counts[case.test] = counts.get(case.test, 0) + 1
                case.id = f"{case.test}/{counts[case.test]}"
            else:  # a probe for the diagnosis: numbered apart, so the scored cases keep their ids
                probes[case.test] = probes.get(case.test, 0) + 1
                case.id = f"{case.test}/probe{probes[case.test]}"
            case.probe["id"] = case.id
        known = {test.id for test in rubric.tests_of(task)}
        if set(counts) != known:
            raise RuntimeError(f"cases of {task} do not match the rubric: without cases {sorted(known - set(counts))}, "
                               f"not in the rubric {sorted(set(counts) - known)}")
        # The calls-are-independent case runs first of the task's: a cache it catches is then filled by its own calls.
        by_task[task] = sorted(cases, key=lambda case: getattr(case, "contract", None) != "independent calls")
    return by_task
