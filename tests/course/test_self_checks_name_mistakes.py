"""The self-checks speak the grade's words (issue 37, point 3): a mistake the grade names is named by
``pytest -k TASK`` on the same code, wherever a self-check's own inputs show it.

The mistakes are every declared mistake (the ``Mistake`` entries of each task's cases module) that some self-check's
call shows, read from each unit's built table (``known_mistakes.json``, made by autograder/course/mistake_table.py);
the tasks from the units' registry. Each is made by a submission (tests/helpers/declared_mistakes.py: the reference with the
task's function giving that mistake's output) and checked the way a student checks it, ``pytest -k TASK`` in a copy
of the built student folder. Where the checks fail, they must name the mistake in the grade's words (the line
``autograder/core/cases.likely`` makes), and name nothing that the submission does not do.
"""

import inspect
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder.core import units
from autograder.core.cases import build_cases, likely
from autograder.course.build import student_folder
from autograder.course.mistake_table import FILE_NAME
from declared_mistakes import submission

UNITS = units.all_units()
HEADING = "the grade's name for this mistake"
OTHER = "Or, with exactly this output on every call that shows it: "


def _table(unit):
    return json.loads((student_folder(unit) / FILE_NAME).read_text(encoding="utf-8"))


def _shown():
    """(unit, task, function, words) of every declared mistake that some self-check's call shows, in the table's
    order (each task's mistakes as its cases module declares them)."""
    found = []
    for unit in UNITS:
        table = _table(unit)
        for task in unit.rubric.TASK_NAMES:
            seen = {}
            for check in sorted(table):
                for entry in table[check]:
                    if unit.rubric.TASK_OF_FUNCTION.get(entry["function"]) == task:
                        for words, _ in entry["mistakes"]:
                            seen.setdefault(words, entry["function"])
            found += [(unit.name, task, function, words) for words, function in seen.items()]
    return found


SHOWN = _shown()


BATCH = Path(__file__).parents[1] / "helpers" / "self_check_batch.py"


class Run:
    """What pytest printed and returned on one run."""

    def __init__(self, output):
        self.stdout = Path(output).read_text(encoding="utf-8")
        self.returncode = int(Path(output + ".rc").read_text(encoding="utf-8"))
        self.stderr = ""


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    """{(unit, task, words): pytest's run of ``-k task`` on the submission that makes that mistake}, for the
    mistakes whose tests this session runs. Each run is ``pytest -k TASK`` in a student folder of its own; the
    runs share two processes (tests/helpers/self_check_batch.py), which import torch once each."""
    chosen = [item.callspec.params for item in request.session.items
              if item.originalname == "test_the_self_checks_name_a_mistake_as_the_grade_does"]
    chosen = [item for item in SHOWN if dict(zip(("unit_name", "task", "function", "words"), item)) in chosen]
    root = tmp_path_factory.mktemp("self_checks")
    planned = []
    for at, (unit_name, task, function, words) in enumerate(chosen):
        unit = units.get(unit_name)
        folder = root / f"{at}_{task}" / "student"
        shutil.copytree(student_folder(unit), folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        (folder / f"{unit.module_name}.py").write_text(submission(unit, function, words), encoding="utf-8")
        planned.append((str(folder), task, str(root / f"{at}.out")))
    halves = [planned[0::2], planned[1::2]]
    processes = []
    for half, runs_file in zip(halves, (root / "runs0.json", root / "runs1.json")):
        runs_file.write_text(json.dumps(half), encoding="utf-8")
        processes.append(subprocess.Popen([sys.executable, str(BATCH), str(runs_file)],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for process in processes:
        said, _ = process.communicate(timeout=1800)
        assert process.returncode == 0, said[-4000:]
    return {item[:2] + item[3:]: Run(output) for item, (_, _, output) in zip(chosen, planned)}


def _named(stdout):
    """The names each failed check gives, one set a check: its "Likely mistake" and the "Or" lines after it."""
    named = []
    for section in stdout.split(HEADING)[1:]:
        names = set()
        for line in section.splitlines():
            if line.startswith("Likely mistake: "):
                names.add(line.removeprefix("Likely mistake: "))
            elif line.startswith(OTHER):
                names.add(line.removeprefix(OTHER))
        named.append(names)
    return named


def test_every_task_has_declared_mistakes_that_its_self_checks_show():
    """The registry's tasks whose graded name is a function, each with a table to name its mistakes from."""
    for unit in UNITS:
        reference = unit.reference
        shown = {task for name, task, _, _ in SHOWN if name == unit.name}
        for name, task in unit.rubric.TASK_OF_FUNCTION.items():
            if inspect.isclass(getattr(reference, name)):
                continue  # a module's forward is called through its instance: not recorded (see the report)
            assert hasattr(unit.cases_module(task), "check_at"), f"{unit.name}: {task} declares no check_at"
            assert task in shown, f"{unit.name}: no self-check of {task} shows any declared mistake"


@pytest.mark.parametrize("unit_name, task, function, words", SHOWN,
                         ids=[f"{task}:{at}" for at, (_, task, _, _) in enumerate(SHOWN)])
def test_the_self_checks_name_a_mistake_as_the_grade_does(runs, unit_name, task, function, words):
    run = runs[unit_name, task, words]
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-2000:]
    # A self-check whose call shows the mistake (its output there is not the right one) and passes anyway holds a
    # property the mistake keeps: the student would see nothing, so a check that compares values is missing.
    assert run.returncode == 1, f"pytest -k {task} passes on this mistake, which its self-checks' calls show"
    said = likely((words,))  # the grade's line
    assert said in run.stdout or f"{OTHER}{words}" in run.stdout, \
        f"pytest -k {task} fails but does not say {said!r}:\n{run.stdout[-4000:]}"
    for names in _named(run.stdout):  # no check names a mistake this submission does not make
        assert words in names, (names, run.stdout[-4000:])
    # The failure points at the check's own line: the comparison helpers' frames in checks.py are hidden from pytest
    # (__tracebackhide__), which would otherwise show their raise line and parse the long file for each failure.
    assert "checks.py:" not in run.stdout, run.stdout[-4000:]


def _random_draws(value):
    """The floating tensors in a case's probe that hold a random draw (not whole numbers), for the next test."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.device.type == "cpu":
            scaled = value.double().flatten() * 1024  # a value a case writes by hand is a whole number of 1/1024ths
            if len(set(scaled[scaled != scaled.round()].tolist())) >= 8:
                yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _random_draws(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _random_draws(item)


def _sums(node):
    """Every (sum, sum of |values|) pair of a tensor's fingerprint in the table."""
    if isinstance(node, list):
        if node[:1] == ["tensor"] and len(node) == 7:
            yield (node[4], node[5])
        for item in node:
            yield from _sums(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from _sums(item)


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_the_table_holds_no_hidden_input(unit):
    """The table's calls are the self-checks' own: no random input of the hidden cases (drawn with the unit's seed or
    a student's) is among them; and the table names no test, case id or call of the hidden cases."""
    text = (student_folder(unit) / FILE_NAME).read_text(encoding="utf-8")
    table = json.loads(text)
    assert table, f"{unit.name}: an empty table names nothing"
    public = {(round(a, 6), round(b, 6)) for a, b in _sums(table)}
    hidden_labels = set()
    for seed in (unit.rubric.SEED, 12345):
        for cases in build_cases(unit, seed).values():
            for case in cases:
                hidden_labels.add(case.id)
                for tensor in _random_draws(case.probe):
                    values = tensor.double()
                    assert (round(float(values.sum()), 6), round(float(values.abs().sum()), 6)) not in public, \
                        (case.id, case.label)
    assert not [label for label in hidden_labels if re.search(rf'"{re.escape(label)}"', text)]
    assert all(check.startswith("test_") and "::" in check for check in table)
