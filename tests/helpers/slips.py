"""Slips of a helper, for the tests of invariant 10 (DESIGN.md): a helper that cannot be used is replaced by its
stand-in for its callers, whatever the reason it cannot.

The helpers are found in the units, not listed here: every function a case's probe swaps for a stand-in
(``call_probe(..., substitute=...)``) and every helper of a timed path (``TimedPath.helpers``), with the tasks that
call it. A new unit's helpers are covered by the tests that use this module without a change to them.

A slip is what the helper's cell (or, in a .py file, its function) holds instead of the finished function: the
release's stub, code that does not compile, code that raises before or while the function is defined, no
definition of the name, a name bound to something that cannot be called, or a function that is wrong. Each is a
``Slip``: its kind and the cell's text.
"""

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

from autograder.core import units
from autograder.core.cases import build_cases
from autograder.course.build import make_stub
from autograder.course.notebook import filled_notebook as notebook_filled, function_source, notebook_name, source_folder

# The kinds that leave the helper unusable with nothing of it defined, or defined but unusable: its own task
# scores 0 with each. "wrong" is a function that runs and computes something else.
KINDS = ("stub", "syntax", "raises_before", "raises_while_defining", "never_defined", "not_callable", "wrong")
# In a .py file, code that raises at the top level stops the module there, as Python's import does: what follows
# it is not defined. A slip that raises is a notebook cell's (each cell runs on its own).
PY_KINDS = tuple(kind for kind in KINDS if not kind.startswith("raises"))


@dataclass(frozen=True)
class Helper:
    unit: str
    name: str  # the helper function
    task: str  # its own task
    callers: tuple  # the tasks whose probes swap it for its stand-in, "timing" where a timed path does


@dataclass(frozen=True)
class Slip:
    kind: str
    how: str  # which slip of its kind, for the failure's message
    text: str = field(repr=False)  # what the helper's cell holds


@lru_cache(maxsize=None)
def helpers():
    """Every helper of every unit, from the units' cases and timed paths."""
    found = []
    for unit_name in units.names():
        unit = units.get(unit_name)
        rubric = unit.rubric
        callers = {}
        for task, cases in build_cases(unit).items():
            for case in cases:
                swapped = case.probe.get("substitute") or []
                for substitute in [swapped] if isinstance(swapped, dict) else swapped:
                    callers.setdefault(substitute["name"], set()).add(task)
        for path in rubric.TIMED_PATHS:
            for _, name, _ in path.helpers:
                callers.setdefault(name, set()).add(rubric.TIMING.name)
        for name, tasks in sorted(callers.items()):
            assert name in rubric.TASK_OF_FUNCTION, f"{unit_name}: the stand-in for {name} stands for no task's function"
            found.append(Helper(unit_name, name, rubric.TASK_OF_FUNCTION[name], tuple(sorted(tasks))))
    return tuple(found)


def finished(unit_name):
    return units.get(unit_name).finished_reference


@lru_cache(maxsize=None)
def stub_of(unit_name, name):
    unit = units.get(unit_name)
    return function_source(make_stub(unit.reference_path.read_text(encoding="utf-8"), unit), name)


def _header_end(lines):
    """The index of the line that ends the def's header (its colon)."""
    return next(at for at, line in enumerate(lines) if line.rstrip().endswith(":"))


def _body_code_lines(lines):
    """Indexes of the body's lines of code: after the docstring, not blank, not a comment."""
    text = "\n".join(lines)
    closing = text.find('"""', text.find('"""') + 3)
    after = text[:closing].count("\n") + 1 if closing >= 0 else _header_end(lines) + 1
    return [at for at in range(after, len(lines)) if lines[at].strip() and not lines[at].strip().startswith("#")]


def syntax_errors(source):
    """{how: the function's ``source`` made not to compile}: the ways a student's cell fails to compile."""
    lines = source.split("\n")
    header, body = _header_end(lines), _body_code_lines(lines)
    made = {}

    def changed(at, line):
        copy = list(lines)
        copy[at] = line
        return "\n".join(copy)

    made["the def's colon left out"] = changed(header, lines[header].rstrip()[:-1])
    made["a bracket opened in the def, never closed"] = changed(0, lines[0].replace("(", "((", 1))
    opened = source.find('"""')
    closed = source.find('"""', opened + 3)
    made["the docstring never closed"] = source[:closed] + source[closed + 3:]
    for at in body[:3] + body[-2:]:
        made[f"a stray ')' at the end of body line {at}"] = changed(at, lines[at] + ")")
        made[f"body line {at} indented off the block"] = changed(at, " " + lines[at])
        made[f"a Python 2 print before body line {at}"] = changed(at, re.match(r"\s*", lines[at]).group() +
                                                                  'print "here"\n' + lines[at])
    failing = {}
    for how, text in made.items():  # a change inside brackets may still compile: only those that do not are slips
        try:
            compile(text, "slip", "exec")
        except SyntaxError:
            failing[how] = text
    assert len(failing) >= 4, sorted(failing)
    return failing


def slips(helper, kinds=KINDS):
    """A strategy of slips of ``helper`` of ``kinds``."""
    name, reference = helper.name, function_source(finished(helper.unit), helper.name)
    made = {
        "stub": st.just(Slip("stub", "the release's stub", stub_of(helper.unit, name))),
        "syntax": st.sampled_from(sorted(syntax_errors(reference).items())).map(
            lambda item: Slip("syntax", item[0], item[1])),
        "raises_before": st.sampled_from([
            ("a raise before the def", f"raise RuntimeError('not yet')\n\n\n{reference}"),
            ("an import that fails before the def", f"import a_module_nobody_has\n\n\n{reference}"),
            ("a name error before the def", f"print(undefined_name)\n{reference}"),
        ]).map(lambda item: Slip("raises_before", *item)),
        "raises_while_defining": st.sampled_from([
            ("a decorator that raises", f"@(lambda function: 1 / 0)\n{reference}"),
            ("a decorator never defined", f"@a_decorator_nobody_defined\n{reference}"),
        ]).map(lambda item: Slip("raises_while_defining", *item)),
        "never_defined": st.sampled_from([
            ("an empty cell", ""),
            ("the function misnamed", reference.replace(f"def {name}(", f"def {name}_mine(", 1)),
            ("a comment only", f"# {name}: to do\n"),
            ("defined and deleted", f"{reference}\n\n\ndel {name}\n"),
        ]).map(lambda item: Slip("never_defined", *item)),
        "not_callable": st.sampled_from([("None", f"{name} = None\n"), ("a number", f"{name} = 3\n"),
                                         ("a string", f"{name} = 'to do'\n")]).map(
            lambda item: Slip("not_callable", *item)),
        "wrong": st.sampled_from([
            ("returns None", f"def {name}(*args, **kwargs):\n    return None\n"),
            ("raises ValueError for everything", f"def {name}(*args, **kwargs):\n    raise ValueError('no')\n"),
            ("returns a number", f"def {name}(*args, **kwargs):\n    return 0.5\n"),
        ]).map(lambda item: Slip("wrong", *item)),
    }
    return st.one_of(*(made[kind] for kind in kinds))


def filled_notebook(unit_name, notebook, cell_text=None, helper=None):
    """``notebook`` (a source or released notebook's JSON) with every solution cell holding its finished function,
    the cell of ``helper`` holding ``cell_text`` instead."""
    return notebook_filled(notebook, units.get(unit_name).rubric.TASK_OF_FUNCTION, finished(unit_name),
                           cells={helper: cell_text} if helper is not None else None)


def source_notebook(unit_name):
    unit = units.get(unit_name)
    return json.loads((Path(source_folder(unit)) / notebook_name(unit)).read_text(encoding="utf-8"))


def py_file(unit_name, helper, cell_text):
    """The finished .py file with ``helper``'s function replaced by ``cell_text``."""
    text = finished(unit_name)
    return text.replace(function_source(text, helper), cell_text.rstrip("\n"), 1)
