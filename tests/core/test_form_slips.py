"""Names from the outcomes' form (autograder/core/form_slips.py; issue 37, names for mistakes nobody listed).

Over every task of every unit that is called with tensors, the reference's own outcomes on its hidden cases (run
as the job runs them, read back as the grader reads them) are edited as a slip edits them, and the names checked:

* an input reported changed in place, values right: named in place, by that input's parameter name;
* every floating result in float64 (values right): named "always float64" where it makes a case fail;
* every floating result in another drawn dtype: named by that rule, or not at all, never by another rule;
* one entry of one result moved (a slip of value): never named by its form;
* the values right and laid out otherwise (axes swapped, reshaped, halves, repeated): named by that layout or not
  at all; the right order in another shape (an axis of size 1 added, or flattened): no layout named;
* the outcomes as they are: nothing fails, nothing named;
* a result where the reference refuses, or ValueError where it answers: named, if at all, by kinds of number
  (NaN, infinite, zero, ...) that the failing calls pass and no call of the other side does;
* the right exception with a message short of the values the check wants: named so;
* every result put through a softmax (or log-softmax) over an axis: named by that step and axis, or not at all;
* an input written into on every failing call, with a wrong value on some: named by the write;
* errors on the meta device only: named by the error (a tensor made on the CPU, or values read), never where a
  real tensor's case fails too.

Then the grader, for real: a submission that changes an input in place, and one whose check lets NaN and
infinity through, are named so in their own task's feedback, with the points a failing test always loses.
"""

import functools
import importlib
import inspect
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import form_slips, units
from autograder.core.cases import build_cases
from autograder.core.grade import Grader
from autograder.course.build import ROOT
from autograder.sandbox import protocol

sys.path.insert(0, str(ROOT / "autograder" / "sandbox"))
import worker  # noqa: E402  (the job's side, as the sandbox runs it)

UNITS = [units.get(name) for name in units.names()]


def _call_tasks():
    for unit in UNITS:
        for task, cases in build_cases(unit).items():
            if any(case.probe["op"] == "call" and any(isinstance(arg, torch.Tensor) for arg in case.probe["args"])
                   for case in cases):
                yield unit.name, task


TASKS = list(_call_tasks())


@functools.cache
def _reference_outcomes(unit_name, task):
    """(cases, {case id: the reference's outcome}, {function: parameter names}) of ``task``."""
    unit = units.get(unit_name)
    namespace = dict(vars(importlib.import_module(f"solutions.{unit_name}")))
    job = worker._unit_code({"unit_code": unit.job_source})
    cases = build_cases(unit)[task]
    outcomes = {}
    for case in cases:
        outcome = worker.run_probe(namespace, dict(case.probe), [], job)
        outcomes[case.id] = protocol.task_results(worker.pack({"p": outcome}), {"p": case.probe["op"]})["p"]
    names = {function: list(inspect.signature(namespace[function]).parameters)
             for function in unit.rubric.TASK_BY_NAME[task].functions}
    return cases, outcomes, names


def _fails(case, outcome):
    return not case.check(outcome).passed


def _tensor(outcome):
    value = (outcome or {}).get("value") or {}
    return value.get("tensor") if isinstance(value.get("tensor"), torch.Tensor) else None


def _explain(cases, outcomes, names):
    failing = {case.test for case in cases if case.scored and _fails(case, outcomes[case.id])}
    return failing, form_slips.explain(cases, outcomes, failing, names)


@pytest.mark.parametrize("unit_name, task", TASKS)
def test_the_reference_s_own_outcomes_pass_and_are_named_nothing(unit_name, task):
    cases, outcomes, names = _reference_outcomes(unit_name, task)
    failing, said = _explain(cases, outcomes, names)
    assert failing == set() and said is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.data())
def test_an_input_changed_in_place_is_named_by_its_parameter(chosen, data):
    cases, outcomes, names = _reference_outcomes(*chosen)
    calls = [case for case in cases if case.probe["op"] == "call" and _tensor(outcomes[case.id]) is not None
             and case.probe["args"] and isinstance(case.probe["args"][0], torch.Tensor)]
    changed = data.draw(st.lists(st.sampled_from(calls), min_size=1, unique_by=lambda case: case.id)) if calls else []
    edited = {**outcomes, **{case.id: {**outcomes[case.id], "changed": [0]} for case in changed}}
    failing, said = _explain(cases, edited, names)
    if not failing:  # no check of these cases reads the change
        assert said is None
        return
    parameter = names[changed[0].probe["name"]][0]
    assert said == f"your function changes `{parameter}` in place: the values it returns are right", said


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.sampled_from([torch.float64, torch.float32, torch.float16, torch.bfloat16]))
def test_a_result_always_in_one_dtype_is_named_so_or_not_at_all(chosen, dtype):
    cases, outcomes, names = _reference_outcomes(*chosen)
    edited = dict(outcomes)
    for case in cases:
        got, value = _tensor(outcomes[case.id]), (outcomes[case.id] or {}).get("value") or {}
        if case.probe["op"] != "call":
            continue
        if got is not None and got.is_floating_point():
            edited[case.id] = {**outcomes[case.id], "value": {**value, "tensor": got.to(dtype)}}
        elif "shape" in value and getattr(torch, str(value.get("dtype")), torch.int64).is_floating_point:
            # a meta tensor's description: the same rule gives its dtype
            edited[case.id] = {**outcomes[case.id], "value": {**value, "dtype": str(dtype).replace("torch.", "")}}
    failing, said = _explain(cases, edited, names)
    shown = str(dtype).replace("torch.", "")
    if not failing:
        assert said is None
    elif dtype == torch.float64:  # a float64 result holds any floating value exactly: the rule is read off it
        assert said is not None and said.startswith(f"your result's dtype is always {shown}"), (chosen, said)
    else:
        assert said is None or said.startswith(f"your result's dtype is always {shown}"), (chosen, said)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.data())
def test_a_wrong_value_is_never_named_by_its_form(chosen, data):
    cases, outcomes, names = _reference_outcomes(*chosen)
    valued = [case for case in cases if _tensor(outcomes[case.id]) is not None and _tensor(outcomes[case.id]).numel()
              and not _tensor(outcomes[case.id]).is_meta]
    if not valued:
        return
    case = data.draw(st.sampled_from(valued))
    wrong = _tensor(outcomes[case.id]).clone()
    wrong.view(-1)[data.draw(st.integers(0, wrong.numel() - 1))] += 7
    edited = {**outcomes, case.id: {**outcomes[case.id], "value": {**outcomes[case.id]["value"], "tensor": wrong}}}
    failing, said = _explain(cases, edited, names)
    assert said is None, (failing, said)


# A slip of layout, made on every tensor a call returns where it can be: (what it does, the words that name it).
LAYOUTS = {
    "last two axes swapped": (lambda t: t.transpose(-1, -2) if t.dim() >= 2 else None,
                              "your output holds the reference's values with its axes in another order: laid out"),
    "reshaped where the reference transposes": (
        lambda t: t.transpose(-1, -2).reshape(t.shape) if t.dim() >= 2 else None,
        "your output holds the reference's values in the memory order of"),
    "the last axis twice over": (lambda t: torch.cat([t, t], dim=-1) if t.dim() >= 1 else None,
                                 "your output holds the reference's values 2 times over along"),
    "the last axis in halves": (lambda t: torch.cat([t[..., 0::2], t[..., 1::2]], dim=-1)
                                if t.dim() >= 1 and t.shape[-1] % 2 == 0 else None,
                                "your output's last axis holds the reference's values as two halves"),
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.sampled_from(sorted(LAYOUTS)))
def test_a_result_laid_out_otherwise_is_named_by_its_layout_or_not_at_all(chosen, layout):
    """The values right, laid out otherwise on every call: named by that layout, or not at all (a task whose
    failing cases have axes of different counts or names, which no one sentence describes). Never by another slip."""
    cases, outcomes, names = _reference_outcomes(*chosen)
    move, words = LAYOUTS[layout]
    edited = dict(outcomes)
    for case in cases:
        got = _tensor(outcomes[case.id])
        if case.probe["op"] == "call" and got is not None and not got.is_meta and move(got) is not None:
            edited[case.id] = {**outcomes[case.id], "value": {**outcomes[case.id]["value"],
                                                             "tensor": move(got).contiguous()}}
    failing, said = _explain(cases, edited, names)
    if not failing:
        assert said is None
        return
    assert said is None or said.startswith(words) or said.startswith("your output holds the reference's values"), \
        (layout, said)
    shapes = {tuple(getattr(case.check, "axes", None) or ()) + (_tensor(outcomes[case.id]).dim(),)
              for case in cases if case.test in failing and _fails(case, edited[case.id])
              and _tensor(outcomes[case.id]) is not None}
    if layout == "last two axes swapped" and len(shapes) == 1:
        # One sentence fits every failing case: it is said (the swap may also read as a reshape where an axis has
        # one entry, and the fewest axes moved is the name).
        assert said is not None and "another order" in said, (layout, said)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.data())
def test_the_right_order_in_another_shape_gets_no_layout_name(chosen, data):
    """Every tensor result given an axis of size 1 at a drawn place (or reshaped flat): the values are right and
    in the right order, which the check itself says ("only the shape differs"), so no layout is named, not even
    one that moves only axes of size 1 (which moves no value)."""
    cases, outcomes, names = _reference_outcomes(*chosen)
    flat = data.draw(st.booleans())
    edited = dict(outcomes)
    for case in cases:
        got = _tensor(outcomes[case.id])
        if case.probe["op"] == "call" and got is not None and not got.is_meta:
            moved = got.reshape(-1) if flat else got.unsqueeze(data.draw(st.integers(0, got.dim())))
            edited[case.id] = {**outcomes[case.id], "value": {**outcomes[case.id]["value"], "tensor": moved}}
    failing, said = _explain(cases, edited, names)
    assert said is None or not said.startswith(("your output holds", "your output's last axis")), (failing, said)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.sampled_from(["softmax", "log_softmax"]), st.data())
def test_a_softmax_past_the_result_is_named_by_its_axis_or_not_at_all(chosen, step, data):
    """Every floating tensor result put through a softmax (or log-softmax) over one drawn axis: named by that step
    and that axis, or not at all; never by another axis where that one has more than one entry on some case."""
    cases, outcomes, names = _reference_outcomes(*chosen)
    place = data.draw(st.integers(-3, -1))
    edited, axes = dict(outcomes), set()
    for case in cases:
        got = _tensor(outcomes[case.id])
        if case.probe["op"] == "call" and got is not None and not got.is_meta and got.is_floating_point() \
                and got.dim() >= -place:
            edited[case.id] = {**outcomes[case.id], "value": {**outcomes[case.id]["value"],
                                                             "tensor": getattr(got.double(), step)(place).to(got.dtype)}}
            axes.add(got.dim() + place)
    failing, said = _explain(cases, edited, names)
    if said is None:
        return
    shown = "softmax" if step == "softmax" else "log-softmax"
    assert said.startswith(f"your output is the {shown} of the reference's values over the "), said
    assert "before any" in said


def test_a_softmax_over_the_keys_in_place_of_the_scores_is_named():
    """The first unit's biased scores returned as attention weights (softmax over the keys): named by the key axis,
    on cases whose key axis has one entry (ones, whatever the scores) as well as on the others."""
    cases, outcomes, names = _reference_outcomes("positional_encodings", "biased_scores")
    edited = dict(outcomes)
    for case in cases:
        got = _tensor(outcomes[case.id])
        if case.probe["op"] == "call" and got is not None and not got.is_meta:
            edited[case.id] = {**outcomes[case.id], "value": {**outcomes[case.id]["value"],
                                                             "tensor": got.double().softmax(-1).to(got.dtype)}}
    failing, said = _explain(cases, edited, names)
    assert failing and said is not None and said.startswith(
        "your output is the softmax of the reference's values over the key axis"), said


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.data())
def test_an_input_written_into_with_wrong_values_is_named_by_the_write(chosen, data):
    """Every failing call reports its first input changed, and some return a wrong value too: named as a write into
    that input (what is certain), never as values that are right."""
    cases, outcomes, names = _reference_outcomes(*chosen)
    calls = [case for case in cases if case.probe["op"] == "call" and _tensor(outcomes[case.id]) is not None
             and case.probe["args"] and isinstance(case.probe["args"][0], torch.Tensor)]
    valued = [case for case in calls if case.scored and _tensor(outcomes[case.id]).numel()
              and not _tensor(outcomes[case.id]).is_meta]
    if not valued:
        return
    wrong = data.draw(st.sampled_from(valued))
    edited = {**outcomes, **{case.id: {**outcomes[case.id], "changed": [0]} for case in calls}}
    moved = _tensor(outcomes[wrong.id]).clone()
    moved.view(-1)[0] += 7
    edited[wrong.id] = {**edited[wrong.id], "value": {**edited[wrong.id]["value"], "tensor": moved}}
    failing, said = _explain(cases, edited, names)
    if not _fails(wrong, edited[wrong.id]):
        return  # a check that does not read that entry (or the change)
    parameter = names[wrong.probe["name"]][0]
    assert said is not None and said.startswith(f"your function writes into `{parameter}` in place"), said


def _assert_kinds(listed, names, having, lacking):
    """Each kind ``listed`` names ("`factor` NaN or infinite; `d_model` zero") is one that a call of ``having``
    passes, and that no call of ``lacking`` passes."""
    for part in listed.split("; "):
        name, kinds = part.split(" ", 1)
        for kind in kinds.split(" or "):
            pair = (name.strip("`"), kind)
            assert any(pair in form_slips._argument_kinds(case, names) for case in having), part
            assert not any(pair in form_slips._argument_kinds(case, names) for case in lacking), part


REFUSING_TASKS = [(unit.name, task) for unit in UNITS for task, cases in build_cases(unit).items()
                  if any(getattr(case.check, "raises", None) for case in cases)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REFUSING_TASKS), st.data())
def test_a_refusal_left_out_is_named_by_kinds_only_the_accepted_calls_pass(chosen, data):
    cases, outcomes, names = _reference_outcomes(*chosen)
    refusing = [case for case in cases if getattr(case.check, "raises", None) and case.probe["op"] == "call"]
    if not refusing:
        return
    accepted = data.draw(st.lists(st.sampled_from(refusing), min_size=1, unique_by=lambda case: case.id))
    # Each not refused as the reference refuses it: a result, or an exception from deeper in the computation.
    deeper = {"type": "ZeroDivisionError", "mro": ["ZeroDivisionError", "ArithmeticError", "Exception",
                                                   "BaseException", "object"], "message": "division by zero", "where": ""}
    did = {case.id: data.draw(st.sampled_from(["result", "error"])) for case in accepted}
    edited = {**outcomes, **{case.id: {"value": {"tensor": torch.zeros(1)}} if did[case.id] == "result"
                             else _raised(case, deeper) for case in accepted}}
    failing, said = _explain(cases, edited, names)
    assert failing
    if said is None:
        return
    done = set(did.values())
    what = {frozenset({"result"}): "returns a result", frozenset({"error"}): "raises ZeroDivisionError"}.get(
        frozenset(done), "returns a result (or raises ZeroDivisionError)")
    prefix = f"your function {what} where it should raise {accepted[0].check.raises}: for "
    assert said.startswith(prefix), said
    returning = [case for case in cases if case.probe["op"] == "call" and not getattr(case.check, "raises", None)]
    _assert_kinds(said[len(prefix):].split(", which the reference")[0], names, accepted, returning)


TERSE = {"type": "ValueError", "mro": ["ValueError", "Exception", "BaseException", "object"],
         "message": "invalid arguments", "where": ""}


def _raised(case, error):
    """``error`` as the job reports it for ``case``: a module raises in its forward where it is called, else in its
    __init__."""
    if case.probe["op"] != "module":
        return {"error": error}
    if case.probe.get("x") is None:
        return {"init": {"error": error}}
    return {"init": {"value": {"type_name": "module", "repr": ""}}, "forward": {"error": error}}


# The tasks with a refusal whose check reads the values in the message (learned's length check: L and max_len).
MESSAGE_TASKS = [chosen for chosen in REFUSING_TASKS
                 if any(getattr(case.check, "raises", None) and not case.check(_raised(case, TERSE)).passed
                        for case in build_cases(units.get(chosen[0]))[chosen[1]])]


def test_some_task_reads_the_values_in_a_refusal_s_message():
    assert ("positional_encodings", "learned") in MESSAGE_TASKS


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MESSAGE_TASKS), st.data())
def test_a_refusal_whose_message_leaves_the_values_out_is_named_so(chosen, data):
    cases, outcomes, names = _reference_outcomes(*chosen)
    refusing = [case for case in cases if getattr(case.check, "raises", None)]
    terse = data.draw(st.lists(st.sampled_from(refusing), min_size=1, unique_by=lambda case: case.id))
    edited = {**outcomes, **{case.id: _raised(case, TERSE) for case in terse}}
    failing, said = _explain(cases, edited, names)
    if not failing:  # these checks read no value in the message
        assert said is None
        return
    assert said == ("your ValueError's message does not give the values in conflict: the check reads them there "
                    "(say which argument is wrong, and its value)"), said


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TASKS), st.data())
def test_a_refusal_too_wide_is_named_by_the_kind_it_refuses(chosen, data):
    cases, outcomes, names = _reference_outcomes(*chosen)
    returning = [case for case in cases if case.probe["op"] == "call" and not getattr(case.check, "raises", None)]
    kinds = sorted(set().union(*(form_slips._argument_kinds(case, names) for case in returning)))
    if not kinds:
        return
    # A check that refuses one kind of number (say `factor` between 0 and 1): every call passing it is refused.
    chosen_kind = data.draw(st.sampled_from(kinds))
    refused = [case for case in returning if chosen_kind in form_slips._argument_kinds(case, names)]
    error = {"type": "ValueError", "mro": ["ValueError", "Exception", "BaseException", "object"],
             "message": "refused", "where": ""}
    edited = {**outcomes, **{case.id: {"error": error} for case in refused}}
    failing, said = _explain(cases, edited, names)
    if not failing:  # the calls refused are probes, worth nothing
        return
    prefix = "your function raises ValueError where the reference returns a result: for "
    assert said is not None and said.startswith(prefix), said
    assert f"`{chosen_kind[0]}` " in said and chosen_kind[1] in said, (chosen_kind, said)
    _assert_kinds(said[len(prefix):].split(" (a check wider")[0], names, refused,
                  [case for case in returning if case not in refused])


META_TASKS = [(unit.name, task) for unit in UNITS for task, cases in build_cases(unit).items()
              if any(getattr(case.check, "expected_device", None) == "meta" and case.scored for case in cases)]


@pytest.mark.parametrize("message, words", [
    ("Cannot copy out of meta tensor; no data!", "a tensor your function makes is on the CPU"),
    ("Expected all tensors to be on the same device, but found at least two devices, meta and cpu!",
     "a tensor your function makes is on the CPU"),
    ("Tensor.item() cannot be called on meta tensors", "your function reads a tensor's values into Python"),
], ids=["copied_off", "two_devices", "values_read"])
def test_a_task_wrong_on_the_meta_device_only_is_named_by_what_it_did_there(message, words):
    assert len(META_TASKS) >= 10  # every task that takes tensors has a meta case (issue 37)
    error = {"type": "RuntimeError", "mro": ["RuntimeError", "Exception", "BaseException", "object"],
             "message": message, "where": ""}
    for chosen in META_TASKS:
        cases, outcomes, names = _reference_outcomes(*chosen)
        meta = [case for case in cases if getattr(case.check, "expected_device", None) == "meta"]
        failing, said = _explain(cases, {**outcomes, **{case.id: _raised(case, error) for case in meta}}, names)
        assert failing and said is not None and said.startswith(words), (chosen, said)
        # Wrong on real tensors too: not a slip of the device.
        real = next(case for case in cases if case.scored and case.probe["op"] == "call" and case not in meta
                    and _tensor(outcomes[case.id]) is not None and _tensor(outcomes[case.id]).numel())
        wrong = _tensor(outcomes[real.id]).clone()
        wrong.view(-1)[0] += 7
        edited = {**outcomes, **{case.id: _raised(case, error) for case in meta},
                  real.id: {**outcomes[real.id], "value": {**outcomes[real.id]["value"], "tensor": wrong}}}
        assert _explain(cases, edited, names)[1] is None, chosen


IN_PLACE = '''

_reference_scaled_positions = scaled_positions


def scaled_positions(*args, **kwargs):
    result = _reference_scaled_positions(*args, **kwargs)
    positions = args[0] if args else kwargs["positions"]
    if positions.is_floating_point() and positions.numel():
        positions.add_(0.5)  # the caller's positions moved, once the result is made
    return result
'''

SIGN_ONLY = '''

_reference_scaled_positions = scaled_positions


def scaled_positions(positions, *, factor):
    if factor <= 0:  # NaN and infinity pass this
        raise ValueError(f"factor must be positive, got factor={factor}")
    return _reference_scaled_positions(positions, factor=factor if factor == factor and factor < math.inf else 1.0)
'''


@pytest.mark.parametrize("code, task, words", [
    (IN_PLACE, "scaled_positions", "your function changes `positions` in place"),
    (SIGN_ONLY, "scaled_positions", "it should raise ValueError: for `factor` NaN or infinite"),
], ids=["in_place", "sign_only"])
def test_the_grader_names_a_slip_of_form_in_its_task_only(tmp_path, code, task, words):
    """(A dtype's rule is named for real in test_blind_sets: shaw__float64_output, t5_bucket__keeps_input_dtype.)"""
    unit = units.get("rotary_alibi")
    path = tmp_path / f"{task}.py"
    path.write_text(unit.finished_reference + code)
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        result = grader.grade(path)
    finally:
        grader.close()
    failed = [test for test in result.tests if not test.passed and test.task != "timing"]
    assert failed and {test.task for test in failed} == {task}, [test.id for test in failed]
    named = [test for test in failed if words in test.output]
    assert named, [test.output for test in failed]
    assert all(test.score == 0 and test.diagnosis.mistakes for test in named)
