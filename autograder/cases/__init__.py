"""The hidden cases of a unit's tasks, built from a seed. Instructor-only.

``build_cases(unit, seed)`` returns {task: [Case, ...]} in rubric order, each case
with a stable id ``<test>/<n>``. Expected outputs are computed here, on the trusted
side, from the unit's reference in ``solutions/``; none of it is sent to a
submission. Each task's cases are the module ``cases/<task>.py`` of its unit.
"""

import random

import torch


def hints_of(unit, task):
    """What a task's conditions of failure usually mean: its module's ``HINTS`` (see diagnosis.condition)."""
    return getattr(unit.cases_module(task), "HINTS", {})


def build_cases(unit, seed=None):
    rubric = unit.rubric
    seed = rubric.SEED if seed is None else seed
    by_task = {}
    for number, task in enumerate(rubric.TASK_NAMES):
        module = unit.cases_module(task)
        rng = random.Random(f"{seed}:{task}")
        generator = torch.Generator().manual_seed(seed * 100 + number)
        cases = module.build(rng, generator)
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
        by_task[task] = cases
    return by_task
