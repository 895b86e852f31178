"""A declared mistake's output is the same every time it is asked.

The grader builds a seed's cases once and keeps them for every grading at that seed (a class, a resumed run, a
student's own seed asked again). A ``Mistake``'s output is computed lazily, each time a check needs it, so a
mistake whose output changes after its first call names a student's output in the first grading of a process and
not in the ones after it: the same file, at the same seed, graded twice, gets two results. YaRN's slips did this
(their closure popped ``truncate`` from a dict it kept, so the second call read the default): the bounds not
rounded outwards cost 12 points in the first grading and 19 in the next (tests/core/test_one_charge_at_every_seed.py
grades it twice).

Here every declared mistake of every case of every unit, at the shared seed, is asked three times (at seeds of
students' own, in the full suite: tests/core/test_one_charge_at_every_seed.py): the three outputs are equal
(value, dtype, shape; NaN where NaN), or the three calls raise the same exception.
"""

import pytest
import torch

from autograder.core import units
from autograder.core.cases import build_cases

UNITS = [unit.name for unit in units.all_units()]


def _asked(mistake):
    try:
        output = mistake.output()
    except Exception as error:  # noqa: BLE001  (a mistake that cannot be made at these inputs)
        return ("raises", type(error).__name__)
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    return output


def _same(first, again):
    if isinstance(first, torch.Tensor) and isinstance(again, torch.Tensor):
        if (first.dtype, first.shape, first.device) != (again.dtype, again.shape, again.device):
            return False
        if not (first.is_floating_point() or first.is_complex()):
            return torch.equal(first, again)
        return torch.equal(first.isnan(), again.isnan()) and torch.equal(first.nan_to_num(0, 0, 0),
                                                                          again.nan_to_num(0, 0, 0))
    if isinstance(first, tuple) and isinstance(again, tuple):
        return len(first) == len(again) and all(_same(one, other) for one, other in zip(first, again))
    return type(first) is type(again) and first == again


def impure(unit_name, seed):
    """(how many declared mistakes were asked, [(case id, words)] of those whose output is not the same each time
    it is asked)."""
    unit = units.get(unit_name)
    asked, found = 0, []
    for case in (case for cases in build_cases(unit, seed).values() for case in cases):
        for mistake in getattr(case.check, "mistakes", ()):
            asked += 1
            first = _asked(mistake)
            if not all(_same(first, _asked(mistake)) for _ in range(2)):
                found.append((case.id, mistake.explain))
    return asked, found


@pytest.mark.parametrize("unit_name", UNITS)
def test_every_declared_mistake_gives_the_same_output_each_time_it_is_asked(unit_name):
    asked, found = impure(unit_name, units.get(unit_name).rubric.SEED)
    assert asked > 50  # the test reads mistakes, not an empty list
    assert found == []
