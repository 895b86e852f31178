"""The self-checks warn before the grade does: every known mistake fails its own task's `pytest -k TASK`, and no
correct formulation does.

The known mistakes: the first unit's sample class (samples.py's MISTAKES, the reference with one line changed)
and every unit's blind set (tests/submissions/blind/<unit>/mistakes/, each file a function appended after the
reference, its name starting with its task). The correct ones: each unit's reference (every self-check) and the
blind sets' alternatives/. Each submission is put in a built student folder as the student's module and checked
the way a student checks it, one pytest per submission (forked from a process that has imported torch once:
tests/helpers/forked_pytest.py; tests/course/test_self_checks.py starts pytest as a student does).

Measured on the self-checks as they were before issue 24 item 7: 18 of the 92 mistakes passed their task's
checks (2 of biased_scores, 1 of learned, 2 of t5_bias, 2 of t5_bucket, 2 of alibi_bias, 2 of apply_rotary,
4 of rope_scores, 1 of rotary_angles, 2 of scaled_positions); no correct formulation failed.
"""

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import forked_pytest
from autograder.core import units
from autograder.course.build import student_folder
from autograder.units.positional_encodings.samples import MISTAKES
from autograder.ways_in.demo import apply
from test_self_checks import _student_folder, second_unit  # noqa: F401  (second_unit: a fixture used here)

BLIND = Path(__file__).parents[1] / "submissions" / "blind"
UNITS = tuple(unit.name for unit in units.all_units())
MODULE = {name: f"{units.get(name).module_name}.py" for name in UNITS}


def _blind(kind):
    return [(unit, path) for unit in UNITS for path in sorted((BLIND / unit / kind).glob("*.py"))]


# (id, unit, task, the file appended after the reference or the sample mistake)
KNOWN_MISTAKES = ([(f"sample:{m.name}", "positional_encodings", m.task, m) for m in MISTAKES]
                  + [(f"{unit}:{path.stem}", unit, path.stem.split("__")[0], path) for unit, path in _blind("mistakes")])
ALTERNATIVES = [(f"{unit}:{path.stem}", unit, path.stem.split("__")[0], path) for unit, path in _blind("alternatives")]


@pytest.fixture(scope="module")
def checked(tmp_path_factory, reference_text, second_unit):  # noqa: F811
    """{id: pytest's run}: each submission's own task's self-checks, and each unit's whole set on its reference."""
    built = {"positional_encodings": _student_folder(tmp_path_factory.mktemp("positional_encodings"), reference_text),
             "rotary_alibi": second_unit[1]}
    for name in UNITS:  # the others: the built student folder, its module the finished reference (what a unit
        if name not in built:  # borrows written in, as the release gives it)
            target = tmp_path_factory.mktemp(name) / "student"
            shutil.copytree(student_folder(units.get(name)), target,
                            ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
            (target / MODULE[name]).write_text(units.get(name).finished_reference, encoding="utf-8")
            built[name] = target
    references = {unit: (folder / MODULE[unit]).read_text(encoding="utf-8") for unit, folder in built.items()}

    def folder_with(name, unit, text):
        target = tmp_path_factory.mktemp(name.replace(":", "_")) / "student"
        shutil.copytree(built[unit], target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        (target / MODULE[unit]).write_text(text, encoding="utf-8")
        return target

    def text(unit, source):
        if isinstance(source, Path):
            return references[unit] + "\n\n" + source.read_text(encoding="utf-8")
        return apply(source, references[unit])

    def pytest_in(folder, *args):
        return forked_pytest.run(folder, "-p", "no:cacheprovider", *args)

    jobs = [(f"reference:{unit}", lambda unit=unit: pytest_in(built[unit])) for unit in UNITS]
    jobs += [(name, lambda name=name, unit=unit, task=task, source=source:
              pytest_in(folder_with(name, unit, text(unit, source)), "-k", task))
             for name, unit, task, source in KNOWN_MISTAKES + ALTERNATIVES]
    # The plugins of this environment (hypothesis, ...) are no part of a student's folder, and cost a second a run.
    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(max(2, os.cpu_count() or 2)) as pool:
        patch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
        return dict(zip([name for name, _ in jobs], pool.map(lambda job: job[1](), jobs)))


@pytest.mark.parametrize("unit", UNITS)
def test_every_self_check_passes_on_the_units_reference(checked, unit):
    run = checked[f"reference:{unit}"]
    assert run.returncode == 0 and " passed" in run.stdout and "failed" not in run.stdout, run.stdout[-3000:]


@pytest.mark.parametrize("name, unit, task, source", ALTERNATIVES, ids=[case[0] for case in ALTERNATIVES])
def test_a_correct_formulation_passes_its_tasks_self_checks(checked, name, unit, task, source):
    run = checked[name]
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-3000:]


@pytest.mark.parametrize("name, unit, task, source", KNOWN_MISTAKES, ids=[case[0] for case in KNOWN_MISTAKES])
def test_a_known_mistake_fails_its_tasks_self_checks(checked, name, unit, task, source):
    run = checked[name]
    assert run.returncode == 1 and " failed" in run.stdout, \
        f"pytest -k {task} passes on this mistake: the student is told nothing before the grade\n{run.stdout[-2000:]}"
