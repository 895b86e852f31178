"""The check that a unit is complete and grades right: ``python -m autograder check-unit NAME``.

``check_unit(name)`` returns what is wrong with a unit, each problem with the file to fix: it loads; its cases
build and cover every task and test; each declared mistake is caught by its own task's cases; its timed paths are
declared consistently; the build makes its student folder and notebook; the reference scores full marks and the
stubs nothing; its self-checks pass on the reference and fail on the stubs; and nbgrader generates its release.
A unit begins as the skeleton of autograder/course/scaffold.py, on which this check passes untouched.
``docs/writing-a-unit.md`` is the guide.
"""

import ast
import importlib
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.core import parsing
from autograder.course.scaffold import ROOT, ScaffoldError

# What check-unit runs beyond the grader (pytest for the self-checks, nbgrader for the release): pyproject.toml's
# ``unit`` extra brings them, and a problem that finds one missing says this line.
INSTALL_UNIT_TOOLS = 'pip install -e ".[unit]"'


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
from autograder.course.check_unit import ScaffoldError, check_unit
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
        stand_ins, views = getattr(self.job, "STAND_INS", {}), getattr(self.job, "VIEWS", {})
        found = {}
        for case in cases:
            for probe in _calls(case.probe):
                self._probe(task, case, probe, stand_ins, views, found)
        for what, ids in found.items():
            shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
            self.problem(f"the case(s) {shown} in {self.where}/cases/{task}.py {what}")

    def _probe(self, task, case, probe, stand_ins, views, found):
        """The problems of one call a case makes, added to ``found`` ({what: [case ids]})."""
        rubric = self.unit.rubric
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


def _calls(probe):
    """The calls a case's probe makes: a behaviour contract's sequence (autograder/core/behaviour.py) makes several,
    one after another in one job; any other probe is one call."""
    return probe.get("calls", []) if probe.get("op") == "sequence" else [probe]


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
