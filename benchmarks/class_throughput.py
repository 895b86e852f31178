"""Grading a class: the kit against nbgrader (with and without the kit's config) and a plain nbgrader course.

What is measured
----------------
One class of ``--count`` notebooks (default 20), each the released notebook
(``nbgrader generate_assignment`` in a fresh temporary course folder) with its
solution cells filled in, as tests/ways_in/test_nbgrader_course.py fills them: the
reference, the blank release, and the reference with one of the demo's
mistakes (``autograder.ways_in.demo.MISTAKES``), in turn until there are enough. The
same notebooks are graded in one run (``--ways`` picks some):

* ``kit``: ``python -m autograder grade <course>/submitted --jobs J --out DIR``,
  the sandboxed fork server, the timing tier on the CPU as the rubric says
  (``TIMING_WITHOUT_GPU``). J submissions at once (``--jobs``, default 2).
* ``kit-no-timing``: the same with ``--without-gpu give``, which skips the
  timing tier: the difference between the two rows is the tier's share.
* ``kit-per-student``: the kit row again with a course secret (``--course-secret``):
  every student's hidden cases are drawn from a seed of their own and built
  for that submission (autograder/core/seeds.py). The difference from the kit row is
  what cases of one's own cost; the run also prints what building one seed's
  cases and their expected outputs costs in this process, alone.
* ``kit-no-cgroups``: the kit row again with ``AUTOGRADER_CGROUP=off``: no
  control group per job. The difference is what the per-job limits (memory,
  processes, CPU) cost a submission.
* ``nbgrader-kit``: ``nbgrader autograde positional_encodings`` with
  the course's own nbgrader_config.py, whose TrustedGrades preprocessor grades
  each notebook with the kit's grader, out of the kernel, after the notebook
  has run in its kernel (for the pictures and printed output of the feedback).
* ``nbgrader-plain``: the same in a copy of the course whose nbgrader_config.py
  ends by taking TrustedGrades out of the autograde preprocessors, everything
  else kept: the hidden tests run in the student's kernel only.
* ``plain-course``: what a course gets from nbgrader alone, without the kit: a
  notebook of its own, generated here from the kit's material (the reference,
  the rubric and the hidden cases) so that it stays in step. Per function, its
  solution cell (the reference, markers and all); per correctness test of the
  rubric, one ordinary autograded test cell whose hidden region holds the
  reference code it needs (renamed ``reference_<name>``) and plain asserts on
  exactly that test's hidden cases (``build_cases(rubric.SEED)``): the same
  calls with the same shapes, dtypes and settings, small inputs written out,
  larger ones drawn in the cell from a seed. The cases a plain course would not
  write are left out: the behaviour contracts' sequences of calls
  (autograder/core/behaviour.py) and the calls on the meta device. No lesson text, no pictures, no
  timing tier; nbgrader's default config (only the course id and the cell
  timeout set). The same fills make the same class of it.

nbgrader autograde has no parallelism: it grades one submission after another
(a for loop in ``BaseConverter.convert_notebooks``), each in a fresh kernel.

* time: the wall time of each whole command (a subprocess, from start to exit:
  interpreter start, imports, every submission), ``time.monotonic``. Each way
  runs in a course folder of its own, copied from the one release (the plain
  course in one of its own, released the same way). Releasing is not timed.
* checks before any time is reported: every command exited 0 and logged no
  ERROR; every student has a row (the kit's grades.csv; nbgrader's gradebook
  through its Gradebook API, where a submission that failed leaves none); in
  the kit's rows, nbgrader's with the kit's config and the plain course, every
  reference scores the full correctness points and every blank release 0, test
  for test; and the kit's totals equal the gradebook totals of nbgrader with the
  kit's config, student for student. The agreement of the other gradebooks with
  the kit is reported, not required (their hidden tests run in the student's
  kernel, where a wrong helper also costs the tasks that call it; and since the
  kernel is sandboxed, ``nbgrader-plain``'s hidden regions cannot import the kit).

Run from anywhere: ``python benchmarks/class_throughput.py`` (``--help`` for the
flags). nbgrader must be installed beside this Python (``pip install -e '.[course]'``).
"""

import argparse
import ast
import csv
import datetime
import importlib.metadata
import inspect
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import torch  # noqa: E402

from autograder.core import units  # noqa: E402
from autograder.core.cases import build_cases as _build_cases  # noqa: E402
from autograder.course.build import build, strip_markers  # noqa: E402
from autograder.course.notebook import (BEGIN_HIDDEN, COURSE, END_HIDDEN, _nbgrader, filled_notebook,  # noqa: E402
                                        function_source, notebook_name, notebook_text)
from autograder.course.release import nbgrader_environment, run_nbgrader  # noqa: E402
from autograder.units.positional_encodings.cases.relative_positions import distances  # noqa: E402
from autograder.ways_in.demo import apply  # noqa: E402
from autograder.units.positional_encodings.samples import MISTAKES  # noqa: E402
from solutions import positional_encodings as ref  # noqa: E402

UNIT = units.get("positional_encodings")  # the class is of the first unit
rubric = UNIT.rubric
REFERENCE = UNIT.reference_path
NOTEBOOK = notebook_name(UNIT)
ASSIGNMENT = UNIT.name


def build_cases(seed):
    return _build_cases(UNIT, seed)
# Appended to the plain copy's config: the course's own list of preprocessors, less TrustedGrades.
WITHOUT_TRUSTED_GRADES = """

# class_throughput.py, plain nbgrader: the hidden tests are graded in the student's kernel only.
c.Autograde.autograde_preprocessors = [step for step in c.Autograde.autograde_preprocessors
                                       if step.__name__ != "TrustedGrades"]
"""


class BenchmarkError(RuntimeError):
    """A way of grading failed or graded less than the whole class: no time is reported for it."""


# --------------------------------------------------------------------------- the class




def filled(released, code_text):
    """The released notebook with every solution cell holding its function from ``code_text``."""
    return filled_notebook(released, rubric.TASK_OF_FUNCTION, code_text)


def class_notebooks(released, count):
    """{student id: notebook}: the reference, the blank release, each mistake, in turn, ``count`` of them."""
    reference = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    kinds = [("reference", filled(released, reference)), ("blank", released)]
    kinds += [(mistake.name, filled(released, apply(mistake, reference))) for mistake in MISTAKES]
    return {f"s{number:02d}_{name}": notebook
            for number, (name, notebook) in zip(range(1, count + 1), itertools.cycle(kinds))}


def make_course(root, count):
    """A fresh course folder: the kit's config and source, the release, and the class in submitted/."""
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    build(chosen=[UNIT.name])  # nbgrader's source folder is generated, not committed
    shutil.copytree(COURSE / "source" / UNIT.name, course / "source" / UNIT.name)
    return course, release_and_submit(course, count)


def release_and_submit(course, count):
    """``nbgrader generate_assignment``, then the class in submitted/, each with the release's other files."""
    run_nbgrader(["generate_assignment", ASSIGNMENT, "--force"], course=course)
    released = course / "release" / ASSIGNMENT
    students = class_notebooks(json.loads((released / NOTEBOOK).read_text()), count)
    for student, notebook in students.items():
        target = course / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        (target / NOTEBOOK).write_text(json.dumps(notebook, indent=1))
        for path in released.iterdir():
            if path.is_file() and path.name != NOTEBOOK:
                shutil.copy(path, target)
    return sorted(students)


def copy_course(course, to, plain=False):
    """A copy of the course (release, gradebook and submissions); ``plain``: without TrustedGrades."""
    shutil.copytree(course, to)
    if plain:
        with open(to / "nbgrader_config.py", "a") as handle:
            handle.write(WITHOUT_TRUSTED_GRADES)
    steps = autograde_steps(to)
    if ("TrustedGrades" in steps) == plain:
        raise BenchmarkError(f"{to}/nbgrader_config.py: autograde preprocessors {steps}, expected TrustedGrades "
                             + ("absent" if plain else "present"))
    return to


def autograde_steps(course):
    """The names of the autograde preprocessors, as nbgrader reads the course's config."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    return [step.__name__ for step in config.Autograde.autograde_preprocessors]


# --------------------------------------------------------------------------- the plain course

# nbgrader's defaults, but for the course id and room for a cold `import torch` (30 s a cell by default).
PLAIN_CONFIG = f"""# class_throughput.py, the plain course: nbgrader's defaults, no kit.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {ASSIGNMENT!r}
c.Execute.timeout = {rubric.NOTEBOOK_CELL_SECONDS}
"""
CORRECTNESS_TESTS = tuple(test for test in rubric.TESTS if test.task != rubric.TIMING.name)
CORRECTNESS_POINTS = sum(test.points for test in CORRECTNESS_TESTS)
PREFIX = "reference_"  # the reference's functions in the hidden tests, beside the student's of the same name
LITERAL_MAX = 64  # an integer input of up to this many entries is written out; a larger one is drawn from a seed
# Tolerances of the plain course's float checks (torch.allclose, its default rtol); integers are compared exactly.
PLAIN_ATOL = {torch.float32: 1e-4, torch.float64: 1e-8, torch.float16: 5e-2, torch.bfloat16: 2e-1}


def _without_docstrings(source):
    """``source`` less the docstring of every function and class in it, and the blank line after each."""
    lines = source.splitlines()
    drop = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) and isinstance(node.body[0].value.value, str):
            end = node.body[0].end_lineno
            drop.update(range(node.body[0].lineno - 1, end))
            if end < len(lines) and not lines[end].strip():
                drop.add(end)
    return "\n".join(line for number, line in enumerate(lines) if number not in drop)


def reference_code(names):
    """The reference's definitions of ``names`` and of the graded functions they call, each renamed
    ``reference_<name>``, without docstrings or solution markers: what a plain course pastes into its
    hidden tests to compute the expected values."""
    text = strip_markers(REFERENCE.read_text(encoding="utf-8"))
    graded = {node.name: node for node in ast.parse(text).body
              if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in rubric.TASK_OF_FUNCTION}
    wanted, queue = set(), list(names)
    while queue:
        name = queue.pop()
        if name not in wanted:
            wanted.add(name)
            queue += [node.id for node in ast.walk(graded[name]) if isinstance(node, ast.Name) and node.id in graded]
    rename = re.compile(r"\b(" + "|".join(map(re.escape, graded)) + r")\b")
    return "\n\n\n".join(rename.sub(PREFIX + r"\1", _without_docstrings(function_source(text, name)))
                         for name in graded if name in wanted)  # in the reference's order: helpers first


def reference_imports():
    text = REFERENCE.read_text(encoding="utf-8")
    return "\n".join(ast.get_source_segment(text, node) for node in ast.parse(text).body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


class _Inputs:
    """A case's inputs as code: float tensors drawn from the cell's ``generator``, integer ones written out
    (as ``torch.arange`` or the (Lq, Lk) grid of j - i where they are one, else drawn from the same range)."""

    def __init__(self):
        self.draws = False  # whether the cell needs its generator

    def code(self, value):
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if isinstance(value, dict) and "__dtype__" in value:
            return f"torch.{value['__dtype__']}"
        if isinstance(value, dict) and "__device__" in value:
            return f"torch.device({value['__device__']!r})"
        return repr(value)

    def _tensor(self, tensor):
        dtype, shape, count = f"torch.{str(tensor.dtype).replace('torch.', '')}", tuple(tensor.shape), tensor.numel()
        if tensor.is_meta:  # no values: a meta case checks where the output is made
            return f"torch.empty({shape}, dtype={dtype}, device='meta')"
        if tensor.dtype == torch.int64 and tensor.dim() == 1 and count > 1:
            first = int(tensor[0])
            if torch.equal(tensor, torch.arange(first, first + count)):
                return f"torch.arange({first}, {first + count})"
        if tensor.dtype == torch.int64 and tensor.dim() == 2 and torch.equal(tensor, distances(*shape)):
            return f"torch.arange({shape[1]})[None, :] - torch.arange({shape[0]})[:, None]"  # j - i
        if tensor.is_floating_point():  # the same shape and dtype; the values need not be the kit's
            self.draws = True
            return f"torch.randn({shape}, generator=generator, dtype={dtype})"
        if 0 < count <= LITERAL_MAX:
            return f"torch.tensor({tensor.tolist()!r}, dtype={dtype})"
        self.draws = True
        low, high = int(tensor.min()), int(tensor.max()) + 1
        return f"torch.randint({low}, {high}, {shape}, generator=generator, dtype={dtype})"


def _decoded(value):
    if isinstance(value, dict) and "__dtype__" in value:
        return getattr(torch, value["__dtype__"])
    if isinstance(value, dict) and "__device__" in value:
        return torch.device(value["__device__"])
    return value


def _compare(expected, label):
    """Asserts that ``got`` is ``expected``: a tensor of its dtype and shape, then its values."""
    dtype = str(expected.dtype).replace("torch.", "")
    kind = f"{'an' if dtype[0] in 'aeiou' else 'a'} {dtype} tensor of shape {tuple(expected.shape)}"
    lines = ["assert isinstance(got, torch.Tensor) and got.dtype == expected.dtype and got.shape == expected.shape, "
             + repr(f"{label}: expected {kind}")]
    if expected.is_meta:  # shape and dtype are all a meta tensor has
        lines.append("assert got.device.type == 'meta', " + repr(f"{label}: expected a tensor on the meta device"))
    elif expected.is_floating_point():
        rtol = 1e-2 if expected.dtype in (torch.float16, torch.bfloat16) else 1e-5
        lines.append(f"assert torch.allclose(got, expected, atol={PLAIN_ATOL[expected.dtype]:g}, rtol={rtol:g}), "
                     + repr(f"{label}: wrong values"))
    else:
        lines.append(f"assert torch.equal(got, expected), {repr(f'{label}: wrong values')}")
    return lines


def _raises(statement, label, mentions=()):
    """pytest.raises(ValueError) written out; ``mentions``: values its message must name."""
    lines = ["try:", f"    {statement}"]
    if mentions:
        named = " and ".join(f"{value!r} in str(error)" for value in map(str, mentions))
        message = f"{label}: the message should name " + " and ".join(map(str, mentions))
        lines += ["except ValueError as error:", f"    assert {named}, {message!r}"]
    else:
        lines += ["except ValueError:", "    pass"]
    return lines + ["else:", f"    raise AssertionError({repr(f'{label} should raise ValueError')})"]


def _call_block(case, inputs):
    probe = case.probe
    function = getattr(ref, probe["name"])
    parameters = list(inspect.signature(function).parameters)
    lines, arguments = [], []
    for position, value in enumerate(probe["args"]):
        if isinstance(value, torch.Tensor):  # a tensor gets the parameter's name
            lines.append(f"{parameters[position]} = {inputs.code(value)}")
            arguments.append(parameters[position])
        else:
            arguments.append(inputs.code(value))
    for key, value in probe["kwargs"].items():
        if isinstance(value, torch.Tensor):  # one tensor for both calls, as a positional one
            lines.append(f"{key} = {inputs.code(value)}")
            arguments.append(f"{key}={key}")
        else:
            arguments.append(f"{key}={inputs.code(value)}")
    call = f"{probe['name']}({', '.join(arguments)})"
    try:  # what the reference does here decides the kind of check
        expected = function(*map(_decoded, probe["args"]), **{key: _decoded(v) for key, v in probe["kwargs"].items()})
    except ValueError:
        return lines + _raises(call, case.label)
    return lines + [f"expected = {PREFIX}{call}", f"got = {call}"] + _compare(expected, case.label)


def _module_block(case, inputs):
    probe = case.probe
    made = f"{probe['name']}({', '.join(inputs.code(value) for value in probe['init'])})"
    try:
        reference = getattr(ref, probe["name"])(*probe["init"])
    except ValueError:
        return _raises(made, case.label)
    if probe["x"] is None:  # the weight itself: its type, shape and initial distribution
        weight = f"{case.label}: weight"
        return [f"torch.manual_seed({probe['seed']})",
                f"module = {made}",
                f"expected = {PREFIX}{made}.weight",
                "assert isinstance(module.weight, nn.Parameter), " + repr(f"{weight} should be an nn.Parameter"),
                "assert any(p is module.weight for p in module.parameters()), "
                + repr(f"{weight} should be registered: assign it after super().__init__()"),
                "assert module.weight.shape == expected.shape, "
                + repr(f"{weight} should have shape {tuple(reference.weight.shape)}"),
                "mean, std = module.weight.double().mean().item(), module.weight.double().std().item()",
                "assert abs(mean) < 0.002 and 0.018 < std < 0.022, "
                + repr(f"{weight} should be drawn from N(0, 0.02**2)")]
    lines = [f"{name} = {inputs.code(probe[name])}" for name in ("x", "weight", "grad_out") if probe[name] is not None]
    student = [f"module = {made}", "with torch.no_grad():", "    module.weight.copy_(weight)"]
    with torch.no_grad():
        reference.weight.copy_(probe["weight"])
    try:
        output = reference(probe["x"])
    except ValueError:  # L > max_len: the message names both
        return lines + student + _raises("module(x)", case.label, mentions=(probe["x"].shape[1], probe["init"][0]))
    lines += [f"reference = {PREFIX}{made}", "with torch.no_grad():", "    reference.weight.copy_(weight)"] + student
    if probe["grad_out"] is None:
        return lines + ["expected = reference(x)", "got = module(x)"] + _compare(output, case.label)
    (output * probe["grad_out"]).sum().backward()
    return lines + ["(reference(x) * grad_out).sum().backward()", "expected = reference.weight.grad",
                    "(module(x) * grad_out).sum().backward()", "got = module.weight.grad"] + _compare(
        reference.weight.grad, case.label)


def _plain(case):
    """Whether a plain course would check ``case``: a call or a module on values, not a behaviour contract's
    sequence of calls nor a call on the meta device (which needs the kit's reading of a result without values)."""
    probe = case.probe
    if probe["op"] == "module":
        return "device" not in probe
    inputs = list(probe.get("args", ())) + list(probe.get("kwargs", {}).values())
    return probe["op"] == "call" and not any(isinstance(value, torch.Tensor) and value.is_meta for value in inputs)


def plain_test_cell(test, cases, seed):
    """A graded cell of the plain course: what it checks, then a hidden region with the reference and the asserts."""
    inputs, body = _Inputs(), []
    for case in cases:
        block = (_module_block if case.probe["op"] == "module" else _call_block)(case, inputs)
        body += ["", f"# {case.id}: {case.label}"] + block
    head = [f'"""{test.id} ({test.points} points): {test.checks}."""', BEGIN_HIDDEN,
            reference_code({case.probe["name"] for case in cases}), ""]
    if inputs.draws:
        head += ["", f"generator = torch.Generator().manual_seed({seed})"]
    return "\n".join(head + body + [END_HIDDEN])


def _code_cell(cell_id, source, metadata=None):
    return {"cell_type": "code", "execution_count": None, "id": cell_id, "metadata": metadata or {}, "outputs": [],
            "source": source}


def plain_notebook():
    """The plain course's source notebook: the imports, then per task its solution cells and its test cells."""
    reference = REFERENCE.read_text(encoding="utf-8")
    cases = build_cases(rubric.SEED)
    cells, checked = [_code_cell("imports", reference_imports())], 0
    for task in rubric.TASKS:
        for function in task.functions:
            cells.append(_code_cell(function.replace("_", "-"), function_source(reference, function),
                                    _nbgrader(function, solution=True)))
        for test in rubric.tests_of(task.name):
            mine = [case for case in cases[task.name] if case.test == test.id and _plain(case)]
            if not mine:
                raise BenchmarkError(f"the plain course: {test.id} has no hidden cases")
            checked += len(mine)
            source = plain_test_cell(test, mine, seed=rubric.SEED + rubric.TESTS.index(test))
            cells.append(_code_cell(test.id.replace("_", "-"), source,
                                    _nbgrader(test.id, grade=True, locked=True, points=test.points)))
    plain = sum(_plain(case) for task_cases in cases.values() for case in task_cases)
    if checked != plain:
        raise BenchmarkError(f"the plain course checks {checked} cases, the kit {plain} of the kinds it writes")
    return {"cells": cells,
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def make_plain_course(root, count):
    """The plain course in a fresh folder: its config and source notebook, the release, the class in submitted/."""
    course = root / "plain-course"
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(PLAIN_CONFIG)
    (source / NOTEBOOK).write_text(notebook_text(plain_notebook()))
    return course, release_and_submit(course, count)


# --------------------------------------------------------------------------- grading and its checks


@dataclass
class Way:
    key: str  # its --ways name
    name: str
    parallel: str
    seconds: float = 0.0
    totals: dict = field(default_factory=dict)  # {student: total points}
    tests: dict = field(default_factory=dict)  # {student: {test id: points}}
    load: tuple = ()  # 1-minute load average before and after
    note: str = ""


def timed(command, cwd, log, environment=None):
    """Run ``command``; (wall seconds, [(seconds since start, line)], load before and after).

    Each line of its output is stamped as it arrives, so that nbgrader's log shows where its time goes.
    Raises BenchmarkError on a non-zero exit or an ERROR line.
    """
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env={**nbgrader_environment(), **(environment or {})},
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in process.stdout]
    process.wait()
    seconds = time.monotonic() - started
    log.write_text("".join(f"{at:8.2f} {line}\n" for at, line in lines))
    errors = [line for _, line in lines if "| ERROR]" in line]
    if process.returncode != 0 or errors:
        raise BenchmarkError(f"{' '.join(map(str, command))} failed (exit {process.returncode}, "
                             f"{len(errors)} ERROR lines):\n" + "\n".join(line for _, line in lines[-30:]))
    return seconds, lines, (load_before, os.getloadavg()[0])


def nbgrader_split(lines):
    """From nbgrader's stamped log: its start (to its first line), and the mean run of one notebook.

    A notebook's run is from ``Autograding <notebook>`` to ``Setting destination file permissions``:
    the kernel executing every cell, and with the kit's config TrustedGrades after it.
    """
    start = lines[0][0] if lines else 0.0
    runs, began = [], None
    for at, line in lines:
        if "| INFO] Autograding " in line:
            began = at
        elif "Setting destination file permissions" in line and began is not None:
            runs.append(at - began)
            began = None
    mean = sum(runs) / len(runs) if runs else float("nan")
    return f"nbgrader start {start:.1f} s; one notebook's run {mean:.2f} s (mean of {len(runs)})"


def kit_grades(out):
    """({student: total}, {student: {test id: points}}) from the kit's grades.csv."""
    with open(out / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return ({row["submission"]: float(row["total"]) for row in rows},
            {row["submission"]: {test.id: float(row[test.id]) for test in rubric.TESTS} for row in rows})


def gradebook_grades(course, tests=rubric.TESTS):
    """({student: total}, {student: {test id: points}}) of each submission the gradebook holds a grade of
    every one of ``tests`` for."""
    from nbgrader.api import Gradebook, MissingEntry

    totals, by_test = {}, {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in gradebook.students:
            try:
                notebook = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student.id)
            except MissingEntry:
                continue
            grades = {grade.name: float(grade.score or 0.0) for grade in notebook.grades}
            if set(grades) == {test.id for test in tests}:
                totals[student.id], by_test[student.id] = float(notebook.score), grades
    return totals, by_test


def require_every_student(way, students):
    missing = sorted(set(students) - set(way.totals))
    extra = sorted(set(way.totals) - set(students))
    if missing or extra:
        raise BenchmarkError(f"{way.name}: {len(way.totals)} rows for {len(students)} students; "
                             f"missing {missing}, unexpected {extra}")


def grade_with_kit(course, root, jobs, students, timing_mode=None, cgroups=True, per_student=False):
    key, name = ("kit", "kit") if timing_mode is None else ("kit-no-timing", f"kit, --without-gpu {timing_mode}")
    if not cgroups:  # what the limits per job cost: the same run without a control group per job
        key, name = key.replace("kit", "kit-no-cgroups", 1), name.replace("kit", "kit, AUTOGRADER_CGROUP=off", 1)
    extra = []
    if per_student:  # hidden cases of one's own: a seed per student from a course secret
        key, name = "kit-per-student", "kit, --course-secret"
        secret = root / "course_secret"
        if not secret.exists():
            from autograder.core.seeds import write_secret

            write_secret(secret)
        extra = ["--course-secret", str(secret)]
    out = root / (key + "-out")
    command = [sys.executable, "-m", "autograder", "grade", str(course / "submitted"), "--jobs", str(jobs),
               "--out", str(out)] + (["--without-gpu", timing_mode] if timing_mode else []) + extra
    way = Way(key, name, f"{jobs} job{'s' if jobs > 1 else ''}")
    way.seconds, lines, way.load = timed(command, REPO_ROOT, root / f"{out.name}.log",
                                         None if cgroups else {"AUTOGRADER_CGROUP": "off"})
    way.totals, way.tests = kit_grades(out)
    inner = re.search(r"submission\(s\) graded in ([\d.]+) s", "\n".join(line for _, line in lines))
    if inner:
        way.note = f"grading itself {float(inner.group(1)):.1f} s"
    require_every_student(way, students)
    require_correct_grading(way)
    return way


def grade_with_nbgrader(course, root, students, plain):
    folder = copy_course(course, root / ("nbgrader-plain" if plain else "nbgrader-kit"), plain=plain)
    if plain:  # its hidden regions import the kit in the kernel: graded as it comes, reported beside the kit
        return autograde(Way("nbgrader-plain", "nbgrader, plain", "sequential"), folder, root, students)
    way = autograde(Way("nbgrader-kit", "nbgrader, kit's config", "sequential"), folder, root, students)
    require_correct_grading(way)
    return way


def grade_plain_course(root, count):
    """The plain course: made and released (not timed), then ``nbgrader autograde`` on the class."""
    course, students = make_plain_course(root, count)
    way = autograde(Way("plain-course", "nbgrader, plain course", "sequential"), course, root, students,
                    tests=CORRECTNESS_TESTS)
    require_correct_grading(way)
    return way


def autograde(way, folder, root, students, tests=rubric.TESTS):
    """``nbgrader autograde`` timed in ``folder``, its gradebook read back into ``way``."""
    nbgrader = shutil.which("nbgrader", path=nbgrader_environment()["PATH"])
    way.seconds, lines, way.load = timed([nbgrader, "autograde", ASSIGNMENT], folder, root / f"{folder.name}.log")
    way.totals, way.tests = gradebook_grades(folder, tests)
    way.note = nbgrader_split(lines)
    require_every_student(way, students)
    return way


def require_correct_grading(way):
    """Every reference gets the full correctness points and every blank release 0, test for test (the timing
    tier is left out: its points depend on the machine). Otherwise the way grades wrongly and its time means
    nothing."""
    wrong = []
    for student, tests in sorted(way.tests.items()):
        full = student.endswith("_reference")
        if not (full or student.endswith("_blank")):
            continue
        lost = [test.id for test in CORRECTNESS_TESTS if tests.get(test.id) != (test.points if full else 0)]
        if lost:
            got = sum(tests.get(test.id) or 0 for test in CORRECTNESS_TESTS)
            wrong.append(f"{student} scored {got:g} of the correctness points, not {CORRECTNESS_POINTS if full else 0} "
                         f"(wrong in {', '.join(lost)})")
    if wrong:
        raise BenchmarkError(f"{way.name} does not grade correctly: " + "; ".join(wrong))


# --------------------------------------------------------------------------- the report


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    except OSError:
        pass
    return (f"{os.cpu_count()} cores, {model}, torch {importlib.metadata.version('torch')}, "
            f"nbgrader {importlib.metadata.version('nbgrader')}, Python {sys.version.split()[0]}, "
            f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")


def class_words(count):
    kinds = ["the reference", "the blank release"][:count]
    if count > 2:
        mistakes = min(count - 2, len(MISTAKES))
        kinds.append(f"{mistakes} with one mistake")
    return f"{min(count, 2 + len(MISTAKES))} distinct: {', '.join(kinds)}"


def print_table(ways, count):
    kit = next((way for way in ways if way.key == "kit"), None)
    print(f"\nGrading a class of {count} notebooks ({class_words(count)}) | {machine()}")
    header = (f"{'way':<28} | {'at once':>10} | {'total s':>8} | {'s/sub':>6} | {'subs/min':>8} | {'rows':>7} | "
              f"{'x kit':>7} | {'load 1m':>11} | note")
    print(header)
    print("-" * len(header))
    for way in ways:
        per = way.seconds / count
        faster = "-" if kit is None or way is kit else f"{way.seconds / kit.seconds:.1f}x"
        load = f"{way.load[0]:.2f}->{way.load[1]:.2f}"
        print(f"{way.name:<28} | {way.parallel:>10} | {way.seconds:>8.1f} | {per:>6.2f} | {60 / per:>8.1f} | "
              f"{f'{len(way.totals)}/{count}':>7} | {faster:>7} | {load:>11} | {way.note}")
    print("x kit: that way's time over the kit's (the kit row) on the same notebooks (> 1: slower). rows: students "
          "with a grade. load 1m: the 1-minute load average before and after. nbgrader grades one submission "
          "after another; the kit runs --jobs submissions at once.")


def agreement(kit, other):
    differ = sorted(student for student in kit.totals if kit.totals[student] != other.totals.get(student))
    return differ


def correctness_differences(kit, other):
    """{student: [test ids]}: the correctness tests whose points differ between the kit and ``other``."""
    differ = {}
    for student in sorted(kit.tests):
        tests = [test.id for test in CORRECTNESS_TESTS
                 if kit.tests[student][test.id] != other.tests.get(student, {}).get(test.id)]
        if tests:
            differ[student] = tests
    return differ


def print_summary(ways, args):
    by_key = {way.key: way for way in ways}
    kit, count = by_key.get("kit"), args.count
    if kit and "nbgrader-kit" in by_key:
        print(f"Totals: the kit's equal the gradebook's of nbgrader with the kit's config for all {count} "
              f"students (mean {sum(kit.totals.values()) / count:.1f} of {rubric.MAX_SCORE:g}).")
    if kit and "nbgrader-plain" in by_key:
        plain = by_key["nbgrader-plain"]
        differ = agreement(kit, plain)
        print(f"Plain nbgrader's gradebook agrees with the kit for {count - len(differ)} of {count}"
              + (": differs for " + ", ".join(f"{s} ({kit.totals[s]:g} vs {plain.totals[s]:g})" for s in differ)
                 if differ else "") + " (the hidden tests ran in the student's kernel).")
    if "plain-course" in by_key:
        course = by_key["plain-course"]
        references = [student for student in course.totals if student.endswith("_reference")]
        blanks = [student for student in course.totals if student.endswith("_blank")]
        print(f"The plain course ({len(CORRECTNESS_TESTS)} test cells, {CORRECTNESS_POINTS} points, no timing tier) "
              f"gave the reference {CORRECTNESS_POINTS} of {CORRECTNESS_POINTS}"
              + (" and the blank release 0" if blanks else " (no blank release in a class of 1)")
              + f" ({len(references) + len(blanks)} students checked); mean "
              f"{sum(course.totals.values()) / count:.1f} of {CORRECTNESS_POINTS}.")
        if kit:
            differ = correctness_differences(kit, course)
            words = []
            for student, tests in differ.items():
                mine = sum(kit.tests[student][test] for test in tests)
                theirs = sum(course.tests[student][test] for test in tests)
                words.append(f"{student} ({', '.join(tests)}: kit {mine:g}, plain course {theirs:g})")
            print(f"The plain course agrees with the kit's correctness points, test for test, for "
                  f"{count - len(differ)} of {count}" + (": differs for " + "; ".join(words) if words else "")
                  + ". In the plain course a wrong helper also fails the tests of the tasks that call it; "
                    "the kit grades each task with the reference's helpers.")
    if kit:
        without = by_key.get("kit-no-timing")
        for key, target in TARGETS.items():
            if key in by_key:
                way = by_key[key]
                ratio = way.seconds / kit.seconds
                print(f"Per submission the kit ({kit.seconds / count:.2f} s) is {ratio:.1f}x faster than {way.name} "
                      f"({way.seconds / count:.2f} s): the issue's target is {target}x, "
                      + ("met" if ratio >= target else "NOT met")
                      + (f" (the kit without its timing tier: {way.seconds / without.seconds:.1f}x)." if without
                         else "."))
        print(f"(kit: --jobs {args.jobs} on {os.cpu_count()} cores; nbgrader: sequential. Whole commands, each "
              "one's start paid once, so a small --count understates the ratios.)")


WAYS = ("kit", "kit-per-student", "kit-no-timing", "kit-no-cgroups", "nbgrader-kit", "nbgrader-plain",
        "plain-course")


def cases_cost(seeds=10):
    """Seconds to build one seed's hidden cases, expected outputs and plan, in this process (median of ``seeds``)."""
    from autograder.sandbox.server import serialize_plan

    build_cases(1)  # imports and first-call costs out of the figure
    times = []
    for seed in range(2, 2 + seeds):
        started = time.perf_counter()
        serialize_plan(build_cases(seed), UNIT)
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]
# The targets: the kit per submission at least this many times faster than each nbgrader way (issue 10: 15x than
# nbgrader running the kit's own notebook; issue 38: 20x than the plain course), and a student's own seed (a course
# secret) at most PER_STUDENT times the shared seed's time (issue 38).
TARGETS = {"nbgrader-kit": 15, "nbgrader-plain": 15, "plain-course": 20}
PER_STUDENT = 1.1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20, help="notebooks in the class (default 20)")
    parser.add_argument("--jobs", type=int, default=2, help="the kit's submissions at once (default 2)")
    parser.add_argument("--ways", default=",".join(WAYS),
                        help=f"the ways to grade, comma-separated, of {','.join(WAYS)} (default: all)")
    parser.add_argument("--skip-plain", action="store_true", help="leave out nbgrader-plain")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary folder (the courses, gradebooks and logs) and print where it is")
    args = parser.parse_args(argv)
    if args.count < 1 or args.jobs < 1:
        parser.error("--count and --jobs must be at least 1")
    wanted = {name.strip() for name in args.ways.split(",") if name.strip()}
    if wanted - set(WAYS):
        parser.error(f"--ways: unknown {', '.join(sorted(wanted - set(WAYS)))}; the ways are {', '.join(WAYS)}")
    if args.skip_plain:
        wanted.discard("nbgrader-plain")
    args.ways = [name for name in WAYS if name in wanted]  # always in this order: the kit first
    if not args.ways:
        parser.error("--ways: no way left to grade")
    return args


def main(argv=None):
    args = parse_args(argv)
    folder = tempfile.mkdtemp(prefix="class-throughput-")
    try:
        root = Path(folder)
        course = students = None
        if set(args.ways) - {"plain-course"}:
            course, students = make_course(root, args.count)
        print(f"{args.count} notebooks in {root}; grading them {len(args.ways)} way(s): {', '.join(args.ways)} "
              "(nbgrader's ways take seconds a notebook).", file=sys.stderr)
        run = {
            "kit": lambda: grade_with_kit(course, root, args.jobs, students),
            "kit-per-student": lambda: grade_with_kit(course, root, args.jobs, students, per_student=True),
            "kit-no-timing": lambda: grade_with_kit(course, root, args.jobs, students, timing_mode="give"),
            "kit-no-cgroups": lambda: grade_with_kit(course, root, args.jobs, students, cgroups=False),
            "nbgrader-kit": lambda: grade_with_nbgrader(course, root, students, plain=False),
            "nbgrader-plain": lambda: grade_with_nbgrader(course, root, students, plain=True),
            "plain-course": lambda: grade_plain_course(root, args.count),
        }
        ways = []
        for key in args.ways:
            ways.append(run[key]())
            print(f"  {ways[-1].name}: {ways[-1].seconds:.1f} s", file=sys.stderr)
        by_key = {way.key: way for way in ways}
        if "kit" in by_key and "nbgrader-kit" in by_key:
            kit, with_config = by_key["kit"], by_key["nbgrader-kit"]
            differ = agreement(kit, with_config)
            if differ:
                raise BenchmarkError("the kit's totals and the gradebook's (nbgrader with the kit's config) differ for "
                                     + ", ".join(f"{s} ({kit.totals[s]:g} vs {with_config.totals.get(s)})"
                                                 for s in differ))
        print_table(ways, args.count)
        print_summary(ways, args)
        if "kit-per-student" in by_key and "kit" in by_key:
            kit, own = by_key["kit"], by_key["kit-per-student"]
            cost = cases_cost()
            print(f"Hidden cases of one's own: {own.seconds / args.count:.2f} s a submission with a course secret "
                  f"against {kit.seconds / args.count:.2f} s with the shared seed ({own.seconds / kit.seconds:.2f}x); "
                  f"building one seed's cases, expected outputs and plan takes {cost * 1000:.0f} ms here "
                  f"({cost / (kit.seconds / args.count) * 100:.0f}% of the shared seed's time a submission). "
                  f"The issue's bound is {PER_STUDENT}x: " + ("met." if own.seconds <= PER_STUDENT * kit.seconds
                                                               else "NOT met."))
    finally:
        if args.keep:
            print(f"Kept {folder}: each way's course folder and its log.", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return ways


if __name__ == "__main__":
    try:
        main()
    except BenchmarkError as error:
        sys.exit(f"class_throughput.py: {error}")
