"""Names for a task whose values are right and whose form is not: an input changed in place, a result's dtype
that follows another rule than the reference's, or arguments refused where the reference answers (or the other
way round).

The error model (core/mutants.py) names a failure by an edit of the reference that gives the student's outputs.
A slip of form often has no such edit: a student who computes in float64 throughout, or who keeps the integer
dtype of the positions, writes a function the reference's text is far from, and yet the cases show exactly what
is wrong. These names come from the outcomes alone, through five questions asked of every failing case:

* **In place.** Does the case pass once the inputs the call changed are forgotten? Then the only fault is that
  change: "your function changes `q` and `k` in place: the values it returns are right".
* **Dtype.** Does the case pass once the result is cast to the reference's dtype (or hold the reference's values
  to its own, coarser dtype's precision, as the check tells it)? Then the rule the student's dtype follows is
  read off every case that returned a tensor (passing ones too): one input's dtype, always one dtype, or one
  input's dtype raised to float32 from half precision, or kept where floating and float32 from integers. It is named only where one such rule holds on every case
  and differs from the reference's: "your result's dtype is always float64, where the reference's is `q`'s and
  `k`'s dtype: the values are right".
* **Device.** Does the task fail on the meta device only, and pass on real tensors? Then a tensor it makes is
  on the CPU, not on the inputs' device (a result elsewhere, or an error of devices), or it reads values (an
  error of a meta tensor's missing data).
* **Layout.** Does every failing result hold the reference's values laid out otherwise (its axes in another
  order; the memory order of another order, reshaped; a last axis in halves where the reference interleaves
  pairs, or the other way round; repeated along an axis)? Then that layout, the one that moves the fewest axes
  where several fit. (The right order in another shape is not named here: the check says "only the shape
  differs".)
* **Refusals.** Does every failing call raise the exception the check wants, with a message short of the values
  in conflict? Then that is the name. Does every failing call return a result where the check wants an exception
  (or raise ValueError where the reference answers)? Then the kinds of number those calls pass (NaN, infinite, zero, negative, between
  0 and 1, odd: never the values, which are the hidden cases') that no call of the other side passes: "your
  function returns a result where it should raise ValueError: for `factor` NaN or infinite, ...".

Each is named only where it explains every failing case of the tests it is asked about. The grader asks the
error model first (an edit of a line says more), and these where it finds nothing; like the model, they add words
and never change points.
"""

import itertools
import math
import re

import torch

from autograder.core.cases import _argument, _right_but_for_the_form
from autograder.core.compare import _axis_names, _close, _scalar_tolerance, _the_axis
from autograder.core.mutants import passes as _passes, student_verdicts

SEQUENCE_OPS = ("sequence", "module")  # the behaviour contracts' and the modules' probes: their checks name their own


def _place(where, names):
    """An input the worker saw changed, by its parameter's name where it has one (a tensor passed by position in
    one case and by keyword in another is one input)."""
    if isinstance(where, int) and where < len(names):
        return f"`{names[where]}`"
    if isinstance(where, str) and where.isidentifier():
        return f"`{where}`"
    return _argument(where, names)


def _changed(failing, outcomes, names):
    """The inputs the failing calls changed in place, by their parameters' names: "`q`", "`q` and `k`"."""
    said = list(dict.fromkeys(_place(where, names.get(case.probe.get("name"), ()))
                              for case, outcome in zip(failing, outcomes) for where in outcome["changed"]))
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"


def _without_changes(outcome):
    return {key: value for key, value in outcome.items() if key != "changed"}


def _dtype_of(outcome):
    """The dtype of a returned tensor (one with values, or a meta tensor's description), else None."""
    value = (outcome or {}).get("value")
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("tensor"), torch.Tensor):
        return value["tensor"].dtype
    found = getattr(torch, str(value.get("dtype", "")), None) if "shape" in value else None
    return found if isinstance(found, torch.dtype) else None


def _retyped(outcome, dtype):
    """``outcome`` with its tensor cast to ``dtype`` (a meta tensor's description says the dtype instead)."""
    value = dict(outcome["value"])
    if isinstance(value.get("tensor"), torch.Tensor):
        value["tensor"] = value["tensor"].to(dtype)
    else:
        value["dtype"] = str(dtype).replace("torch.", "")
    return {**outcome, "value": value}


def _right_to_its_precision(case, outcome):
    """Whether a floating result of a lower precision than the reference's holds the reference's values to its own
    dtype's precision, as the check tells it (cases._right_but_for_the_form)."""
    expected = getattr(case.check, "expected", None)
    got = (outcome.get("value") or {}).get("tensor")
    if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor) and got.shape == expected.shape):
        return False
    atol, rtol = getattr(case.check, "atol", 1e-5), getattr(case.check, "rtol", 1e-5)
    return _right_but_for_the_form(got, expected, atol, rtol) is not None


def _expected_dtype(case):
    expected = getattr(case.check, "expected", None)
    if isinstance(expected, torch.Tensor):
        return expected.dtype
    dtype = getattr(case.check, "expected_dtype", None)
    return dtype if isinstance(dtype, torch.dtype) else None


def _shown(dtype):
    return str(dtype).replace("torch.", "")


def _input_dtypes(case, names):
    """{parameter name: dtype} of the case's tensor arguments."""
    names = names.get(case.probe.get("name"), ())
    found = {}
    for index, value in enumerate(case.probe.get("args") or ()):
        if isinstance(value, torch.Tensor):
            found[names[index] if index < len(names) else f"argument {index + 1}"] = value.dtype
    for key, value in (case.probe.get("kwargs") or {}).items():
        if isinstance(value, torch.Tensor):
            found[key] = value.dtype
    return found


def _rule(observed):
    """The rule that ``observed`` ([(dtype, {input: dtype})]) follows: "always float64", "`q`'s dtype"; or None
    where no one rule holds on every case. A rule that two cases or more tell apart from the others is preferred:
    a constant over cases that all share one dtype says nothing of the inputs."""
    if not observed:
        return None
    dtypes = {dtype for dtype, _ in observed}
    inputs = [name for name in observed[0][1] if all(name in given for _, given in observed)]
    followed = [name for name in inputs if all(given[name] == dtype for dtype, given in observed)]
    varied = {dtype for _, given in observed for dtype in given.values()}
    if followed and len({given[followed[0]] for _, given in observed}) > 1:
        return " and ".join(f"`{name}`'s" for name in followed[:2]) + " dtype"
    if len(dtypes) == 1 and len(varied) > 1:
        return f"always {_shown(next(iter(dtypes)))}"
    wide = [name for name in inputs if all(dtype == (torch.float64 if given[name] == torch.float64 else torch.float32)
                                           for dtype, given in observed)]
    if wide and len(dtypes) > 1:
        return f"float64 where `{wide[0]}` is float64, else float32"
    kept = [name for name in inputs if all(dtype == (given[name] if given[name].is_floating_point else torch.float32)
                                           for dtype, given in observed)]
    if kept and len(dtypes) > 1 and any(not given[kept[0]].is_floating_point for _, given in observed):
        return f"`{kept[0]}`'s dtype where it is floating, else float32 (torch's division of integers)"
    lifted = [name for name in inputs if all(given[name].is_floating_point and
                                             torch.promote_types(given[name], torch.float32) == dtype
                                             for dtype, given in observed)]
    if lifted and len(dtypes) > 1:  # half precision raised to float32, the others kept
        return f"`{lifted[0]}`'s dtype, but float32 where `{lifted[0]}` is float16 or bfloat16"
    return None


def _kinds(value):
    """The kinds of a number an argument check is about (no value itself: the kinds only): NaN, infinite, zero,
    negative, between 0 and 1, odd."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return set()
    if value != value:
        return {"NaN"}
    if value in (math.inf, -math.inf):
        return {"infinite"}
    kinds = {"zero"} if value == 0 else {"negative"} if value < 0 else set()
    if isinstance(value, float) and 0 < value < 1:
        kinds.add("between 0 and 1")
    if isinstance(value, int) and value % 2:
        kinds.add("odd")
    return kinds


def _argument_kinds(case, names):
    """{(parameter, kind)} of the case's number arguments."""
    names = names.get(case.probe.get("name"), ())
    found = set()
    for index, value in enumerate(case.probe.get("args") or ()):
        name = names[index] if index < len(names) else f"argument {index + 1}"
        found |= {(name, kind) for kind in _kinds(value)}
    for key, value in (case.probe.get("kwargs") or {}).items():
        found |= {(key, kind) for kind in _kinds(value)}
    return found


def _listed(pairs):
    by_name = {}
    for name, kind in sorted(pairs):
        by_name.setdefault(name, []).append(kind)
    return "; ".join(f"`{name}` {' or '.join(kinds)}" for name, kinds in by_name.items())


def _step(outcome):
    """The outcome of a call, or of a module's last step that ran (its forward, else its __init__)."""
    outcome = outcome if isinstance(outcome, dict) else {}
    if "init" in outcome:
        return outcome.get("forward") if isinstance(outcome.get("forward"), dict) else outcome["init"]
    return outcome


_OFF_THE_DEVICE = re.compile(r"copy out of meta|same device|device type|on device|devices", re.IGNORECASE)
_VALUES_READ = re.compile(r"item\(\)|tolist|numpy|data-dependent|cannot be called on meta|no data", re.IGNORECASE)


def _meta_slip(outcomes):
    """The name of a task right on real tensors and wrong on the meta device only, by what every failing call did:
    returned a tensor on another device or met one (a tensor made on the CPU), or read values (none there)."""
    values = [(outcome.get("value") or {}) for outcome in outcomes]
    messages = [((outcome.get("error") or {}).get("message") or "") for outcome in outcomes]
    if all(value and value.get("device", "cpu") != "meta" for value in values) or all(
            "error" in outcome and _OFF_THE_DEVICE.search(message) and not _VALUES_READ.search(message.replace(
                "copy out of meta tensor; no data", "")) for outcome, message in zip(outcomes, messages)):
        return ("a tensor your function makes is on the CPU, not on the inputs' device: it works on CPU inputs and "
                "fails on the meta device's (torch.arange(n) without device=..., or .to(t.device) of such a tensor)")
    if all("error" in outcome and _VALUES_READ.search(message) for outcome, message in zip(outcomes, messages)):
        return ("your function reads a tensor's values into Python (.item(), .tolist(), float(t), if t: ...): it works "
                "on CPU inputs and fails on the meta device's, which have a shape and no values")
    return None


def _refusals(cases, results, failing, names, passed):
    """Where every failing case is a refusal the other way round: a result where the reference raises (the check
    wants an exception), or an exception where the reference returns one; named by the kinds of the numbers the
    failing calls pass that no call of the other side passes (a check is about those), else None."""
    calls = [case for case in cases if case.probe.get("op", "call") == "call"]
    returning = [case for case in calls if not getattr(case.check, "raises", None)]

    def kinds_of(group):
        return set().union(*(_argument_kinds(case, names) for case in group)) if group else set()

    if all(getattr(case.check, "raises", None) and case.check.raises in
           ((_step(results[case.id]).get("error") or {}).get("mro") or ()) for case in failing):
        # The right exception, and a message the check finds short of the values in conflict.
        return (f"your {failing[0].check.raises}'s message does not give the values in conflict: the check reads "
                "them there (say which argument is wrong, and its value)")
    def other_error(case):  # the type of the exception a call raised in place of the one its check wants
        error = _step(results[case.id]).get("error") or {}
        return error.get("type") if error and case.check.raises not in (error.get("mro") or ()) else None

    if all(getattr(case.check, "raises", None) and ("value" in (results[case.id] or {}) or other_error(case))
           for case in failing) and len({case.check.raises for case in failing}) == 1:
        # Not refused as the reference refuses: a result, or an exception from deeper in the computation.
        exception = failing[0].check.raises
        reasons = set.intersection(*(_argument_kinds(case, names) for case in failing)) - kinds_of(returning)
        if not reasons:
            reasons = kinds_of(failing) - kinds_of(returning)
            if any(not (_argument_kinds(case, names) & reasons) for case in failing):
                return None
        if not reasons:
            return None
        others = sorted({other_error(case) for case in failing} - {None})
        if not others:
            did = "returns a result"
        elif all(other_error(case) for case in failing):
            did = f"raises {' or '.join(others)}"
        else:
            did = f"returns a result (or raises {' or '.join(others)})"
        return (f"your function {did} where it should raise {exception}: for {_listed(reasons)}, which the "
                "reference refuses (a check left out, or narrower than the docstring's)")
    errors = [(results[case.id] or {}).get("error") for case in failing]
    if all(error and not getattr(case.check, "raises", None) and "ValueError" in (error.get("mro") or ())
           for case, error in zip(failing, errors)) and len({error.get("type") for error in errors}) == 1:
        passing = [case for case in returning if results.get(case.id) is not None and passed(case)]
        reasons = kinds_of(failing) - kinds_of(passing)
        if not reasons or any(not (_argument_kinds(case, names) & reasons) for case in failing):
            return None
        return (f"your function raises {errors[0]['type']} where the reference returns a result: for "
                f"{_listed(reasons)} (a check wider than the docstring's)")
    return None


def _order_words(order, axes):
    """An order of the reference's axes, by their names where the check gives them, else by their places."""
    if all(name == f"axis {a}" for a, name in enumerate(axes)):
        return f"({', '.join(str(a) for a in order)})"
    return f"({', '.join(axes[a] for a in order)})"


def _layouts(case, outcome):
    """The layouts of a right answer of the case's check (the reference's, or what the task gives with the grader's
    stand-in for its helper) that the tensor ``outcome`` returned is: see _layouts_of."""
    value = (outcome or {}).get("value") or {}
    if "shape" in value and "tensor" not in value:
        return None  # a meta tensor's description
    found = set()
    for answer in (getattr(case.check, "expected", None), getattr(case.check, "also_accept", None)):
        layouts = _layouts_of(case, answer, outcome)
        if layouts is None:
            return None
        found |= layouts
    return found


def _layouts_of(case, expected, outcome):
    """The layouts of the reference's values that the tensor ``outcome`` returned is, each in the words that name it
    (the same words for the same slip on every case): its axes in another order, the memory order of another
    order reshaped, a last axis in halves where the reference interleaves pairs (or the other way round), or an
    axis repeated (not the right order in another shape, which the check itself tells). An empty set where none
    is; None where the case cannot tell (a meta tensor, which has a shape and no values)."""
    got = ((outcome or {}).get("value") or {}).get("tensor")
    if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)) or expected.is_complex() \
            or got.is_complex() or expected.dim() > 5:
        return set()
    if got.device.type == "meta" or expected.device.type == "meta" or not expected.numel():
        return None  # no values to tell layouts apart
    atol, rtol = (_scalar_tolerance(getattr(case.check, name, 1e-5)) for name in ("atol", "rtol"))
    g, e = got.detach().to("cpu", torch.float64), expected.detach().to("cpu", torch.float64)
    axes = _axis_names(e.shape, getattr(case.check, "axes", None))
    found = set()  # (preference: fewer axes moved first, the words)

    def undone(fixed):  # whether the case passes once the layout is undone (its dtype and all else as returned)
        return _passes(case, {**outcome, "value": {**outcome["value"], "tensor": fixed}})

    if g.numel() == e.numel():
        reference = _order_words(range(e.dim()), axes)
        for order in itertools.permutations(range(e.dim())):
            moved = e.permute(order)
            if not _close(g.reshape(-1), moved.reshape(-1), atol, rtol) or \
                    not undone(got.reshape(moved.shape).permute(tuple(order.index(a) for a in range(e.dim())))):
                continue
            moved_axes = [a for a in order if e.shape[a] != 1]  # an axis of size 1 moves no value
            if moved_axes == sorted(moved_axes) and tuple(moved.shape) != tuple(g.shape):
                continue  # the right order in another shape: the check itself says "only the shape differs"
            moves = sum(a != b for a, b in zip(order, range(e.dim())))
            if tuple(moved.shape) == tuple(g.shape):
                found.add(((0, moves), f"your output holds the reference's values with its axes in another order: "
                                       f"laid out {_order_words(order, axes)} where the reference's is {reference} "
                                       "(a transpose or permute missing, or one too many)"))
            else:
                found.add(((2, moves), f"your output holds the reference's values in the memory order of "
                                       f"{_order_words(order, axes)}, reshaped: a reshape (or view) keeps the memory "
                                       f"order, where the reference's {reference} needs the axes moved (permute or "
                                       "transpose) first"))
    size = e.shape[-1] if e.dim() else 0
    if g.shape == e.shape and size >= 4 and size % 2 == 0:
        halves = torch.cat([torch.arange(0, size, 2), torch.arange(1, size, 2)])
        back = torch.argsort(halves)
        if _close(g, e[..., halves], atol, rtol) and undone(got[..., back]):
            found.add(((0, 0), "your output's last axis holds the reference's values as two halves (the even "
                               "entries, then the odd ones), where the reference keeps each pair side by side, "
                               "interleaved"))
        if _close(g[..., halves], e, atol, rtol) and undone(got[..., halves]):
            found.add(((0, 0), "your output's last axis interleaves the reference's values pair by pair, where the "
                               "reference keeps them as two halves (the first half, then the second)"))
    if g.dim() == e.dim():
        wider = [a for a in range(e.dim()) if g.shape[a] != e.shape[a]]
        if len(wider) == 1 and e.shape[wider[0]] and g.shape[wider[0]] % e.shape[wider[0]] == 0:
            axis, times = wider[0], g.shape[wider[0]] // e.shape[wider[0]]
            where = _the_axis(axes, axis)
            every = torch.arange(0, g.shape[axis], times)
            if times > 1 and _close(g, e.repeat_interleave(times, dim=axis), atol, rtol) \
                    and undone(got.index_select(axis, every.to(got.device))):
                found.add(((3, 0), f"your output has each of the reference's values {times} times in a row along "
                                   f"{where} (repeat_interleave): the reference gives each once"))
            if times > 1 and _close(g, torch.cat([e] * times, dim=axis), atol, rtol) \
                    and undone(got.narrow(axis, 0, e.shape[axis])):
                found.add(((3, 0), f"your output holds the reference's values {times} times over along {where} "
                                   "(cat or repeat): the reference gives them once"))
    return found


def _layout_slip(failing, outcomes):
    """The words of a layout that every failing case's tensor is (the cases on the meta device, which cannot tell,
    aside: at least one case with values), the one that moves the fewest axes where several are; else None."""
    common = None
    for case, outcome in zip(failing, outcomes):
        found = _layouts(case, outcome)
        if found is None:
            continue
        common = found if common is None else common & found
        if not common:
            return None
    return min(common)[1] if common else None


NORMALISED = ("softmax", "log_softmax")  # steps past the result that a task does not take (tensor methods)


def _normalised(case, outcome):
    """The words of each step past the result (a softmax or log-softmax over some axis) that makes the reference's
    values into the tensor ``outcome`` returned, for this case; None where it cannot tell (no values)."""
    got = ((outcome or {}).get("value") or {}).get("tensor")
    expected = getattr(case.check, "expected", None)
    if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)) or got.shape != expected.shape \
            or not expected.is_floating_point() or not got.is_floating_point() or expected.is_complex():
        return set()
    if got.device.type == "meta" or expected.device.type == "meta" or not expected.numel():
        return None
    atol, rtol = (_scalar_tolerance(getattr(case.check, name, 1e-5)) for name in ("atol", "rtol"))
    g, e = got.detach().to("cpu", torch.float64), expected.detach().to("cpu", torch.float64)
    axes = _axis_names(e.shape, getattr(case.check, "axes", None))
    found = set()  # (the words, whether this case tells it: an axis of one entry softmaxes to ones whatever it holds)
    for name in NORMALISED:
        step = name.replace("_", "-")
        for axis in range(e.dim()):
            if _close(g, getattr(e, name)(axis), max(atol, 1e-6), max(rtol, 1e-5)):
                found.add((f"your output is the {step} of the reference's values over {_the_axis(axes, axis)}: the "
                           f"task returns the values themselves, before any {step} (attention weights come later, "
                           "in the layer that uses them)", e.shape[axis] > 1))
    return found


def _normalised_slip(failing, outcomes):
    """The words of a softmax (or log-softmax) over one axis that every failing case's tensor is of the reference's
    values (the cases on the meta device aside: at least one with values); else None."""
    common, told = None, set()
    for case, outcome in zip(failing, outcomes):
        found = _normalised(case, outcome)
        if found is None:
            continue
        words = {said for said, _ in found}
        told |= {said for said, tells in found if tells}
        common = words if common is None else common & words
        if not common:
            return None
    common = (common or set()) & told  # shown on some case whose axis has more than one entry
    return min(common) if common else None


def explain(cases, results, failing_tests, names, passed=None):
    """The words naming a slip of form that explains every failing case of ``failing_tests`` (test ids), or None.
    ``cases`` are the task's, ``results`` the student's outcomes by case id, ``names`` {function: its parameters'
    names}; ``passed(case)``, where given, the check's verdict on the student's outcome, already known."""
    passed = passed or student_verdicts(results)
    failing = [case for case in cases if case.test in failing_tests and case.scored
               and results.get(case.id) is not None and not passed(case)]
    if not failing:
        return None
    refusal = _refusals(cases, results, failing, names, passed)
    if refusal or any(case.probe.get("op") in SEQUENCE_OPS for case in failing):
        return refusal
    if all(getattr(case.check, "expected_device", None) == "meta" for case in failing) and any(
            getattr(case.check, "expected_device", None) != "meta" and passed(case)
            for case in cases if results.get(case.id) is not None):
        return _meta_slip([results[case.id] for case in failing])
    outcomes = [results[case.id] for case in failing]
    if all(isinstance(outcome, dict) and outcome.get("changed") and _passes(case, _without_changes(outcome))
           for case, outcome in zip(failing, outcomes)):
        return f"your function changes {_changed(failing, outcomes, names)} in place: the values it returns are right"
    if all(isinstance(outcome, dict) and outcome.get("changed") for outcome in outcomes):
        # Every failing call writes into an input, and some return wrong values too: said as what is certain (the
        # write), with the usual way it spoils the values (a step reads what an earlier step wrote).
        listed = _changed(failing, outcomes, names)
        return (f"your function writes into {listed} in place on every call that fails, and returns wrong results "
                f"on some: where a step reads {listed} after an earlier step wrote into it (a view, such as "
                "`.to()` of the same dtype, or a slice, shares its storage), it reads the new values. Build the "
                "result in a new tensor and leave the inputs as they were")
    layout = _layout_slip(failing, outcomes) or _normalised_slip(failing, outcomes)
    if layout:
        return layout
    coarser = set()  # the dtypes whose results hold the values to their own precision only
    for case, outcome in zip(failing, outcomes):
        dtype = _expected_dtype(case)
        if dtype is None or _dtype_of(outcome) in (None, dtype):
            return None
        if not _passes(case, _retyped(outcome, dtype)):
            if not _right_to_its_precision(case, outcome):
                return None
            coarser.add(_shown(_dtype_of(outcome)))
    returned = [case for case in cases if case.probe.get("op", "call") == "call" and _expected_dtype(case) is not None
                and _dtype_of(results.get(case.id)) is not None]
    student = _rule([(_dtype_of(results[case.id]), _input_dtypes(case, names)) for case in returned])
    reference = _rule([(_expected_dtype(case), _input_dtypes(case, names)) for case in returned])
    if student is None or student == reference:
        return None
    theirs = f", where the reference's is {reference}" if reference else ""
    precision = f", to {' and '.join(sorted(coarser))}'s precision" if coarser else ""
    return f"your result's dtype is {student}{theirs}: the values are right{precision}"
