"""The error model's jobs (autograder/core/mutants.py, ``run_mutants``): one copy of a task's probes is sent for every
mutant of a job, and the job gives each mutant inputs of its own (sandbox/worker.py, ``_renamed``).

A mutant that changes its inputs in place must not reach the next mutant's calls: what a mutant gives is the same
whether it runs alone or after any others. And the plan must not grow by a copy of the cases per mutant (400 mutants
of the first unit's Shaw task on its 38 cases were 51 MB to write, send and read back).
"""

import random

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import mutants, units
from autograder.core.cases import build_cases
from autograder.sandbox.server import serialize_plan
from conftest import correctness_grader

UNIT = units.get("positional_encodings")
TASK, FUNCTION = "shaw", "shaw_scores"

# Hand-made "mutants" of shaw_scores, each defined under the model's prefix as a real mutant is. The first two change
# every floating-point tensor they are given in place (before or after the call), the last leaves them as they were.
SOURCES = {
    "adds one first": """
def {name}(*args, **kwargs):
    for value in [*args, *kwargs.values()]:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value.add_(1)
    return shaw_scores(*args, **kwargs)
""",
    "zeroes after": """
def {name}(*args, **kwargs):
    out = shaw_scores(*args, **kwargs)
    for value in [*args, *kwargs.values()]:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value.zero_()
    return out
""",
    "the reference": """
def {name}(*args, **kwargs):
    return shaw_scores(*args, **kwargs)
""",
}


def _mutant(number, kind):
    name = f"{mutants.PREFIX}{number}_{FUNCTION}"
    return mutants.Mutant(number=number, task=TASK, function=FUNCTION, defined_as=name,
                          source=SOURCES[kind].format(name=name), words=kind, site=(number, 0))


@pytest.fixture(scope="module")
def grader():
    yield from correctness_grader(UNIT)  # the timing tier has tests of its own


@pytest.fixture(scope="module")
def cases():
    return build_cases(UNIT, UNIT.rubric.SEED)[TASK]


def _run(grader, cases, chosen, sizes=None):
    model = grader.model

    def recorded(submission, plan, task_names, limits, server):
        if sizes is not None:
            sizes.append(len(plan.data))
        return model._run(submission, plan, task_names, limits, server)

    return mutants.run_mutants(UNIT, cases, chosen, model.limits, model.server, recorded, model._plan_type)


@pytest.fixture(scope="module")
def alone(grader, cases):
    """What each kind gives on the cases, run in a job of its own."""
    return {kind: _run(grader, cases, [_mutant(900, kind)])[900] for kind in SOURCES}


@settings(max_examples=6, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(sorted(SOURCES)), min_size=2, max_size=6))
def test_a_mutant_gives_the_same_outcome_alone_and_after_mutants_that_change_their_inputs(grader, cases, alone, kinds):
    chosen = [_mutant(900 + at, kind) for at, kind in enumerate(kinds)]
    together = _run(grader, cases, chosen)
    for mutant in chosen:
        for case in cases:
            assert mutants.same_outcome(together[mutant.number][case.id], alone[mutant.words][case.id]), \
                (kinds, mutant.words, case.label)


def test_the_reference_under_a_mutants_name_passes_every_case_after_one_that_changed_its_inputs(grader, cases):
    """An independent check of the same: the reference, renamed, is right on every case, wherever it runs in the job."""
    together = _run(grader, cases, [_mutant(901, "adds one first"), _mutant(902, "the reference")])
    assert all(mutants.passes(case, together[902][case.id]) for case in cases)
    assert not all(mutants.passes(case, together[901][case.id]) for case in cases)


def test_the_plan_holds_the_cases_once_whatever_the_number_of_mutants(grader, cases):
    every = list(mutants.mutants(UNIT, TASK))
    random.Random(0).shuffle(every)
    sizes = []
    _run(grader, cases, every[:1], sizes)
    _run(grader, cases, every[:200], sizes)
    one, many = sizes
    # The task's probes as the correctness plan sends them: a mutant's copy of them would add this much per mutant.
    per_copy = len(serialize_plan({TASK: cases}).data)
    assert many - one < 199 * per_copy / 20, (one, many, per_copy)
