"""What every grading process pays at its start: the hidden cases built in the grader's own process.

Every command that grades (the command line, nbgrader's TrustedGrades, each platform's container) builds every
task's cases before its first submission. Two of torch's lazy imports cost about a second of CPU between them there
and are kept out of it: torch._dynamo (the first operation on the meta device; the shapes and dtypes are computed on
the CPU, cases.computed_on_the_cpu) and sympy (torch's check of an explicit gradient's shape in
``Tensor.backward(grad)``; the gradient contract's expected values are the gradients of ``sum(result * grad_out)``
instead, as the job computes a module's).
"""

import random
import subprocess
import sys

import torch
from hypothesis import given, settings, strategies as st

from autograder.core import behaviour, units
from autograder.course.build import ROOT

LAZY = ("torch._dynamo", "sympy")


def test_building_every_unit_s_cases_imports_neither_dynamo_nor_sympy():
    """In a fresh process, as a grader starts. (The reference's output on the meta device is still compared with the
    CPU's shapes, through the job: tests/core/test_meta_device.py.)"""
    code = ("import sys\nfrom autograder.core import units\nfrom autograder.core.cases import build_cases\n"
            "for unit in units.all_units():\n    build_cases(unit)\n"
            f"print(sorted(name for name in sys.modules if any(name == lazy or name.startswith(lazy + '.') "
            f"for lazy in {LAZY!r}))[:3])")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == "[]", f"building the cases imported {ran.stdout.strip()}"


def _trained_tasks():
    """(unit, task) of every task whose contract says gradients must reach some inputs."""
    found = []
    for unit in units.all_units():
        for task in unit.rubric.TASK_NAMES:
            declared = behaviour.declared(unit, task) if task != "timing" else None
            if declared is not None and declared.trained:
                found.append((unit.name, task))
    return found


TRAINED = _trained_tasks()


def test_the_gradient_property_has_tasks_of_several_units_to_draw():
    assert len(TRAINED) >= 4 and {unit for unit, _ in TRAINED} >= {"positional_encodings", "rotary_alibi"}, TRAINED


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(TRAINED), st.integers(0, 2**31 - 1))
def test_the_contract_s_expected_gradients_are_the_vector_jacobian_product(task_of, seed):
    """The gradients the reference's run gives are those of ``torch.autograd.grad`` with ``grad_outputs`` (the
    definition: the vector-Jacobian product with grad_out), for drawn calls and drawn grad_out."""
    unit_name, task = task_of
    unit = units.get(unit_name)
    declared = behaviour.declared(unit, task)
    reference = behaviour._Reference(unit, task, declared)
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    args, kwargs = declared.call(rng, generator)
    args, kwargs = reference.bind(list(args), dict(kwargs))
    weight = None
    if reference.module:
        with torch.random.fork_rng(devices=[]):
            weight = reference.target(*args[0]).weight.detach().clone()
        weight = torch.randn(weight.shape, generator=generator, dtype=torch.float64).to(weight.dtype)
    result, _ = reference.run(reference.target, args, kwargs, weight=weight)
    assert result.is_floating_point(), f"{task} declares gradients but returns {result.dtype}"
    grad_out = torch.randn(result.shape, generator=generator, dtype=torch.float64).to(result.dtype)
    _, grads = reference.run(reference.target, args, kwargs, weight=weight, trained=declared.trained,
                             grad_out=grad_out)

    # Independently: the same call, its leaves, and autograd.grad with grad_outputs.
    own_args, own_kwargs = behaviour._cloned(list(args)), behaviour._cloned(dict(kwargs))
    leaves = [behaviour._get(own_args, own_kwargs, reference.where(name)) for name in declared.trained]
    for leaf in leaves:
        leaf.requires_grad_()
    function = reference.target
    if reference.module:
        with torch.random.fork_rng(devices=[]):
            function = reference.target(*own_args[0])
        with torch.no_grad():
            function.weight.copy_(weight)
        own_args, own_kwargs = [own_args[1]], {}
    out = reference.view(function(*own_args, **own_kwargs))
    wanted = torch.autograd.grad(out, leaves, grad_outputs=grad_out, allow_unused=True)
    assert len(grads) == len(wanted)
    for name, got, want in zip(declared.trained, grads, wanted):
        assert (got is None) == (want is None), name
        if want is not None:
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6, msg=lambda m: f"{task}, {name}: {m}")
