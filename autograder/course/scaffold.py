"""A new unit of study from a skeleton that grades from the start, and the check that a unit is complete.

``new_unit(name)`` writes the files of a unit (its reference ``solutions/<name>.py``, and its rubric, cases, job,
lesson, self-checks and sample class in ``autograder/units/<name>/``) around one toy task, ``<name>_ramp``: a
placeholder, complete and valid as written, so that ``check_unit`` passes on it untouched and the author replaces
it one file at a time, checking as they go. The toy task is named after the unit, so that two fresh skeletons
never share a test id (an nbgrader grade id of the one course).

``check_unit(name)`` returns what is wrong with a unit, each problem with the file to fix: it loads; its cases
build and cover every task and test; each declared mistake is caught by its own task's cases; its timed paths are
declared consistently; the build makes its student folder and notebook; the reference scores full marks and the
stubs nothing; its self-checks pass on the reference and fail on the stubs; and nbgrader generates its release.
``docs/writing-a-unit.md`` is the guide.
"""

import ast
import importlib
import importlib.util
import inspect
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.core import parsing

ROOT = Path(__file__).resolve().parents[2]
LONGEST_NAME = 30  # nbformat caps a cell id at 64 characters, and every grade id starts with the unit's name
# Names a unit's module cannot take: files beside it in the student folder, the names the job gives code, the
# timing tier's task, and the kit's own top-level folders.
# What check-unit runs beyond the grader (pytest for the self-checks, nbgrader for the release): pyproject.toml's
# ``unit`` extra brings them, and a problem that finds one missing says this line.
INSTALL_UNIT_TOOLS = 'pip install -e ".[unit]"'
RESERVED = {"checks", "notebook_loader", "conftest", "submission", "unit_job", "timing", "solutions", "autograder",
            "assignments", "tests", "benchmarks", "docs", "dist", "build", "site"}


class ScaffoldError(Exception):
    """The command cannot do what it was asked (a name refused, no such unit); the message says why."""


# --- the skeleton ----------------------------------------------------------------------------------------------
# Each file's text, with __UNIT__, __TASK__, __TITLE__, __ORDER__ and __SEED__ put in by new_unit().

REFERENCE = '''\
"""__TITLE__: the reference of the unit __UNIT__, every answer of it once.

TODO: replace this skeleton (written by `python -m autograder new-unit __UNIT__`) with the unit's tasks. Its one
task, ``__TASK__``, is a toy placeholder that grades from the start. Each answer lies between the markers
``### BEGIN SOLUTION`` and ``### END SOLUTION``: the build turns each region into a stub that raises
NotImplementedError, and nbgrader clears it from the notebook; everything outside them (signatures, docstrings,
imports) is what students receive.

Conventions used everywhere: positions are counted from 0; ``B`` is the batch size, ``L`` the number of
positions, ``d`` the number of features. No Python loop over positions.
"""

import torch


def __TASK__(x, *, scale=1.0):
    """A toy positional encoding: add each position's index, times ``scale``, to every feature of its row.

        out[b, t, i] = x[b, t, i] + scale * t

    TODO: a placeholder, there to show the form a task takes; replace it with a task of the unit.

    Args:
        x: (B, L, d) float tensor: B sequences of L positions, d features each.
        scale: a number, the slope of the ramp (0 and negative numbers included).

    Returns:
        out: (B, L, d) tensor of the dtype and device of ``x``; ``x`` itself is left as it was.

    Raises:
        ValueError: if ``x`` is not three-dimensional, (B, L, d).

    Convention the grader expects: positions counted from 0 (the first row of each sequence comes back
    unchanged), computed in the dtype of ``x``, into a new tensor.

    Worked example: x = torch.zeros(1, 3, 2) and scale = 0.5 give
    [[[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]].

    Paper: TODO (the paper the task comes from: its authors, year, and the equation this implements).
    """
    ### BEGIN SOLUTION
    if x.dim() != 3:
        raise ValueError(f"x must be (B, L, d), got a tensor of shape {tuple(x.shape)}")
    positions = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)  # (L,)
    return x + scale * positions[:, None]  # (B, L, d): one value per row, broadcast over B and d
    ### END SOLUTION
'''

PACKAGE = '''\
"""The unit __UNIT__ (__TITLE__): its rubric, hidden cases, job code, lesson and self-checks.

TODO: say in a line what the unit teaches. Its reference is solutions/__UNIT__.py; autograder/core/units.py
says what each file here must hold, and docs/writing-a-unit.md how to write them.
"""
'''

RUBRIC = '''\
"""The rubric of the unit __UNIT__, in one place: its tasks, their tests and points, and its seed.

TODO: replace the toy task __TASK__ with the unit's tasks. A test id is ``<task>_<what>``, unique across every
unit (the ids are the nbgrader grade ids of one course); a test is all or nothing, and the unit's points come
to 100. Each task's hidden cases are in ``cases/<task>.py``. To time a score path, add a TimedPath, its test
(task "timing") and what job.py needs for it (docs/writing-a-unit.md walks through a worked example).
"""

from autograder.core.rubric import Task, Test, complete

TITLE = "__TITLE__"  # TODO: the unit's title, as the course, the table and the feedback show it
ORDER = __ORDER__  # its place in the course: after the units before it
SEED = __SEED__  # the seed its hidden cases are drawn from (each unit its own)

# In the lesson's order: the feedback, the table and grades.csv follow it.
TASKS = (
    Task("__TASK__", "A toy position ramp (a placeholder)", ("__TASK__",)),
)

TESTS = (
    Test("__TASK___values", "__TASK__", 80, "x + scale * t for several shapes, scales and dtypes"),
    # Points for refusing bad arguments only go to a function that also works on good ones (``needs``).
    Test("__TASK___invalid_args", "__TASK__", 20, "ValueError for an x that is not (B, L, d)",
         needs="__TASK___values"),
)

complete(globals())
'''

CASES_PACKAGE = '''\
"""The hidden cases of the unit __UNIT__. TODO: a module beside this one for each task of the rubric, named after
the task, with ``build(rng, generator)``; nothing to write in this file."""
'''

CASES = '''\
"""Hidden cases for ``__TASK__``. Tolerance: float32's rounding of the sum (rtol 1e-6), float64's (1e-12).

TODO: replace these with the cases of the unit's tasks, a module each, named after its task. ``build(rng,
generator)`` returns the task's cases; it draws sizes from ``rng`` (a random.Random) and tensors from
``generator`` (a torch.Generator), both seeded from the rubric's SEED, so every run grades with the same cases.
Give every axis a size of its own, so that a swapped axis shows. A case is the call sent to the student's code
(call_probe), the call as the student reads it (call_label) and a check run on the grader's side: tensor_check
compares with the reference's output, raises_check expects an error. A Mistake is a known wrong formulation:
the output it computes, and what to tell the student when theirs is that one. `check-unit` makes sure that each
is caught by at least one scored case of its task.
"""

import torch

from autograder.core.cases import Case, Mistake, call_label, call_probe, raises_check, tensor_check
from autograder.core.contracts import Contract, Factor, contract_cases
from solutions import __UNIT__ as ref

NAME = "__TASK__"

# What a condition of failure usually means ({(feature, value): words}, from the cases' features): said when no
# known mistake explains a wrong output.
HINTS = {
    ("scale", "scale != 1"): "with scale = 1 it works: look at where scale enters the formula",
    ("scale", "scale 0.0"): "0.0 is a scale like any other: test `scale is None`, not `if not scale`",
}


def _mistakes(x, scale):
    """The usual slips, each as the output it gives on these inputs."""
    ramp = torch.arange(x.shape[1], dtype=x.dtype)  # (L,)
    return [
        Mistake("the positions are counted from 1: the first row gets scale * 1; count them from 0, so that the "
                "first row of each sequence comes back unchanged.",
                lambda: x + scale * (ramp + 1)[:, None]),
        Mistake("the ramp runs along the features (index i), not the positions (index t): every feature of a row "
                "gets the same scale * t.",
                lambda: x + scale * torch.arange(x.shape[2], dtype=x.dtype)),
        Mistake("scale is left out: the ramp rises by 1 a position, not by scale.",
                lambda: x + ramp[:, None]),
    ]


def _case(test, x, scale):
    kwargs = {"scale": scale}
    label = call_label(NAME, [x], kwargs)
    expected = ref.__TASK__(x, scale=scale)
    rtol = 1e-12 if x.dtype == torch.float64 else 1e-6
    atol = rtol * (1 + abs(scale) * x.shape[1])  # the rounding of the ramp's largest value
    check = tensor_check(label, expected, atol=atol, rtol=rtol, mistakes=_mistakes(x, scale),
                         axes=("batch", "position", "feature"), inputs=("x",))
    return Case(test, label, call_probe(NAME, [x], kwargs), check,
                features={"scale": "scale 1" if scale == 1 else "scale 0.0" if scale == 0 else "scale != 1",
                          "dtype": f"dtype {str(x.dtype).replace('torch.', '')}",
                          "positions": "one position" if x.shape[1] == 1 else "several positions"},
                sizes={"B": x.shape[0], "L": x.shape[1], "d": x.shape[2]})


# The contract: each way the docstring lets a call vary, as factors with levels named as the cases' features
# name them. contract_cases sends one case per row of a covering design: every level, and every pair of levels of
# two factors, in some case (tests/core/test_contracts.py holds every unit's contracts to it). TODO: your function's.
def _from_contract(levels, rng, generator):
    dtype = getattr(torch, levels["dtype"].split()[-1])
    length = 1 if levels["positions"] == "one position" else rng.randint(2, 9)
    scale = {"scale 1": 1.0, "scale 0.0": 0.0, "scale != 1": rng.choice([0.5, -2.0, 3.0])}[levels["scale"]]
    x = torch.randn(rng.randint(1, 3), length, rng.randint(2, 5), generator=generator, dtype=torch.float64)
    return _case("__TASK___values", x.to(dtype), scale)


CONTRACT = Contract(NAME, (
    Factor("dtype", ("dtype float32", "dtype float64")),
    Factor("scale", ("scale 1", "scale 0.0", "scale != 1")),
    Factor("positions", ("one position", "several positions")),
), _from_contract)


def build(rng, generator):
    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=generator).to(dtype)

    cases = contract_cases(CONTRACT, rng, generator) + [
        _case("__TASK___values", randn(2, 3, 4), 1.0),
        _case("__TASK___values", randn(3, rng.randint(5, 40), 5), 0.5),
        _case("__TASK___values", randn(1, 7, 2), -2.0),
        _case("__TASK___values", randn(2, 6, 3, dtype=torch.float64), rng.choice([0.25, 3.0])),
        _case("__TASK___values", randn(4, 1, 3), 2.0),  # one position: its row is x itself
    ]
    for shape in ((4, 5), (2, 3, 4, 5)):
        x = randn(*shape)
        label = call_label(NAME, [x])
        cases.append(Case("__TASK___invalid_args", label, call_probe(NAME, [x]),
                          raises_check(label, "ValueError", f" (x must be (B, L, d), not of shape {shape})")))
    return cases
'''

JOB = '''\
"""The unit __UNIT__'s code that runs in a job, beside the student's: nothing yet but the empty tables.

It imports torch and nothing of the grader: its text is sent with each job. TODO, only where the unit needs it:
* STAND_INS, {name: function}: the grader's stand-in for a helper task, so that a task that calls another is
  graded on its own (a case's ``call_probe(..., substitute=...)`` names it, as a TimedPath's helpers do);
* VIEWS, {name: function}: what makes one tensor of a value a function returns (``call_probe(..., view=...)``);
* ``timing_inputs(spec, draw)`` and ``score_path(namespace, spec)``, for the rubric's TIMED_PATHS: the
  inputs of a timed path, each made by ``draw(*shape)`` (a fresh tensor of the spec's dtype on its device, new
  values each call), and the call of the path named ``spec["path"]``, as the
  code of ``namespace`` wrote it (docs/writing-a-unit.md shows both).
"""

STAND_INS = {}
VIEWS = {}
'''

LESSON = '''\
# The lesson of the unit __UNIT__, as text. `python -m autograder build` turns it into nbgrader's source notebook
# assignments/source/__UNIT__/__UNIT__.ipynb; edit this file, not that one.
# TODO: replace the toy part below with the unit's lesson. The cell kinds: [markdown]; plain code; [demo: NAME]
# (read-only, not graded); [solution: FUNCTION] (left empty: the build puts the function from
# solutions/__UNIT__.py there); [tests: TEST_ID] (a graded cell for each test of the rubric, after its task's
# solution cells: the visible checks here, the hidden ones added by the build). No answer may appear here.

# %% [markdown]
# # __TITLE__
#
# TODO: why this matters and what the student builds, then a table of the parts (the points come from the
# rubric).
#
# | part | what | your task (the `pytest -k` word) | points |
# |---|---|---|---|
# | 1 | a toy position ramp (a placeholder) | `__TASK__` | {points:__TASK__} |
#
# **Rules of the game.** No Python loop over positions. Positions are counted from 0. `B` is the batch size,
# `L` the number of positions, `d` the number of features.

# %%
import torch

# %% [demo: setup]
# The checks the test cells use. This cell is read-only.
from checks import assert_close, assert_raises

# %% [markdown]
# ## 1. A toy position ramp
#
# TODO: the idea, the equation, then the code. The placeholder adds its position's index, times a slope $s$, to
# every feature of a row:
#
# $$ \\text{out}_{b,t,i} = x_{b,t,i} + s \\cdot t $$

# %% [solution: __TASK__]

# %% [tests: __TASK___values]
assert_close(__TASK__(torch.zeros(1, 3, 2), scale=0.5), torch.tensor([[[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]]),
             what="__TASK__(torch.zeros(1, 3, 2), scale=0.5)", atol=1e-6,
             hint="position t adds scale * t to every feature of its row, counted from 0.")

# %% [tests: __TASK___invalid_args]
assert_raises(ValueError, __TASK__, torch.zeros(3, 4), hint="x must be three-dimensional, (B, L, d).")
'''

SELF_CHECKS = '''\
"""Self-checks for task __TASK__: __TASK__. Run: pytest -k __TASK__

TODO: replace these with the checks of the unit's tasks, a file ``test_<task>.py`` each: the shape first, then
the values of a small worked example, then the errors the contract asks for. They import the student's module,
__UNIT__, and the comparison helpers of checks.py.
"""

import pytest
import torch

from checks import assert_close
from __UNIT__ import __TASK__


def test___TASK___keeps_the_shape_of_x():
    got = __TASK__(torch.zeros(2, 3, 4))
    assert tuple(got.shape) == (2, 3, 4), f"x of shape (2, 3, 4) should give (2, 3, 4), got {tuple(got.shape)}"


def test___TASK___matches_the_worked_example():
    assert_close(__TASK__(torch.zeros(1, 3, 2), scale=0.5), torch.tensor([[[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]]),
                 what="__TASK__(torch.zeros(1, 3, 2), scale=0.5)", atol=1e-6,
                 hint="position t adds scale * t to every feature of its row, counted from 0.")


@pytest.mark.parametrize("shape", [(3, 4), (1, 2, 3, 4)])
def test___TASK___rejects_an_x_that_is_not_three_dimensional(shape):
    with pytest.raises(ValueError):
        __TASK__(torch.zeros(shape))
'''

SAMPLES = '''\
"""The unit __UNIT__'s sample class, for `python -m autograder demo --unit __UNIT__`.

TODO: replace it with typical mistakes of the unit's tasks. Each is the reference with one line changed: the
sample's file name, the task it should lose points on, words the feedback must say, the text as the reference
has it (found exactly once), and as the student wrote it. `check-unit` grades each.
"""

from autograder.core.rubric import SampleMistake

MISTAKES = (
    SampleMistake("counted_from_one", "__TASK__", "counted from 1",
                  "positions = torch.arange(x.shape[1], device=x.device, dtype=x.dtype)",
                  "positions = torch.arange(1, x.shape[1] + 1, device=x.device, dtype=x.dtype)"),
)
'''


def skeleton_files(name, task):
    """{path relative to the repository: template} of a unit's skeleton."""
    unit = f"autograder/units/{name}"
    return {
        f"solutions/{name}.py": REFERENCE,
        f"{unit}/__init__.py": PACKAGE,
        f"{unit}/rubric.py": RUBRIC,
        f"{unit}/cases/__init__.py": CASES_PACKAGE,
        f"{unit}/cases/{task}.py": CASES,
        f"{unit}/job.py": JOB,
        f"{unit}/lesson.py": LESSON,
        f"{unit}/self_checks/test_{task}.py": SELF_CHECKS,
        f"{unit}/samples.py": SAMPLES,
    }


def _declared(root):
    """What the units under ``root`` declare, read from their rubrics' text (nothing imported): their ORDERs,
    test ids and the file names they ship."""
    orders, ids, shipped = [], set(), set()
    for rubric in sorted((Path(root) / "autograder" / "units").glob("*/rubric.py")):
        try:
            tree = parsing.parse(rubric.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = node.targets[0].id
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    continue
                if target == "ORDER" and isinstance(value, (int, float)):
                    orders.append(value)
                elif target == "SHIPPED":
                    shipped |= {Path(str(item)).stem for item in value}
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Test"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                ids.add(node.args[0].value)
    return orders, ids, shipped


def refusal(name, root=ROOT):
    """Why ``name`` cannot be a new unit under ``root``, or None where it can."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        return (f"{name!r} is not a lower-case Python identifier (letters a-z, digits and _, starting with a "
                "letter): a unit's name is the module its students write")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return f"{name!r} is a Python keyword: students could not import a module of that name"
    if len(name) > LONGEST_NAME:
        return (f"{name!r} is longer than {LONGEST_NAME} characters: every grade id starts with it, and nbformat "
                "caps a cell id at 64")
    if name.startswith("test"):
        return f"{name!r} starts with 'test': pytest would collect the students' module as a test file"
    root = Path(root)
    if (root / "autograder" / "units" / name).exists():
        return f"a unit called {name!r} exists already (autograder/units/{name}/)"
    _, ids, shipped = _declared(root)
    if name in RESERVED or name in shipped or name in sys.stdlib_module_names:
        return f"{name!r} is the name of a module the kit or Python uses already: the students' module would hide it"
    if importlib.util.find_spec(name) is not None:
        return (f"{name!r} is the name of an importable module (an installed package, or a folder of the kit): "
                "the students' module would hide it in the job")
    task = f"{name}_ramp"
    taken = sorted(ids & {f"{task}_values", f"{task}_invalid_args"})
    if taken:
        return f"another unit has a test called {taken[0]}: test ids must differ across units; choose another name"
    existing = [path for path in skeleton_files(name, task) if (root / path).exists()]
    if existing:
        return f"{', '.join(existing)} exist already; move them away first"
    return None


def new_unit(name, root=ROOT):
    """Write the skeleton of the unit ``name`` under ``root``; returns the paths written.

    Raises ScaffoldError, writing nothing, where ``name`` cannot be a unit's (see ``refusal``)."""
    why = refusal(name, root)
    if why:
        raise ScaffoldError(why)
    root = Path(root)
    task = f"{name}_ramp"
    orders, _, _ = _declared(root)
    values = {"__UNIT__": name, "__TASK__": task, "__TITLE__": name.replace("_", " ").capitalize(),
              "__ORDER__": str(int(max(orders, default=0)) + 1),
              "__SEED__": str(20_000_000 + zlib.crc32(name.encode()) % 10_000_000)}
    written = []
    for relative, template in skeleton_files(name, task).items():
        text = template
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


# --- the check -------------------------------------------------------------------------------------------------

def check_unit(name, nbgrader=True, root=ROOT):
    """Every problem found with the unit ``name`` (empty: it is complete and grades right), each saying what is
    wrong and where to fix it. With ``nbgrader``, nbgrader also generates the unit's release.

    A unit under another ``root`` (a copy of the kit) is checked by that copy's own code, in a process of its own.
    Raises ScaffoldError where there is no such unit."""
    root = Path(root).resolve()
    if root != ROOT:
        return _check_in(root, name, nbgrader)
    from autograder.core import units

    importlib.invalidate_caches()  # a unit written since this process started
    units.names.cache_clear()
    folder = units.FOLDER / name
    if not isinstance(name, str) or not name.isidentifier() or not (folder / "rubric.py").is_file():
        known = sorted(path.parent.name for path in units.FOLDER.glob("*/rubric.py"))
        raise ScaffoldError(f"no unit called {name!r} (no autograder/units/{name}/rubric.py); the units are "
                            f"{', '.join(known)}")
    return Check(name, nbgrader).run()


_CHECK_ELSEWHERE = """
import json, sys
from autograder.course.scaffold import ScaffoldError, check_unit
try:
    found = {"problems": check_unit(sys.argv[1], nbgrader=sys.argv[2] == "1")}
except ScaffoldError as error:
    found = {"refused": str(error)}
print("\\n" + json.dumps(found))
"""


def _check_in(root, name, nbgrader):
    path = [str(root)] + [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    process = subprocess.run([sys.executable, "-c", _CHECK_ELSEWHERE, name, "1" if nbgrader else "0"], cwd=root,
                             env=environment, capture_output=True, text=True)
    lines = process.stdout.strip().splitlines()
    try:
        found = json.loads(lines[-1])
    except (IndexError, ValueError):
        return [f"the check of {name} in {root} ended without a verdict (exit {process.returncode}):\n"
                + process.stderr[-3000:]]
    if "refused" in found:
        raise ScaffoldError(found["refused"])
    return found["problems"]


def _where(error, *inside):
    """", at PATH, line N: CODE" for the deepest line ``error`` went through in one of the files or folders
    ``inside`` (a unit's own), or "" where it went through none of them (a message of the core's says enough)."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename).resolve()
        if any(path == place or path.is_relative_to(place) for place in inside):
            return f", at {path.relative_to(ROOT)}, line {frame.lineno}" + (
                f": {frame.line.strip()}" if frame.line else "")
    return ""


def _error(error):
    return f"{type(error).__name__}: {error}".rstrip(": ")


class Check:
    """One run of check_unit over a unit of this kit: each method a check, adding to ``problems``."""

    def __init__(self, name, nbgrader=True):
        self.name, self.nbgrader, self.problems, self.blocked = name, nbgrader, [], False
        self.where = f"autograder/units/{name}"
        self.reference_file = f"solutions/{name}.py"

    def at(self, error):
        """Where in the unit's own files (its folder, its reference) ``error`` was raised, for a message."""
        return _where(error, ROOT / self.where, ROOT / self.reference_file)

    def problem(self, text, blocking=True):
        """Add a problem; a ``blocking`` one, found by one of the first checks, stops the checks there."""
        self.problems.append(text)
        self.blocked = self.blocked or blocking

    # The checks in order. After a problem that leaves a later check nothing sound to work on (the rubric does not
    # load, the cases do not build, a timed path names what is not there), the checks stop there.
    STEPS = ("load", "reference_and_markers", "job_code", "cases", "timed_paths", "mistakes", "build", "grading",
             "self_checks", "release")
    BLOCKING = STEPS[:5]

    def run(self):
        for step in self.STEPS:
            if step == "release" and not self.nbgrader:
                continue
            getattr(self, step)()
            if step in self.BLOCKING and self.blocked:
                later = [name.replace("_", " ") for name in self.STEPS[self.STEPS.index(step) + 1:]
                         if self.nbgrader or name != "release"]
                if later:
                    self.problems.append(f"(not checked until the problems above are fixed: {', '.join(later)})")
                break
        return self.problems

    # -- the unit loads ----------------------------------------------------------------------------------------
    def load(self):
        from autograder.core import units

        try:
            self.unit = unit = units.get(self.name)
            rubric = unit.rubric
        except Exception as error:
            self.problem(f"{self.where}/rubric.py does not load ({_error(error)}{self.at(error)}): fix it there; "
                         "it ends with complete(globals()), which checks each test's task, visibility and needs")
            return
        missing = [key for key in ("TITLE", "ORDER", "SEED", "TASKS", "TESTS") if not hasattr(rubric, key)]
        if missing:
            self.problem(f"{self.where}/rubric.py sets no {', '.join(missing)}: every rubric sets TITLE, ORDER, SEED, "
                         "TASKS and TESTS")
        if not hasattr(rubric, "TASK_NAMES"):
            self.problem(f"{self.where}/rubric.py does not end with complete(globals()): add it as its last line")
        if self.blocked:
            return
        names = [task.name for task in rubric.TASKS]
        for task in sorted({name for name in names if names.count(name) > 1}):
            self.problem(f"{self.where}/rubric.py has two tasks called {task}")
        ids = [test.id for test in rubric.TESTS]
        for test in sorted({test for test in ids if ids.count(test) > 1}):
            self.problem(f"{self.where}/rubric.py has two tests called {test}")
        for test in rubric.TESTS:
            if not re.fullmatch(r"[a-z][a-z0-9_]*", test.id) or len(test.id) > 60:
                self.problem(f"{self.where}/rubric.py: the test id {test.id!r} is no grade id nbgrader can use "
                             "(lower-case letters, digits and _, at most 60 characters)", blocking=False)
        for task in rubric.TASKS:
            if not rubric.tests_of(task.name):
                self.problem(f"task {task.name} has no test in {self.where}/rubric.py's TESTS: give it one, or "
                             "remove the task", blocking=False)
            if not task.functions:
                self.problem(f"task {task.name} names no function in {self.where}/rubric.py: Task(name, title, "
                             "(the functions students write for it,))")
        for test in rubric.tests_of(rubric.TIMING.name):
            if test.id not in {path.test for path in rubric.TIMED_PATHS}:
                self.problem(f"the test {test.id} is of the timing tier, but no TimedPath in {self.where}/rubric.py "
                             "names it: its points could never be given", blocking=False)
        if rubric.MAX_SCORE != 100:
            self.problem(f"the tests of {self.where}/rubric.py add up to {rubric.MAX_SCORE:g} points; every unit's "
                         "come to 100 (the course's scores are comparable)", blocking=False)
        for other in units.FOLDER.glob("*/rubric.py"):
            other_name = other.parent.name
            if other_name == self.name:
                continue
            try:
                theirs = {test.id for test in units.get(other_name).rubric.TESTS}
            except Exception as error:
                self.problem(f"the unit {other_name} does not load ({_error(error)}): the course builds every unit, "
                             f"so fix autograder/units/{other_name}/rubric.py too")
                continue
            for test in sorted(theirs & set(ids)):
                self.problem(f"the test id {test} is also a test of the unit {other_name}: grade ids are unique in "
                             f"the course; rename it in {self.where}/rubric.py")
            if units.get(other_name).rubric.ORDER == rubric.ORDER:
                self.problem(f"the unit {other_name} has the same ORDER ({rubric.ORDER}): give each unit its own "
                             f"place in the course, in {self.where}/rubric.py", blocking=False)

    # -- the reference and its solution regions ----------------------------------------------------------------
    def reference_and_markers(self):
        from autograder.course.build import make_stub, solution_regions

        unit, rubric = self.unit, self.unit.rubric
        if not unit.reference_path.is_file():
            self.problem(f"there is no reference: write {self.reference_file}")
            return
        source = unit.reference_path.read_text(encoding="utf-8")
        try:
            tree = parsing.parse(source)
            regions = solution_regions(source)
        except (SyntaxError, ValueError) as error:
            self.problem(f"{self.reference_file} cannot be read: {_error(error)}")
            return
        defined = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        for function, task in rubric.TASK_OF_FUNCTION.items():
            node = defined.get(function)
            if node is None:
                self.problem(f"{function}, of task {task}, is not defined in {self.reference_file}: define it there "
                             f"(at the top level), or correct the task's functions in {self.where}/rubric.py")
            elif not any(node.lineno <= begin + 1 <= node.end_lineno for begin, _ in regions):
                self.problem(f"{function} in {self.reference_file} has no ### BEGIN SOLUTION / ### END SOLUTION "
                             "region: students would receive its answer; mark the lines to clear")
        self._borrowed(source, tree)
        if self.blocked:
            return
        try:
            make_stub(source, unit)
        except ValueError as error:
            self.problem(f"{self.reference_file}, {error}: put the function in a task of {self.where}/rubric.py, or "
                         "remove the markers")
        try:
            unit.reference
        except Exception as error:
            self.problem(f"{self.reference_file} does not import ({_error(error)}{self.at(error)})")

    def job_code(self):
        try:
            self.job = importlib.import_module(f"{self.unit.package}.job")
        except Exception as error:
            self.problem(f"{self.where}/job.py does not load ({_error(error)}{self.at(error)}): it runs in every "
                         "job, beside the student's code (STAND_INS = {} is all a unit without helpers needs)")
            return
        for table in ("STAND_INS", "VIEWS"):
            if not isinstance(getattr(self.job, table, {}), dict):
                self.problem(f"{table} in {self.where}/job.py is not a dict: {{name: function}}")

    def _borrowed(self, source, tree):
        """The rubric's BORROWS: other units' reference functions, each imported by the reference once, none of them
        (nor what the given code brings with it) a name of this unit's own tasks."""
        from autograder.core import units

        unit = self.unit
        where = f"{self.where}/rubric.py's BORROWS"
        imported = {}
        for node in tree.body:
            other = units._lender(node)
            if other is not None:
                imported.setdefault(other, []).extend(alias.name for alias in node.names)
        for other, functions in unit.borrowed.items():
            if other == self.name or other not in units.folder_names():
                self.problem(f"{where} names {other}, which is no other unit")
                continue
            if sorted(imported.get(other, [])) != sorted(functions):
                self.problem(f"{where} names {', '.join(functions)} of {other}: {self.reference_file} imports them "
                             f"once, by one line: from solutions.{other} import {', '.join(functions)}")
                continue
            try:
                given = parsing.parse(unit.given_code(other))
            except Exception as error:
                self.problem(f"{where}: the code borrowed from {other} cannot be given ({_error(error)})")
                continue
            bound = {node.name for node in given.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
            clash = sorted(bound & set(unit.rubric.TASK_OF_FUNCTION))
            if clash:
                self.problem(f"{where}: the code given from {other} defines {', '.join(clash)}, a function of this "
                             "unit's own tasks; the grader would run the given one in its place")
        for other in sorted(set(imported) - set(unit.borrowed)):
            self.problem(f"{self.reference_file} imports from {other}'s reference, which {where} does not name")

    # -- the hidden cases --------------------------------------------------------------------------------------
    def cases(self):
        from autograder.core.cases import build_cases

        unit, rubric = self.unit, self.unit.rubric
        for task in rubric.TASK_NAMES:
            path = unit.folder / "cases" / f"{task}.py"
            if not path.is_file():
                self.problem(f"task {task} has no cases: {self.where}/cases/{task}.py is missing (write build(rng, "
                             "generator) there, returning the task's cases)")
                continue
            module = self._module(task)
            if module is not None and not callable(getattr(module, "build", None)):
                self.problem(f"{self.where}/cases/{task}.py defines no build(rng, generator)")
        if self.blocked:
            return
        try:
            self.built = build_cases(unit, rubric.SEED)
        except Exception as error:
            matched = re.match(r"cases of (\w+) do not match", str(error))
            fix = (f"write a scored case for each test in {self.where}/cases/{matched.group(1)}.py, and name no "
                   "test the rubric does not have" if matched else
                   f"fix the cases in {self.where}/cases/ (or the reference they call)")
            self.problem(f"the cases of {self.name} do not build for its SEED ({_error(error)}{self.at(error)}): "
                         f"{fix}")
            return
        for task, cases in self.built.items():
            if not any(case.scored for case in cases):
                self.problem(f"task {task} has no scored case: {self.where}/cases/{task}.py's build returns none")
            self._probes(task, cases)

    def mistakes(self):
        for task, cases in self.built.items():
            self._mistakes_caught(task, cases)

    def _module(self, task):
        try:
            return self.unit.cases_module(task)
        except Exception as error:
            self.problem(f"{self.where}/cases/{task}.py does not import ({_error(error)}{self.at(error)})")
            return None

    def _probes(self, task, cases):
        """Each case calls a function of its own task, with stand-ins and views that job.py has: a problem once for
        all the cases that share it."""
        rubric, stand_ins, views = self.unit.rubric, getattr(self.job, "STAND_INS", {}), getattr(self.job, "VIEWS", {})
        found = {}
        for case in cases:
            probe = case.probe
            if rubric.TASK_OF_FUNCTION.get(probe.get("name")) != task:
                found.setdefault(f"call {probe.get('name')}, which is not a function of task {task}: a case calls its "
                                 "own task's functions", []).append(case.id)
            substitutes = probe.get("substitute") or []
            for substitute in [substitutes] if isinstance(substitutes, dict) else substitutes:
                if substitute.get("stand_in") not in stand_ins:
                    found.setdefault(f"swap in the stand-in {substitute.get('stand_in')}, which is not in STAND_INS of "
                                     f"{self.where}/job.py", []).append(case.id)
                if substitute.get("name") not in rubric.TASK_OF_FUNCTION:
                    found.setdefault(f"stand in for {substitute.get('name')}, which is no task's function",
                                     []).append(case.id)
            if probe.get("view") and probe["view"] not in views:
                found.setdefault(f"ask for the view {probe['view']}, which is not in VIEWS of {self.where}/job.py",
                                 []).append(case.id)
        for what, ids in found.items():
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            self.problem(f"the case(s) {shown} in {self.where}/cases/{task}.py {what}")

    def _mistakes_caught(self, task, cases):
        """Each Mistake a case of ``task`` declares must fail at least one scored case of the task: its output,
        sent back as a student's would be, is checked as the grader checks that case."""
        seen, caught, failed = {}, set(), {}
        for case in cases:
            for check, mistakes in _declared_mistakes(case.check):
                for mistake in mistakes:
                    seen.setdefault(mistake.explain, 0)
                    if not case.scored or mistake.explain in caught:
                        continue
                    seen[mistake.explain] += 1
                    try:
                        output = mistake.output()
                    except Exception as error:
                        failed.setdefault(mistake.explain, f"{case.id}: {_error(error)}")
                        continue
                    expected = check.expected
                    if hasattr(output, "dtype") and hasattr(expected, "dtype") and output.dtype != expected.dtype:
                        output = output.to(expected.dtype)  # the mistake is in the values, not the dtype
                    outcome = {"value": {"tensor": output, "device": str(getattr(output, "device", "cpu"))}}
                    judge = case.check if case.probe.get("op") == "call" else check
                    try:
                        if not judge(outcome).passed:
                            caught.add(mistake.explain)
                    except Exception as error:
                        failed.setdefault(mistake.explain, f"{case.id}: the check raised {_error(error)}")
        for explain, scored in seen.items():
            if explain in caught:
                continue
            short = explain if len(explain) <= 90 else explain[:87] + "..."
            if not scored:
                why = "it is declared on probes only, which are worth no points"
            elif explain in failed:
                why = f"its output could not be computed or checked ({failed[explain]})"
            else:
                why = (f"on each of the {scored} scored case(s) that declare it, its output passes the check, so no "
                       "student who makes it loses a point")
            self.problem(f"the mistake {short!r} of task {task} is never caught: {why}. Add a case where its output "
                         f"differs from the reference's to {self.where}/cases/{task}.py, or drop the mistake",
                         blocking=False)

    # -- the timed paths ---------------------------------------------------------------------------------------
    def timed_paths(self):
        unit, rubric = self.unit, self.unit.rubric
        if not rubric.TIMED_PATHS:
            return
        where = f"{self.where}/rubric.py"
        names = [path.name for path in rubric.TIMED_PATHS]
        for name in sorted({name for name in names if names.count(name) > 1}):
            self.problem(f"two timed paths are called {name} in {where}")
        defined = set()
        try:
            defined = {node.name for node in parsing.parse(unit.reference_path.read_text(encoding="utf-8")).body
                       if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        except (OSError, SyntaxError):
            pass
        for path in rubric.TIMED_PATHS:
            said = f"the timed path {path.name!r} in {where}"
            for function in tuple(path.functions) + tuple(path.per_head):
                if function not in defined:
                    self.problem(f"{said} names the function {function}, which {self.reference_file} does not define")
                elif function not in rubric.TASK_OF_FUNCTION:
                    self.problem(f"{said} names the function {function}, which belongs to no task of the rubric")
            for task in path.requires:
                if task not in rubric.TASK_NAMES:
                    self.problem(f"{said} requires the task {task}, which the rubric does not have")
            for helper in path.helpers:
                if len(helper) != 3:
                    self.problem(f"{said}: each helper is (task, function, stand-in), not {helper!r}")
                    continue
                task, function, stand_in = helper
                if rubric.TASK_OF_FUNCTION.get(function) != task:
                    self.problem(f"{said} names the helper {function} of task {task}, but the rubric gives {function} "
                                 f"to {rubric.TASK_OF_FUNCTION.get(function) or 'no task'}")
                if stand_in not in getattr(self.job, "STAND_INS", {}):
                    self.problem(f"{said} stands {stand_in} in for {function}, but STAND_INS in {self.where}/job.py "
                                 "has no such entry")
        for function in ("timing_inputs", "score_path"):
            if not callable(getattr(self.job, function, None)):
                self.problem(f"{self.where}/job.py defines no {function}(...), which a unit with timed paths needs "
                             "(docs/writing-a-unit.md shows both)")
        if self.blocked:
            return
        self._run_paths()

    def _run_paths(self):
        """Each timed path once, at the CPU's sizes, as the reference writes it (and with each helper's
        stand-in): the job's score_path builds it by its name, and its inputs come from timing_inputs."""
        import torch

        from autograder.sandbox import worker

        rubric = self.unit.rubric
        sizes = rubric.TIMING_SIZES["cpu"]
        for path in rubric.TIMED_PATHS:
            spec = {"path": path.name, "device": "cpu", "dtype": sizes["dtypes"][0], "seed": rubric.SEED,
                    **dict(path.settings), "warmup": rubric.TIMING_WARMUP,
                    **{key: sizes[key] for key in ("batch", "heads", "length", "head_dim")}}
            swaps = [{}] + [{function: self.job.STAND_INS[stand_in]} for _, function, stand_in in path.helpers]
            for swap in swaps:
                namespace = {"__name__": self.name}
                try:
                    exec(compile(self.unit.finished_reference, str(self.unit.reference_path), "exec"), namespace)
                    namespace.update(swap)
                    inputs = worker._timing_inputs(self.job, spec, rubric.SEED)  # as a timing job makes them
                    output = self.job.score_path(namespace, spec)(*inputs)
                except Exception as error:
                    with_stand_in = f" with the stand-in for {', '.join(swap)}" if swap else ""
                    self.problem(f"the timed path {path.name!r} does not run on the reference{with_stand_in} "
                                 f"({_error(error)}{self.at(error)}): {self.where}/job.py's timing_inputs and "
                                 "score_path build it by its name (spec['path'])")
                    break
                if not isinstance(output, torch.Tensor):
                    self.problem(f"the timed path {path.name!r} returns a {type(output).__name__}, not a tensor: "
                                 f"score_path in {self.where}/job.py returns the path's output")
                    break

    def check_capstone(self):
        """The rubric's optional ``CAPSTONE`` (the module under autograder/units that runs the unit's experiment,
        then its arguments): `python -m autograder capstone --unit NAME` imports it and calls its ``main``."""
        declared = getattr(self.unit.rubric, "CAPSTONE", None)
        if declared is None:
            return
        if (not isinstance(declared, tuple) or not declared
                or not all(isinstance(item, str) for item in declared)):
            self.problem(f"CAPSTONE in {self.where}/rubric.py is {declared!r}: write a tuple of strings, the module "
                         "under autograder/units (for instance \"NAME.experiment\") and then its arguments")
            return
        try:
            module = importlib.import_module(f"autograder.units.{declared[0]}")
        except Exception as error:
            self.problem(f"CAPSTONE in {self.where}/rubric.py names autograder.units.{declared[0]}, which does not "
                         f"import ({_error(error)})")
            return
        if not callable(getattr(module, "main", None)):
            self.problem(f"CAPSTONE in {self.where}/rubric.py names autograder.units.{declared[0]}, which has no "
                         "main(argv, references): python -m autograder capstone calls it")

    # -- the build: student folder and source notebook ---------------------------------------------------------
    def build(self):
        from autograder.course.build import build, student_folder
        from autograder.course.notebook import notebook_name, source_folder

        unit, rubric = self.unit, self.unit.rubric
        checks = unit.self_checks_folder
        for task in rubric.TASK_NAMES:
            if not (checks / f"test_{task}.py").is_file():
                self.problem(f"task {task} has no self-checks: write {self.where}/self_checks/test_{task}.py "
                             f"(students run them with pytest -k {task})")
        if not unit.lesson_path.is_file():
            self.problem(f"the unit has no lesson: write {self.where}/lesson.py (nbgrader's notebook is built from it)")
        for name, path in unit.extra_files.items():
            if not path.is_file():
                self.problem(f"SHIPPED in {self.where}/rubric.py names {name}, but {path} does not exist")
        self.check_capstone()
        self.built_folder = False
        try:
            build(chosen=[self.name])
        except Exception as error:
            self.problem(f"the build fails ({_error(error)}{self.at(error)}): fix {self.where}/lesson.py, whose "
                         "cells must match the rubric's functions and tests, or the file named")
            return
        for made in (student_folder(unit) / f"{unit.module_name}.py", source_folder(unit) / notebook_name(unit)):
            if not made.is_file():
                self.problem(f"the build did not make {made.relative_to(ROOT)}")
        self.built_folder = (student_folder(unit) / f"{unit.module_name}.py").is_file()

    # -- grading: the reference full, the stubs nothing, the samples in their own task -------------------------
    def grading(self):
        from autograder.core.grade import Grader
        from autograder.course.build import make_stub
        from autograder.sandbox.server import SandboxMissing

        unit, rubric = self.unit, self.unit.rubric
        source = unit.reference_path.read_text(encoding="utf-8")
        finished = unit.finished_reference
        files = {"reference": finished, "stub": make_stub(source, unit)}
        samples = self._samples(finished)
        for sample, (text, _) in samples.items():
            files[f"sample_{sample}"] = text
        try:
            grader = Grader(unit, sandbox="auto", timing_mode="give")
        except SandboxMissing:  # a tier that needs the kit unreadable by jobs: this is the kit's own code
            grader = Grader(unit, sandbox="off", timing_mode="give")
        with tempfile.TemporaryDirectory(prefix=f"check-{self.name}-") as folder:
            paths = []
            for name, text in files.items():
                path = Path(folder) / f"{name}.py"
                path.write_text(text, encoding="utf-8")
                paths.append(path)
            try:
                results = dict(zip(files, grader.grade_many(paths, jobs=2)))
            finally:
                grader.close()
        for test in results["reference"].tests:
            if not test.passed:
                timed = test.task == rubric.TIMING.name
                fix = (f"its timed path ({self.where}/rubric.py's TIMED_PATHS, job.py)" if timed
                       else f"the cases in {self.where}/cases/{test.task}.py")
                self.problem(f"the reference ({self.reference_file}, markers removed) scores {test.score:g}/"
                             f"{test.max_score:g} on {test.id}: {_first_lines(test.output)} Fix the reference, or "
                             f"{fix}")
        for test in results["stub"].tests:
            if test.score > 0:
                self.problem(f"the stub (each solution region replaced by NotImplementedError) scores {test.score:g} "
                             f"on {test.id}: a test must fail on code not written yet; look at the markers in "
                             f"{self.reference_file} (code outside them is given to students) and at "
                             f"{self.where}/cases/{test.task}.py")
        for sample, (_, mistake) in samples.items():
            self._sample_lost_its_own_task(mistake, results[f"sample_{sample}"])

    def _samples(self, finished):
        """{name: (the submission's text, its SampleMistake)} of the unit's samples.py, where it has one."""
        try:
            module = importlib.import_module(f"{self.unit.package}.samples")
        except ModuleNotFoundError as error:
            if error.name == f"{self.unit.package}.samples":
                return {}
            raise
        found = {}
        for mistake in getattr(module, "MISTAKES", ()):
            if mistake.task not in self.unit.rubric.TASK_NAMES:
                self.problem(f"the sample {mistake.name} in {self.where}/samples.py is of the task {mistake.task}, "
                             "which the rubric does not have")
            elif finished.count(mistake.old) != 1:
                self.problem(f"the sample {mistake.name} in {self.where}/samples.py changes {mistake.old!r}, which "
                             f"the reference has {finished.count(mistake.old)} times, not once: quote one line of "
                             f"{self.reference_file} as it is")
            else:
                found[mistake.name] = (finished.replace(mistake.old, mistake.new), mistake)
        return found

    def _sample_lost_its_own_task(self, mistake, result):
        rubric = self.unit.rubric
        said = f"the sample {mistake.name} ({self.where}/samples.py)"
        timed = {path.test for path in rubric.TIMED_PATHS if mistake.task in path.requires}
        lost = {test.task for test in result.tests if not test.passed and test.id not in timed}
        if mistake.task not in lost:
            self.problem(f"{said} keeps every point of {mistake.task}: its change is no mistake the task's cases see")
        for task in sorted(lost - {mistake.task}):
            self.problem(f"{said} also loses points on {task}: a mistake is charged in its own task only")
        feedback = "\n".join(test.output for test in result.tests if not test.passed)
        if mistake.task in lost and mistake.says not in feedback:
            self.problem(f"the feedback on {said} does not say {mistake.says!r}: {_first_lines(feedback)}")

    # -- the self-checks students run --------------------------------------------------------------------------
    def self_checks(self):
        from autograder.course.build import make_stub, student_folder

        unit = self.unit
        if not self.built_folder:
            return  # the build's problem is said already
        source = unit.reference_path.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory(prefix=f"self-checks-{self.name}-") as folder:
            runs = {}
            for kind, text in (("reference", unit.finished_reference), ("stub", make_stub(source, unit))):
                copy = Path(folder) / kind
                shutil.copytree(student_folder(unit), copy,
                                ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
                (copy / f"{unit.module_name}.py").write_text(text, encoding="utf-8")
                runs[kind] = copy
            with ThreadPoolExecutor(2) as pool:  # most of each run is importing torch
                done = dict(zip(runs, pool.map(_pytest, runs.values())))
            reference, stub = done["reference"], done["stub"]
            # pytest that cannot start exits 1 too, as failing checks do: ask whether it imports at all
            missing = _unimportable("pytest", runs["reference"]) if reference.returncode != 0 else None
        if missing:
            self.problem(f"pytest, which runs the self-checks, does not import in this environment ({missing}): "
                         f"install what check-unit runs, in the kit's folder: {INSTALL_UNIT_TOOLS}")
            return
        if reference.returncode != 0:
            self.problem(f"the self-checks fail on the reference (pytest exit {reference.returncode}): "
                         f"{_failures(reference.stdout)} Fix {self.where}/self_checks/ (or the reference). "
                         f"pytest's last lines:\n{_last_lines(reference)}")
        passed = [line.split(" ", 1)[1] for line in stub.stdout.splitlines() if line.startswith("PASSED ")]
        if passed:
            self.problem(f"self-checks pass on the stub, so they check nothing the student writes: "
                         f"{', '.join(passed[:5])}; fix them in {self.where}/self_checks/")

    # -- nbgrader's release ------------------------------------------------------------------------------------
    def release(self):
        from autograder.course.notebook import COURSE, notebook_name
        from autograder.course.release import CourseError, release

        from autograder.course.release import nbgrader_environment

        unit = self.unit
        if shutil.which("nbgrader", path=nbgrader_environment()["PATH"]) is None:
            self.problem(f"nbgrader, which makes the release, is not installed beside {sys.executable}: install "
                         f"what check-unit runs, in the kit's folder: {INSTALL_UNIT_TOOLS} (or leave the release "
                         "out with --without-nbgrader)")
            return
        with tempfile.TemporaryDirectory(prefix=f"release-{self.name}-") as folder:
            course = Path(folder) / "course"
            course.mkdir()
            shutil.copy(COURSE / "nbgrader_config.py", course)
            try:
                released, _ = release(unit, Path(folder) / "dist", course=course)
            except CourseError as error:
                self.problem(f"nbgrader cannot release the unit: {_first_lines(str(error), 12)} (the notebook is "
                             f"built from {self.where}/lesson.py and {self.reference_file})")
                return
            except Exception as error:
                self.problem(f"the release fails ({_error(error)}{self.at(error)})")
                return
            notebook = released / notebook_name(unit)
            text = notebook.read_text(encoding="utf-8") if notebook.is_file() else ""
            if not text:
                self.problem(f"nbgrader's release has no {notebook_name(unit)}")
            elif "BEGIN SOLUTION" in text or "BEGIN HIDDEN TESTS" in text:
                self.problem(f"nbgrader's release of {notebook_name(unit)} still holds a solution or hidden region: "
                             f"look at the markers in {self.reference_file} and {self.where}/lesson.py")


def _declared_mistakes(check, seen=None):
    """[(tensor check, its mistakes)] for every tensor_check a case's check holds, however deep: a check may wrap
    another (to accept a second form, to read a module's output), as a closure or a default argument."""
    seen = set() if seen is None else seen
    if id(check) in seen or not inspect.isfunction(check):
        return []
    seen.add(id(check))
    found = []
    if isinstance(getattr(check, "mistakes", None), tuple):  # a tensor_check (core/cases.py)
        found.append((check, check.mistakes))
    held = []
    for cell in check.__closure__ or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # a cell not filled yet
            continue
    held += list(check.__defaults__ or ()) + list((check.__kwdefaults__ or {}).values())
    for value in held:
        found += _declared_mistakes(value, seen)
    return found


def _pytest(folder):
    # -rfEp: the failures and errors listed by name (for the problem's first line), and the passes (for the stub's)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEp", "--tb=short",
                           "-o", "addopts="],
                          cwd=folder, capture_output=True, text=True, timeout=600)


def _unimportable(module, folder):
    """Why ``module`` does not import in ``folder`` with this Python and environment (its error's last line), or
    None where it imports."""
    process = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=folder, capture_output=True, text=True,
                             timeout=300)
    if process.returncode == 0:
        return None
    lines = [line.strip() for line in process.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit {process.returncode}"


def _last_lines(process, count=20):
    """The last ``count`` lines pytest wrote (its PASSED list left out), indented: where a check failed and why."""
    lines = [line for line in (process.stdout + "\n" + process.stderr).splitlines()
             if line.strip() and not line.startswith("PASSED ")]
    return "\n".join("    " + line for line in lines[-count:])


def _failures(output):
    failed = [line for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return ("; ".join(failed[:5]) + ".") if failed else _first_lines(output[-2000:], 8)


def _first_lines(text, count=3):
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    shown = " / ".join(line.strip() for line in lines[:count])
    return (shown + (" ..." if len(lines) > count else "")).rstrip(".") + "."
