"""Every task that takes tensors (or a ``device=``) has a scored case on the meta device, and every task whose
docstring lets its float tensors differ in dtype has a case where they do (issue 37, point 2): enumerated from the
registry of units (autograder.core.units), not from a list kept here, so a task added later is held to it too.

For each such task a mistake of each kind is made from the reference itself, by wrapping the task's function:
* on the CPU: a CPU tensor meets the output (a table or a zeros built without device=), or device= is dropped;
* one dtype: every float tensor input cast to the dtype of another (Shaw casting q to rel_k's dtype).
Each must fail a case of its own task and no case of another task's.
"""

import functools
import importlib
import sys

import pytest
import torch

from autograder.core import units
from autograder.core.cases import build_cases, device_arg
from autograder.course.build import ROOT
from autograder.sandbox import protocol

sys.path.insert(0, str(ROOT / "autograder" / "sandbox"))
import worker  # noqa: E402  (the job's side, as the sandbox runs it: a file of its own)

UNITS = [units.get(name) for name in units.names()]
META = device_arg("meta")


@functools.cache
def _cases(unit_name):
    return build_cases(units.get(unit_name))

# Tasks with two float tensor inputs whose docstring says nothing of the output's dtype when they differ: no
# mixed-dtype case can tell a right answer from a wrong one there. Each with the docstring's reason.
NO_MIXED_DTYPE = {
    "biased_scores": "scores: (B, H, Lq, Lk), no dtype named: q's, k's or the bias's are all defensible",
}


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _inputs(case):
    probe = case.probe
    if probe["op"] == "module":
        return list(_tensors(probe.get("x")))
    return list(_tensors([probe.get("args", []), probe.get("kwargs", {})]))


def _is_meta(case):
    probe = case.probe
    return (probe.get("device") == META or META in probe.get("kwargs", {}).values()
            or any(t.device.type == "meta" for t in _inputs(case)))


def _is_mixed(case):
    floats = {t.dtype for t in _inputs(case) if t.is_floating_point()}
    return len(floats) > 1 or (case.probe["op"] == "module" and floats - {torch.float32})  # x against a float32 weight


def _takes_device(unit, task):
    module = importlib.import_module(f"solutions.{unit.name}")
    return any("device" in getattr(getattr(module, function), "__code__", _NO_CODE).co_varnames
               for function in _functions(unit, task))


_NO_CODE = (lambda: None).__code__


def _functions(unit, task):
    return [function for function, owner in unit.rubric.TASK_OF_FUNCTION.items() if owner == task]


def _tasks():
    for unit in UNITS:
        for task, cases in _cases(unit.name).items():
            if any(_inputs(case) for case in cases) or _takes_device(unit, task):
                yield pytest.param(unit, task, id=f"{unit.name}-{task}")


TASKS = list(_tasks())


def _namespace(unit, replace=None):
    """The reference's names (borrowed functions included), with ``replace`` put over some."""
    return {**vars(importlib.import_module(f"solutions.{unit.name}")), **(replace or {})}


def _verdicts(unit, namespace, keep):
    """{task: [verdict]} of ``unit``'s cases that ``keep`` picks, run as the job runs them (with the unit's stand-ins),
    read back as the grader reads them."""
    job = worker._unit_code({"unit_code": unit.job_source})
    found = {}
    for task, cases in _cases(unit.name).items():
        for case in cases:
            if keep(case):
                outcome = worker.run_probe(namespace, dict(case.probe), [], job)
                read = protocol.task_results(worker.pack({"p": outcome}), {"p": case.probe["op"]})["p"]
                found.setdefault(task, []).append(case.check(read))
    return found


def test_the_registry_reaches_every_unit_and_the_tasks_the_issue_names():
    names = {param.values[1] for param in TASKS}
    assert {"shaw", "learned", "scaled_positions", "t5_bucket", "rotary_angles", "scaled_rope_scores"} <= names
    assert {param.values[0].name for param in TASKS} == set(units.names())


@pytest.mark.parametrize("unit, task", TASKS)
def test_every_tensor_task_has_a_scored_meta_case_that_the_reference_passes(unit, task):
    cases = [case for case in _cases(unit.name)[task] if _is_meta(case)]
    assert cases and all(case.scored for case in cases), f"{task}: no scored case on the meta device"
    for verdict in _verdicts(unit, _namespace(unit), lambda case: case.id in {c.id for c in cases})[task]:
        assert verdict.passed, verdict.message


def _mixed_tasks():
    for param in TASKS:
        unit, task = param.values
        cases = _cases(unit.name)[task]
        floats = max(len([t for t in _inputs(case) if t.is_floating_point()]) for case in cases)
        if (floats > 1 or any(case.probe["op"] == "module" for case in cases)) and task not in NO_MIXED_DTYPE:
            yield param


MIXED = list(_mixed_tasks())


def test_the_tasks_held_to_a_mixed_dtype_case_include_shaw_and_learned():
    assert {"shaw", "learned", "apply_rotary", "rope_scores", "scaled_rope_scores"} <= {p.values[1] for p in MIXED}


@pytest.mark.parametrize("unit, task", MIXED)
def test_every_task_whose_docstring_allows_mixed_dtypes_has_a_scored_case_the_reference_passes(unit, task):
    cases = [case for case in _cases(unit.name)[task] if _is_mixed(case) and not _is_meta(case)]
    assert cases and any(case.scored for case in cases), f"{task}: no scored case with inputs of two dtypes"
    for verdict in _verdicts(unit, _namespace(unit), lambda case: case.id in {c.id for c in cases})[task]:
        assert verdict.passed, verdict.message


# --- mistakes made from the reference ---------------------------------------------------------------------------

def _meet_the_cpu(value):
    """``value`` plus a CPU tensor of zeros as wide as its last axis: a table built without device= does that."""
    if isinstance(value, tuple):
        return tuple(_meet_the_cpu(item) for item in value)
    if isinstance(value, torch.Tensor) and value.dim():
        return value + torch.zeros(value.shape[-1], dtype=value.dtype)
    return value


def _on_the_cpu(function):
    if isinstance(function, type):  # a module: its forward's output meets a CPU tensor
        return type(function.__name__, (function,), {"forward": lambda self, x: _meet_the_cpu(function.forward(self, x))})

    def wrapped(*args, **kwargs):
        kwargs.pop("device", None)  # built where the default puts it: the CPU
        return _meet_the_cpu(function(*args, **kwargs))

    return wrapped


def _one_dtype(function):
    """Every float tensor input cast to the dtype of the last float input whose dtype differs from the first's (for a
    module: x cast to its weight's dtype)."""
    if isinstance(function, type):
        return type(function.__name__, (function,),
                    {"forward": lambda self, x: function.forward(self, x.to(self.weight.dtype))})

    def wrapped(*args, **kwargs):
        floats = [value.dtype for value in [*args, *kwargs.values()]
                  if isinstance(value, torch.Tensor) and value.is_floating_point()]
        target = next((dtype for dtype in reversed(floats) if dtype != floats[0]), None) if floats else None

        def cast(value):
            if target is not None and isinstance(value, torch.Tensor) and value.is_floating_point():
                return value.to(target)
            return value

        return function(*[cast(a) for a in args], **{key: cast(value) for key, value in kwargs.items()})

    return wrapped


def _made(unit, task, kind):
    reference = _namespace(unit)
    return _namespace(unit, {function: kind(reference[function]) for function in _functions(unit, task)})


def _fails_in_its_task_only(unit, task, namespace, keep):
    verdicts = _verdicts(unit, namespace, keep)
    assert not all(v.passed for v in verdicts.get(task, [])), f"{task}: the made mistake passed every case"
    for other, found in verdicts.items():
        if other != task:
            assert all(v.passed for v in found), (other, [v.message for v in found if not v.passed][:1])


@pytest.mark.parametrize("unit, task", TASKS)
def test_work_that_meets_the_cpu_fails_the_meta_case_of_its_own_task_only(unit, task):
    _fails_in_its_task_only(unit, task, _made(unit, task, _on_the_cpu), _is_meta)


@pytest.mark.parametrize("unit, task", MIXED)
def test_inputs_cast_to_one_dtype_fail_the_mixed_dtype_case_of_their_own_task_only(unit, task):
    _fails_in_its_task_only(unit, task, _made(unit, task, _one_dtype),
                            lambda case: _is_mixed(case) and not _is_meta(case))


# --- the issue's own examples, as a student writes them ------------------------------------------------------------

EXAMPLES = {  # task: (source defining the function, the words its failure must hold)
    "shaw": ('''
def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    index = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position)  # on the CPU
    return scale * (q @ k.transpose(-2, -1) + torch.einsum("bhqd,qkd->bhqk", q, rel_k.to(q.dtype)[index]))
''', "asked for its table on cpu (device=None), not on the device of q, k and rel_k: pass device=q.device"),
    "scaled_positions": ('''
def scaled_positions(positions, *, factor):
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError("factor")
    out = torch.tensor(positions.cpu().double().numpy() / factor)  # through the CPU
    return out.to(positions.device, torch.float64 if positions.dtype == torch.float64 else torch.float32)
''', "meta"),
}


@pytest.mark.parametrize("task", sorted(EXAMPLES))
def test_the_issue_s_device_examples_fail_their_meta_case(task):
    source, words = EXAMPLES[task]
    unit = next(param.values[0] for param in TASKS if param.values[1] == task)
    namespace = _namespace(unit)
    exec(source, namespace)
    verdicts = _verdicts(unit, namespace, _is_meta)
    assert not all(v.passed for v in verdicts[task]) and all(v.passed for t, f in verdicts.items() if t != task
                                                               for v in f)
    assert any(words in v.message for v in verdicts[task] if not v.passed)


def test_shaw_casting_q_to_rel_k_s_dtype_fails_the_mixed_case_and_says_the_dtype():
    unit = units.get("positional_encodings")
    namespace = _namespace(unit)
    exec('''
def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    q, k = q.to(rel_k.dtype), k.to(rel_k.dtype)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    index = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position, device=q.device)
    return scale * (q @ k.transpose(-2, -1) + torch.einsum("bhqd,qkd->bhqk", q, rel_k[index]))
''', namespace)
    verdicts = _verdicts(unit, namespace, lambda case: case.test.startswith("shaw"))["shaw"]
    failed = [v for v in verdicts if not v.passed]
    assert len(failed) == 1, [v.message for v in failed]  # the mixed case alone: every other case has one dtype
    assert "has dtype torch.float32, expected torch.float64" in failed[0].message
    assert "<float64 tensor (2, 2, 6, 8)>, <float64 tensor (2, 2, 8, 8)>, <float32 tensor (5, 8)>" in failed[0].message
