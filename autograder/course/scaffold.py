"""A new unit of study from a skeleton that grades from the start.

``new_unit(name)`` writes the files of a unit (its reference ``solutions/<name>.py``, and its rubric, cases, job,
lesson, self-checks and sample class in ``autograder/units/<name>/``) around one toy task, ``<name>_ramp``: a
placeholder, complete and valid as written, so that ``check_unit`` (autograder/course/check_unit.py) passes on it
untouched and the author replaces it one file at a time, checking as they go. The toy task is named after the unit,
so that two fresh skeletons never share a test id (an nbgrader grade id of the one course). ``refusal(name)`` says
why a name cannot be a unit. ``docs/writing-a-unit.md`` is the guide.
"""

import ast
import importlib
import importlib.util
import keyword
import re
import sys
import zlib
from pathlib import Path

from autograder.core import parsing

ROOT = Path(__file__).resolve().parents[2]
LONGEST_NAME = 30  # nbformat caps a cell id at 64 characters, and every grade id starts with the unit's name
# Names a unit's module cannot take: files beside it in the student folder, the names the job gives code, the
# timing tier's task, and the kit's own top-level folders.
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
