"""Units of study, and what the grader's core knows of one: nothing by name.

A unit is a folder here, ``autograder/units/<name>/``, named after the module its students write
(``<name>.py`` or ``<name>.ipynb``, the nbgrader assignment of the same name). It holds:

* ``rubric.py``: its tasks, tests, points and timed paths, in the form below (``Task``, ``Test``,
  ``TimedPath``), ended by ``complete(globals())``;
* ``cases/<task>.py``: the hidden cases of each task (``build(rng, generator)``, see ``autograder/core/cases.py``);
* ``job.py``: the code that runs beside the student's in a job, the only code of the unit that does: the
  stand-ins for helper functions and, for the timing tier, how each timed path's inputs are drawn and how
  the path is called (``STAND_INS``, ``timing_inputs``, ``score_path``). It imports torch and nothing of
  the grader; its text is sent with each job, so it never has to be readable inside the sandbox;
* ``lesson.py``: its lesson, in jupytext's percent format (nbgrader's notebook is built from it);
* ``self_checks/test_<task>.py``: the self-checks its students run with ``pytest -k <task>``.

Beside it, ``solutions/<name>.py`` is its reference. A reference may call another unit's reference functions
(``from solutions.<other> import f``) where the rubric declares them (``BORROWS = {"<other>": ("f",)}``): students get
that code finished in their file in place of the import, and the grader runs the other unit's reference in place of
whatever their file holds under those names (``Unit.with_given``, ``Unit.given_chunks``).
The core (load, sandbox, worker, compare, report, batch, timing, the ways in) takes a ``Unit`` and reads all
of this through it; a new unit adds files and edits none of the core.
"""

import ast
import functools
import importlib
import pkgutil
import textwrap
from functools import cached_property
from pathlib import Path

from autograder.core import parsing

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"  # a reference's solution regions (nbgrader's markers)
FOLDER = ROOT / "autograder" / "units"  # one package a unit


def strip_markers(source):
    """The reference as a student's finished file would read: markers removed, code kept."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END)) + "\n"


class Unit:
    """One unit of study, as the core sees it (see the module's docstring)."""

    def __init__(self, name):
        self.name = name
        self.package = f"autograder.units.{name}"
        self.folder = FOLDER / name
        self.rubric = importlib.import_module(f"{self.package}.rubric")

    def __repr__(self):
        return f"Unit({self.name!r})"

    @property
    def title(self):
        return self.rubric.TITLE

    @property
    def module_name(self):
        """The module the students write, and the name the job gives their code."""
        return self.name

    @property
    def file_names(self):
        return (f"{self.name}.py", f"{self.name}.ipynb")

    @property
    def reference_path(self):
        return ROOT / "solutions" / f"{self.name}.py"

    @property
    def finished_reference(self):
        """The reference's text as a student's finished file would read (solution markers removed, the given code of
        the units it borrows from written in: ``with_given``)."""
        return strip_markers(self.with_given(self.reference_path.read_text(encoding="utf-8")))

    @property
    def borrowed(self):
        """{other unit: (function, ...)}: the functions of other units' references that this unit's reference calls,
        as its rubric's ``BORROWS`` declares them (none where it sets none).

        Its students get those functions finished, as the other unit's reference writes them (``given_code``), and
        are not graded on them again: every job runs that code after the student's own (``given_chunks``), so the
        reference's functions stand in for whatever the student's file holds under their names."""
        return {name: tuple(functions) for name, functions in getattr(self.rubric, "BORROWS", {}).items()}

    def given_code(self, other):
        """The code of ``other``'s reference that this unit borrows, as students receive it: the functions named in
        ``borrowed``, with the functions and module-level names of that reference they reach, and its imports, in
        its order, headed and ended by a comment that says where it comes from."""
        names = self.borrowed[other]
        lender = get(other)
        source = lender.finished_reference
        tree = parsing.parse(source)
        parts = {}  # the module-level definitions and assignments of the lender, by the names they bind
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    parts.update({name.id: node for name in ast.walk(target) if isinstance(name, ast.Name)})
        wanted, waiting = set(), list(names)
        while waiting:
            name = waiting.pop()
            if name not in parts:
                raise ValueError(f"{self.name} borrows {name} from {other}, whose reference defines no {name}")
            if parts[name] in wanted:
                continue
            wanted.add(parts[name])
            waiting.extend(used.id for used in ast.walk(parts[name]) if isinstance(used, ast.Name) and used.id in parts)
        lines = source.splitlines()
        kept = [node for node in tree.body if node in wanted or isinstance(node, (ast.Import, ast.ImportFrom))]

        def text(node):
            first = min([node.lineno] + [decorator.lineno for decorator in getattr(node, "decorator_list", [])])
            return "\n".join(lines[first - 1:node.end_lineno])

        imports = [text(node) for node in kept if isinstance(node, (ast.Import, ast.ImportFrom))]
        definitions = [text(node) for node in kept if not isinstance(node, (ast.Import, ast.ImportFrom))]
        shown = ", ".join(names)
        head = textwrap.fill(f"--- Given: {shown}, from the unit {lender.title!r} ({other}), finished, with what it "
                             "calls there. It is not graded again here: the grading runs this code as it stands here, "
                             "whatever your copy of it holds.", width=116, initial_indent="# ",
                             subsequent_indent="# ") + "\n"
        return head + "\n".join(imports) + "\n\n\n" + "\n\n\n".join(definitions) + "\n# --- End of the given code.\n"

    def with_given(self, source):
        """``source``, a text of this unit's reference, as students receive it: each module-level line that imports
        from another unit's reference (``from solutions.<unit> import ...``, of a unit it borrows from) replaced by
        that unit's ``given_code``. A text without such a line is returned as it is."""
        borrowed = self.borrowed
        if not borrowed:
            return source
        lines = source.splitlines()
        for node in reversed(parsing.parse(source).body):
            other = _lender(node)
            if other is None:
                continue
            if other not in borrowed:
                raise ValueError(f"line {node.lineno}: the reference imports from {other}, which BORROWS in "
                                 f"{self.name}'s rubric does not name")
            extra = sorted({alias.name for alias in node.names} - set(borrowed[other]))
            if extra:
                raise ValueError(f"line {node.lineno}: the reference imports {', '.join(extra)} from {other}, which "
                                 f"BORROWS in {self.name}'s rubric does not name")
            lines[node.lineno - 1:node.end_lineno] = self.given_code(other).rstrip("\n").splitlines()
        return "\n".join(lines) + ("\n" if source.endswith("\n") else "")

    @cached_property
    def given_chunks(self):
        """The given code of every unit this one borrows from, as chunks of a submission: the grader runs them after
        the student's own chunks in every job (and its loop check reads them there), so that the lender's reference
        is what the student's functions call. Made once (it parses the lender's reference: the grader reads it
        before its grading threads start, since a parse is not safe beside them, see core/parsing.py)."""
        return [{"label": f"the given code of {other}", "source": self.given_code(other)} for other in self.borrowed]

    @cached_property
    def reference(self):
        return importlib.import_module(f"solutions.{self.name}")

    @property
    def job_path(self):
        return self.folder / "job.py"

    @cached_property
    def job_source(self):
        return self.job_path.read_text(encoding="utf-8")

    @cached_property
    def job(self):
        """The unit's job code as a module of the grader's (its stand-ins compute expected outputs)."""
        return importlib.import_module(f"{self.package}.job")

    def cases_module(self, task):
        return importlib.import_module(f"{self.package}.cases.{task}")

    @property
    def lesson_path(self):
        """The lesson text (jupytext's percent format), from which nbgrader's notebook is built."""
        return self.folder / "lesson.py"

    @property
    def self_checks_folder(self):
        """The students' self-check tests (``test_<task>.py``), copied into what they receive."""
        return self.folder / "self_checks"

    @property
    def extra_files(self):
        """Kit files shipped to students beside checks.py (no answer in them): {name in the release: path}.

        The rubric's ``SHIPPED``: names of files in the unit's folder, or {name: path from autograder/units/}
        for a file of another unit's (the second unit's lesson trains the first unit's tiny model)."""
        shipped = getattr(self.rubric, "SHIPPED", ())
        if isinstance(shipped, dict):
            return {name: FOLDER / path for name, path in shipped.items()}
        return {name: self.folder / name for name in shipped}


def folder_names():
    """The units' names as their folders say, sorted, without loading any (the command line's choices: a unit whose
    rubric fails to load can still be named, and check-unit then says why)."""
    return tuple(sorted(path.parent.name for path in FOLDER.glob("*/rubric.py") if path.parent.name.isidentifier()))


@functools.lru_cache(maxsize=1)
def names():
    """Every unit's name, in the order of ``ORDER`` in its rubric (then by name); read once per process."""
    found = [module.name for module in pkgutil.iter_modules([str(FOLDER)]) if module.ispkg]
    ordered = tuple(sorted(found, key=lambda name: (get(name).rubric.ORDER, name)))
    ids = [test.id for name in ordered for test in get(name).rubric.TESTS]
    assert len(ids) == len(set(ids)), "two units have a test of the same name: nbgrader's grade ids must differ"
    return ordered


_LOADED = {}
REFERENCES = "solutions"  # the package of the units' references: ``from solutions.<unit> import f`` borrows f


def _lender(node):
    """The unit a module-level statement of a reference imports from (``from solutions.<unit> import ...``), or
    None for any other statement."""
    if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(REFERENCES + "."):
        return node.module[len(REFERENCES) + 1:]
    return None


def get(name):
    """The unit called ``name``; KeyError with the units there are where there is none."""
    if name not in _LOADED:
        if not (FOLDER / name / "rubric.py").is_file() or not name.isidentifier():
            known = [module.name for module in pkgutil.iter_modules([str(FOLDER)]) if module.ispkg]
            raise KeyError(f"no unit called {name!r}; the units are {', '.join(sorted(known))}")
        _LOADED[name] = Unit(name)
    return _LOADED[name]


def all_units():
    return tuple(get(name) for name in names())


def of_file_name(file_name):
    """The unit whose students write a file of this name (``rotary_alibi.ipynb``), or None."""
    stem, _, suffix = str(file_name).rpartition(".")
    if suffix in ("py", "ipynb") and stem in names():
        return get(stem)
    return None


def module_names():
    """The module names of every unit (a student's code may import none of them: see loop_check)."""
    return tuple(unit.module_name for unit in all_units())


def rubric_of(results):
    """The rubric of the unit that ``results`` were graded as (a class is graded as one unit).

    Where none of them says (an empty class), the only unit there is, or the first."""
    found = {getattr(result, "unit", "") for result in results} - {""}
    if len(found) > 1:
        raise ValueError(f"results of several units together: {', '.join(sorted(found))}; report each apart")
    return get(found.pop()).rubric if found else all_units()[0].rubric


def of_test(test_id):
    """The unit whose rubric has the test ``test_id`` (ids are unique across units); KeyError if none has."""
    for unit in all_units():
        if test_id in unit.rubric.TEST_BY_ID:
            return unit
    raise KeyError(f"no unit has a test called {test_id!r}")


def test_named(test_id):
    """The rubric Test called ``test_id``, of whichever unit has it, or None."""
    try:
        return of_test(test_id).rubric.TEST_BY_ID[test_id]
    except KeyError:
        return None
