"""check-unit on the kit's own units: what it checks of a unit's cases holds for every unit the kit ships.

test_scaffold.py runs the whole check on a fresh skeleton, whose cases are plain calls. The units' cases go further
(a behaviour contract's sequence of calls, a module's probe, stand-ins swapped in, views): each of them must be
read as the grader reads it, or check-unit reports problems that a working unit does not have (it once called every
sequence "a call of None"). Here the steps that read the cases run on every unit, in the quick tier: each must find
nothing; and in the full suite the whole check runs on every unit, nbgrader's release included.
"""

import pytest

from autograder.core import units
from autograder.course.check_unit import Check

CASE_STEPS = Check.STEPS[:Check.STEPS.index("mistakes") + 1]  # loading, the markers, job.py, the cases, the mistakes


@pytest.mark.parametrize("name", units.names())
def test_check_unit_finds_nothing_wrong_with_the_cases_of_a_unit_the_kit_ships(name):
    check = Check(name, nbgrader=False)
    for step in CASE_STEPS:
        getattr(check, step)()
    assert check.problems == [], "\n".join(check.problems)


def test_every_kind_of_probe_is_among_the_units_cases():
    """What the test above covers: sequences (behaviour contracts), modules and plain calls, in the units' cases."""
    from autograder.core.cases import build_cases

    ops = {case.probe.get("op") for name in units.names() for cases in build_cases(units.get(name)).values()
           for case in cases}
    assert {"call", "sequence", "module"} <= ops, ops


@pytest.mark.full
@pytest.mark.parametrize("name", units.names())
def test_check_unit_passes_in_full_on_every_unit_the_kit_ships(name):
    """The whole check, nbgrader's release included, as `python -m autograder check-unit NAME` runs it."""
    import subprocess
    import sys

    from autograder.course.build import ROOT

    run = subprocess.run([sys.executable, "-m", "autograder", "check-unit", name], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0 and f"{name}: every check passes." in run.stdout, run.stdout[-4000:] + run.stderr[-2000:]
