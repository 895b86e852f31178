"""The behaviour contracts (autograder/core/behaviour.py), property by property, over every task that declares one.

For each property and each task whose BEHAVIOUR declares it: the reference passes its cases, at the rubric's seed
and at drawn ones; and a mutant of the reference made to break that property (an input detached, the function
wrapped in functools.lru_cache, torch.manual_seed(0) at its start, an input flattened by .view or read as if
contiguous, a cache keyed on part of the arguments) fails that property's case, named, in its own task, while every
test of every other task keeps its points. The mutants are made by editing the reference's source of that task.
"""

import ast
import dataclasses
import inspect
import random

import pytest
import torch

from autograder.core import units
from autograder.core.behaviour import PROPERTIES, declared
from autograder.core.grade import Grader, score_tests
from autograder.intake.load import load
from autograder.sandbox.server import run_submission

DECLARED = [(unit.name, task, name) for unit in units.all_units() for task in unit.rubric.TASK_NAMES
            if declared(unit, task) for name in declared(unit, task).properties]
# Two seeds besides the rubric's, drawn once: the contract holds for any draw, not one.
SEEDS = (None,) + tuple(random.Random("behaviour contracts").sample(range(1, 2**31), 2))
MISTAKES = {
    "gradients": "no gradient reaches",
    "fresh results": "one result handed out to every caller",
    "global state": "a global setting of torch changed by the call",
    "any layout": "the result depends on how the inputs lie in memory",
    "independent calls": "a result cached under a key that leaves out some argument",
}
_GRADERS, _RUNS = {}, {}


@pytest.fixture(scope="module", autouse=True)
def _close_graders():
    yield
    for grader in _GRADERS.values():
        grader.close()


def _grader(name):
    if name not in _GRADERS:
        _GRADERS[name] = Grader(units.get(name), sandbox="auto")
    return _GRADERS[name]


def _run(name, source, tmp_path, seed=None):
    """Every case's verdict and every test's result of ``source`` graded as unit ``name`` (timing tier left out)."""
    key = (name, source, seed)
    if key in _RUNS:
        return _RUNS[key]
    grader, unit = _grader(name), units.get(name)
    seed = unit.rubric.SEED if seed is None else seed
    cases, plan = grader.cases_for(seed)
    path = tmp_path / f"{unit.module_name}.py"
    path.write_text(source)
    submission = load(path, unit.file_names)
    submission = dataclasses.replace(submission, chunks=submission.chunks + grader.given_chunks)
    outcome = run_submission(submission, plan, unit.rubric.TASK_NAMES, grader.limits, grader.server)
    assert not outcome.load_failure, outcome.load_failure
    tests, verdicts = {}, {}
    for task in unit.rubric.TASK_NAMES:
        results = outcome.results.get(task, {})
        for test in score_tests(unit, unit.rubric.tests_of(task), cases[task], results,
                                failure=outcome.failures.get(task)):
            tests[test.id] = test
        for case in cases[task]:
            verdicts[case.id] = (task, getattr(case, "contract", None), case.check(results.get(case.id)))
    _RUNS[key] = tests, verdicts
    return _RUNS[key]


def _contract_verdicts(verdicts, task, name):
    return [verdict for owner, contract, verdict in verdicts.values() if owner == task and contract == name]


def test_every_task_of_every_unit_declares_a_behaviour_contract():
    undeclared = [(unit.name, task) for unit in units.all_units() for task in unit.rubric.TASK_NAMES
                  if declared(unit, task) is None]
    assert undeclared == []
    assert {name for _, _, name in DECLARED} == set(PROPERTIES)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("unit, task, name", DECLARED)
def test_the_reference_holds_each_declared_property(unit, task, name, seed, tmp_path):
    tests, verdicts = _run(unit, units.get(unit).finished_reference, tmp_path, seed)
    found = _contract_verdicts(verdicts, task, name)
    assert found, f"{task} declares {name} but has no case of it"
    assert [verdict.message for verdict in found if not verdict.passed] == []
    assert [test.id for test in tests.values() if not test.passed] == []


# --- mutants of the reference, each made to break one property ------------------------------------------------

def _body_start(source, task, unit, method):
    """The line (0-based) where the body of the task's function (or ``method`` of its class) starts, after its
    docstring, and that body's indentation."""
    name = unit.rubric.TASK_BY_NAME[task].functions[0]
    tree = ast.parse(source)
    node = next(node for node in tree.body if getattr(node, "name", None) == name)
    if isinstance(node, ast.ClassDef):
        node = next(item for item in node.body if getattr(item, "name", None) == method)
    body = node.body
    first = body[1] if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body[0]
    return first.lineno - 1, " " * first.col_offset


def _inserted(source, task, unit, line, method="forward"):
    lines = source.splitlines()
    at, indent = _body_start(source, task, unit, method)
    return "\n".join(lines[:at] + [indent + line] + lines[at:]) + "\n"


def _wrapped(source, task, unit, wrapper):
    """The source with the task's function (a class: its forward) replaced by ``wrapper`` of it, at the end."""
    name = unit.rubric.TASK_BY_NAME[task].functions[0]
    target = f"{name}.forward" if isinstance(getattr(unit.reference, name), type) else name
    return source + "\n\nimport functools as _functools\n" + wrapper.format(target=target) + "\n"


LRU = "{target} = _functools.lru_cache(maxsize=None)({target})"
# A cache keyed on part of the arguments: the first (a tensor by its shape and dtype), or the positional ones.
STALE = '''_stale_original, _stale_results = {target}, {{}}


def _stale_key(value):
    return (tuple(value.shape), value.dtype) if isinstance(value, torch.Tensor) else value


def _stale(*args, **kwargs):
    key = {key}
    if key not in _stale_results:
        _stale_results[key] = _stale_original(*args, **kwargs)
    found = _stale_results[key]
    return tuple(part.clone() for part in found) if isinstance(found, tuple) else (
        found.clone() if isinstance(found, torch.Tensor) else found)


{target} = _functools.wraps(_stale_original)(_stale)'''
STALE_KEYS = {"the first argument": "_stale_key(args[-1] if isinstance(args[0], torch.nn.Module) else args[0])",
              "the positional arguments": ("tuple(_stale_key(value) for value in args "
                                           "if not isinstance(value, torch.nn.Module))")}


def _mutants():
    """(unit, task, property, what, source) for every property each task declares."""
    found = []
    for unit in units.all_units():
        source = unit.finished_reference
        for task in unit.rubric.TASK_NAMES:
            behaviour = declared(unit, task)
            if behaviour is None:
                continue
            holds = behaviour.properties
            for name in behaviour.trained if "gradients" in holds else ():
                found.append((unit, task, "gradients", f"{name}.detach()",
                              lambda s, t=task, u=unit, n=name: _inserted(s, t, u, f"{n} = {n}.detach()")))
            if "fresh results" in holds:
                found.append((unit, task, "fresh results", "functools.lru_cache",
                              lambda s, t=task, u=unit: _wrapped(s, t, u, LRU)))
            if "global state" in holds:
                found.append((unit, task, "global state", "torch.manual_seed(0)",
                              lambda s, t=task, u=unit: _inserted(s, t, u, "torch.manual_seed(0)", "__init__")))
            if "any layout" in holds:
                reference = getattr(unit.reference, unit.rubric.TASK_BY_NAME[task].functions[0])
                for name in behaviour.layouts:
                    found.append((unit, task, "any layout", f"{name} read as if contiguous", (
                        lambda s, t=task, u=unit, n=name: _inserted(
                            s, t, u, f"{n} = {n}.as_strided({n}.shape, torch.empty({n}.shape).stride())"))))
                flat = [name for name in behaviour.layouts if _dimensions(reference, behaviour, name) >= 2]
                if flat:
                    found.append((unit, task, "any layout", f"{flat[0]}.view(-1)", (
                        lambda s, t=task, u=unit, n=flat[0]: _inserted(s, t, u, f"{n} = {n}.view(-1).view({n}.shape)"))))
            if "independent calls" in holds:
                for what, key in STALE_KEYS.items():
                    if what == "the positional arguments" and not _keywords(unit, task, behaviour):
                        continue  # every argument is positional: that key is the whole call, and the cache right
                    found.append((unit, task, "independent calls", f"a cache keyed on {what}",
                                  lambda s, t=task, u=unit, k=key: _wrapped(s, t, u, STALE.replace("{key}", k))))
    return [pytest.param(unit.name, task, name, make(unit.finished_reference), id=f"{task}-{name}-{what}")
            for unit, task, name, what, make in found]


def _keywords(unit, task, behaviour):
    """Whether the declared call or a variant of it passes an argument by keyword."""
    args, kwargs = behaviour.call(random.Random(0), torch.Generator().manual_seed(0))
    reference = getattr(unit.reference, unit.rubric.TASK_BY_NAME[task].functions[0])
    positional = list(inspect.signature(reference.__init__ if isinstance(reference, type) else reference).parameters)
    positional = [name for name in positional if name != "self"][:len(args[0]) if isinstance(reference, type)
                                                                   else len(args)]
    return bool(kwargs) or any(name not in positional for name in behaviour.vary)


def _dimensions(reference, behaviour, name):
    """How many axes the declared call's input ``name`` has."""
    args, kwargs = behaviour.call(random.Random(0), torch.Generator().manual_seed(0))
    if isinstance(reference, type):
        return args[1].dim()
    parameters = list(inspect.signature(reference).parameters)
    index = parameters.index(name)
    return (args[index] if index < len(args) else kwargs[name]).dim()


@pytest.mark.parametrize("unit, task, name, source", _mutants())
def test_a_mutant_that_breaks_a_property_fails_it_in_its_own_task_only(unit, task, name, source, tmp_path):
    tests, verdicts = _run(unit, source, tmp_path)
    found = _contract_verdicts(verdicts, task, name)
    failed = [verdict for verdict in found if not verdict.passed]
    assert failed, f"no case of {name} in {task} fails"
    assert any(verdict.mistake.startswith(MISTAKES[name]) for verdict in failed), [v.message for v in failed]
    test_id = declared(units.get(unit), task).test
    assert not tests[test_id].passed
    assert MISTAKES[name] in tests[test_id].output or not tests[test_id].output.startswith(("Passed",)), \
        tests[test_id].output
    others = {test.id: test.output for test in tests.values() if test.task != task and not test.passed}
    assert others == {}
