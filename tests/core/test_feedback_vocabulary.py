"""One vocabulary per task (issue 24, item 5): the words a task's feedback is made of agree with each other.

* A check that names its axes names every one of them, so that "where it goes wrong" speaks of queries and keys,
  never of "axis 2" (a check that names none, as T5's buckets of any shape, is told by its named quantities, and
  compare.relation never quotes an unnamed axis: tests/core/test_compare_messages.py).
* A task's advice (words added where the relation's sentence matches a pattern) speaks of the axes and named
  quantities its checks know: a pattern that says "column" where the checks say "coordinate" never fires.
* A task's hints (words added where a condition of failure is found) are keyed by a feature and a level that some
  case of the task has: a hint keyed by words no case uses is never said.
Read from every unit's built cases, a unit added later included.
"""

import re

import pytest

from autograder.core import units
from autograder.core.cases import build_cases, hints_of

TASKS = [(unit, task) for unit in units.all_units() for task in unit.rubric.TASK_NAMES]
IDS = [f"{unit.name}.{task}" for unit, task in TASKS]
_BUILT = {}


def _cases(unit, task):
    if unit.name not in _BUILT:
        _BUILT[unit.name] = build_cases(unit)
    return _BUILT[unit.name][task]


def _tensor_checks(unit, task):
    return [(case, case.check) for case in _cases(unit, task) if hasattr(case.check, "axes")]


@pytest.mark.parametrize("unit, task", TASKS, ids=IDS)
def test_a_check_that_names_axes_names_them_all(unit, task):
    unnamed = [case.label for case, check in _tensor_checks(unit, task)
               if check.axes is not None and len(check.axes) < check.expected.dim()]
    assert not unnamed, f"checks with no name for some axis (the feedback would say 'axis 0'): {unnamed[:3]}"


# The words the kit's checks use for an axis or a quantity along one; an advice pattern naming one must find it.
AXIS_WORDS = r"\b(row|column|coordinate|position|feature|head|query|key|batch|pair|bucket|distance|slope)s?\b"


@pytest.mark.parametrize("unit, task", TASKS, ids=IDS)
def test_advice_speaks_of_the_axes_its_checks_name(unit, task):
    checks = [check for _, check in _tensor_checks(unit, task) if check.advice]
    known = {re.sub(r"(?<=\w{3})s$", "", word) for check in checks
             for name in list(check.axes or ()) + list(check.coordinates) for word in re.findall(r"[a-z]+", name.lower())}
    for pattern in {pattern for check in checks for pattern, _ in check.advice}:
        for word in re.findall(AXIS_WORDS, pattern.replace("\\", "")):
            assert word in known, (f"the advice {pattern!r} speaks of a {word}, but the task's checks name "
                                   f"{sorted(known)}: it can never match")


@pytest.mark.parametrize("unit, task", TASKS, ids=IDS)
def test_every_hint_is_keyed_by_a_feature_level_some_case_has(unit, task):
    levels = {(name, str(value)) for case in _cases(unit, task) for name, value in (case.features or {}).items()}
    names = {name for name, _ in levels}
    def said(key):
        name, level = key
        if level in ("<", ">"):  # a numeric feature's failing values above, or below, the passing ones
            return name in names
        return all((name, one) in levels for one in (level if isinstance(level, tuple) else (level,)))

    dead = [key for key in hints_of(unit, task) if not said(key)]
    assert not dead, f"hints no case can call up (no case has that feature and level): {dead}"
