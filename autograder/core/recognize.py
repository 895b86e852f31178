"""Which unit a submission is of, told from what it holds, read as data (never run), and the code a unit hands
its students finished, found where another unit's students hand it in as their own.

Every way in grades an entry as the unit it is told (``--unit``, the bundle's unit, the nbgrader assignment). An
entry whose contents clearly say another unit is not graded as the one it is told: it would score what another
unit's code happens to earn there (the third unit's finished rotation, handed to its students, earns the second
unit's rotation tasks). ``recognise`` weighs, for each unit, what the entry holds:

* each of the unit's own task functions (or classes) defined at the top of a cell or file: 1 point. A function
  that another unit hands its students finished (its rubric's ``BORROWS``, with what it calls: ``Unit.given_code``)
  counts 1/2 for the unit it belongs to, and where it is, statement for statement, that finished code (see
  ``normal_form``), it counts 1/2 for each unit that hands it out instead: such a cell is what a borrowing unit's
  students receive, no sign that the entry is the lending unit's;
* the file named after the unit's module (``<unit>.py``, ``<unit>.ipynb``): 1 point;
* nbgrader's grade ids in a notebook's cell metadata that are the unit's (its tests' ids, which are unique
  across units, and its solution cells', named after its task functions): 2 points, once.

The functions are read from each cell's syntax tree; a cell that does not parse is read line by line (``def`` or
``class`` at the start of a line) so that a syntax error in one cell does not hide what the entry is.

The rule (``Recognition.says_other``): an entry graded as unit X says another unit Y when Y's evidence, all told,
is the greatest of all, and Y's evidence from the functions alone is at least twice X's and at least ``MARGIN``
points above it. The functions decide because they are what is graded, and because a way in may write the labels
itself: nbgrader puts the assignment's grade cells back into any notebook handed in to it and drops the ids it
does not know, and its grade is made from a copy named after the assignment; a name or the ids still weigh
against a refusal where the functions are few. An entry with no evidence (an empty file, a file of other
functions) or with no clear winner is graded as X and scores what it scores. A unit's reference and its blank
stubs always recognise as that unit (tests/core/test_unit_recognition.py).

The code a unit hands out earns nothing (``handed_out``): a task function of unit X that sits in a given-code
cell (between the banner ``Unit.given_code`` writes and its end line) and is, in ``normal_form``, the finished
code another unit hands out, scores nothing for its task, and the student is told why. The banner is what tells
the copy from the lending unit's own reference: the code itself is the same text, so a copy that drops the
banner is graded as the lending unit's answer (docs/instructors.md: release a borrowing unit after the lending
unit's deadline).

The core names no unit: all of this is read from the registry (``units``).
"""

import ast
import copy
import functools
import itertools
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from autograder.core import units
from autograder.core.parsing import parse

OWN_WEIGHT = 1.0  # one of the unit's own task functions
LENT_WEIGHT = 0.5  # a function another unit hands out finished (for its owner, or for the units handing it out)
NAME_WEIGHT = 1.0  # the file named after the unit's module
IDS_WEIGHT = 2.0  # the unit's nbgrader grade ids in the notebook's cells
MARGIN = 2.0  # how far above the graded unit's function evidence another unit's must be to say that unit

_DEFINED_LINE = re.compile(r"^(?:async\s+def|def|class)\s+(\w+)", re.MULTILINE)
GIVEN_BANNER = "# --- Given: "  # the first line of Unit.given_code's head
GIVEN_END = "# --- End of the given code."


def _parse(source):
    """The syntax tree of ``source``, or None where it does not parse. One parse at a time (core/parsing.py:
    ast.parse is not safe beside another thread's)."""
    try:
        return parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _top_level(body):
    """(name, node) of each def and class at module level, in order, looking into the module's own compound
    statements (``if``, ``try``, ``with``, loops), whose definitions also bind module names."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
        elif isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
            for part in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):  # ``rope_scores = ...`` binds the name too
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    yield target.id, None


def _given_regions(source):
    """The line ranges (first, last), 1-based, of the given-code regions a chunk holds (the banner's line to the
    end line, or to the chunk's end)."""
    lines = source.splitlines()
    regions, start = [], None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith(GIVEN_BANNER) and start is None:
            start = number
        elif stripped == GIVEN_END and start is not None:
            regions.append((start, number))
            start = None
    if start is not None:
        regions.append((start, len(lines)))
    return regions


@dataclass
class Definition:
    name: str
    node: object  # the ast node, or None (an assignment, or a cell that does not parse)
    given: bool  # inside a given-code region of its chunk
    chunk: str  # the chunk's label


def definitions(submission):
    """{name: Definition} of what the submission's chunks define at module level: the last definition of each
    name, as running the chunks in order would leave it."""
    found = {}
    for chunk in submission.chunks:
        source = chunk["source"]
        tree = _parse(source)
        if tree is None:  # a cell that does not parse: its names, read line by line
            for name in _DEFINED_LINE.findall(source):
                found[name] = Definition(name, None, False, chunk["label"])
            continue
        regions = _given_regions(source)
        for name, node in _top_level(tree.body):
            inside = node is not None and any(first <= node.lineno <= last for first, last in regions)
            found[name] = Definition(name, node, inside, chunk["label"])
    return found


def normal_form(node):
    """A def's form for comparing two texts statement for statement: docstrings and comments gone (comments are
    not in the tree), every parameter and local name replaced by its order of appearance, constants, calls,
    attributes and global names kept. Two functions with the same form do the same thing the same way."""
    node = copy.deepcopy(node)
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body and isinstance(
                body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            inner.body = body[1:] or [ast.Pass()]
    local = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.arg):
            local.add(inner.arg)
        elif isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
            local.add(inner.id)
        elif isinstance(inner, ast.ExceptHandler) and inner.name:
            local.add(inner.name)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner is not node:
            local.add(inner.name)
    renamed = {}

    def new(name):
        return renamed.setdefault(name, f"_{len(renamed)}")

    for inner in ast.walk(node):
        if isinstance(inner, ast.arg):
            inner.arg = new(inner.arg)
        elif isinstance(inner, ast.Name) and inner.id in local:
            inner.id = new(inner.id)
        elif isinstance(inner, ast.ExceptHandler) and inner.name:
            inner.name = new(inner.name)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner is not node:
            inner.name = new(inner.name)
    return ast.dump(node, annotate_fields=False, include_attributes=False)


@functools.lru_cache(maxsize=1)
def handed_out_forms():
    """{(lender, function): {borrower: normal form}}: each task function of a unit that another unit hands its
    students finished, as it hands it out. Read once per process, before grading threads start (Grader does)."""
    forms = {}
    for borrower in units.all_units():
        for lender in borrower.borrowed:
            owned = units.get(lender).rubric.TASK_OF_FUNCTION
            tree = parse(borrower.given_code(lender))
            for name, node in _top_level(tree.body):
                if node is not None and name in owned:
                    forms.setdefault((lender, name), {})[borrower.name] = normal_form(node)
    return forms


def prepare():
    """Read what recognition needs (the registry, the handed-out code) now: before grading threads start."""
    handed_out_forms()


def _handed_out_by(lender, definition):
    """The units that hand ``definition`` (of ``lender``'s task function) out finished, as it stands; empty where
    it is the student's own text or cannot be compared."""
    forms = handed_out_forms().get((lender, definition.name), {})
    if not forms or definition.node is None:
        return []
    try:
        mine = normal_form(definition.node)
    except RecursionError:  # a tree too deep to copy or print: not the handed-out code, which is shallow
        return []
    return sorted(borrower for borrower, form in forms.items() if form == mine)


@dataclass
class Recognition:
    evidence: dict  # {unit name: points}, all told
    functions: dict  # {unit name: points}, of the functions defined alone
    reasons: dict = field(default_factory=dict)  # {unit name: [what speaks for it]}

    def best(self):
        """The unit with the most evidence, where one has more than every other; else None."""
        top = max(self.evidence.values(), default=0)
        leaders = [name for name, points in self.evidence.items() if points == top]
        return leaders[0] if top > 0 and len(leaders) == 1 else None

    def says_other(self, unit_name):
        """The other unit this entry clearly is, graded as ``unit_name``; None where it is that unit's, or
        cannot be told (see the module's docstring for the rule)."""
        best = self.best()
        if best is None or best == unit_name:
            return None
        mine, theirs = self.functions.get(unit_name, 0), self.functions[best]
        return best if theirs >= mine + MARGIN and theirs >= 2 * mine else None

    def why(self, unit_name):
        """What speaks for ``unit_name``, in words (a reader's, not a list of points)."""
        return "; ".join(self.reasons.get(unit_name, [])) or "nothing"


def _listed(names, most=4):
    names = sorted(names)
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def recognise(submission, defined=None):
    """The Recognition of ``submission`` (a loaded intake.load.Submission): its evidence for each unit.
    ``defined``: its ``definitions``, where they were read already."""
    defined = definitions(submission) if defined is None else defined
    file_name = getattr(submission.path, "name", "") or ""
    grade_ids = set(getattr(submission, "grade_ids", ()) or ())
    evidence, reasons = {unit.name: 0.0 for unit in units.all_units()}, {}
    own, given = {}, {}
    for unit in units.all_units():
        lent = {name for lender, name in handed_out_forms() if lender == unit.name}
        for name in sorted(set(defined) & set(unit.rubric.TASK_OF_FUNCTION)):
            if name not in lent:
                evidence[unit.name] += OWN_WEIGHT
                own.setdefault(unit.name, []).append(name)
                continue
            borrowers = _handed_out_by(unit.name, defined[name])
            if borrowers:  # the finished code those units hand out: evidence for them, not for this unit
                for borrower in borrowers:
                    evidence[borrower] += LENT_WEIGHT
                    given.setdefault(borrower, []).append(name)
            else:
                evidence[unit.name] += LENT_WEIGHT
                own.setdefault(unit.name, []).append(name)
    functions = dict(evidence)
    for unit in units.all_units():
        words = reasons.setdefault(unit.name, [])
        if own.get(unit.name):
            words.append(f"it defines {_listed(own[unit.name])}")
        if given.get(unit.name):
            words.append(f"it holds {_listed(given[unit.name])} as the {unit.name} assignment hands them out")
        if file_name in unit.file_names:
            evidence[unit.name] += NAME_WEIGHT
            words.append(f"it is named {file_name}")
        ids = grade_ids & ({test.id for test in unit.rubric.TESTS} | set(unit.rubric.TASK_OF_FUNCTION))
        if ids:
            evidence[unit.name] += IDS_WEIGHT
            words.append(f"its cells are tagged as the {unit.name} notebook's ({_listed(ids, 2)})")
    return Recognition(evidence, functions, reasons)


def other_unit(submission, unit, defined=None):
    """(the other unit's name, why) where ``submission`` graded as ``unit`` clearly is another unit's; else None."""
    recognition = recognise(submission, defined)
    other = recognition.says_other(unit.name)
    return (other, recognition.why(other)) if other else None


def looks_like(other, why, graded_as):
    """What a refused entry's row says: which unit it looks like and why, as what it is graded as, and what to do."""
    return (f"Not graded: this looks like a {other} submission ({why}); {graded_as}. It scores nothing here: "
            f"hand in the right notebook, or, if this is a {other} submission, grade it as {other}.")


def handed_out(unit, submission, defined=None):
    """{task: message} for each of ``unit``'s tasks whose function the submission holds as the finished code
    another unit hands its students: in a given-code cell, statement for statement (``normal_form``)."""
    found = {}
    defined = definitions(submission) if defined is None else defined
    for name, definition in defined.items():
        if name not in unit.rubric.TASK_OF_FUNCTION or not definition.given:
            continue
        borrowers = _handed_out_by(unit.name, definition)
        if borrowers:
            task = unit.rubric.TASK_OF_FUNCTION[name]
            found[task] = (f"No points: {name} here is the finished code the {' and '.join(borrowers)} assignment "
                           f"hands its students (the given cell, in {definition.chunk}), not your own. Code handed "
                           f"out finished earns nothing: write {name} yourself in its own cell.")
    return found


def _names_in(path, depth=2):
    """The name of entry ``path`` and of what it holds down to ``depth`` folders (nbgrader's
    submitted/STUDENT/UNIT/), names only: no file is opened, no link followed, at most 100 names."""
    names, folders = [path.name], [(path, 0)]
    while folders and len(names) < 100:
        folder, level = folders.pop()
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                continue
            with os.scandir(folder) as listing:
                for entry in itertools.islice(listing, 100):
                    names.append(entry.name)
                    if level < depth and entry.is_dir(follow_symlinks=False):
                        folders.append((Path(entry.path), level + 1))
        except (OSError, ValueError):
            continue
    return names[:100]


def of_paths(paths, most=50):
    """{unit name: how many entries} of the entries ``paths`` hold (at most ``most`` read, as a class run reads
    them: intake.load, never run), each counted for the unit ``recognise`` finds (``Recognition.best``). A folder
    holding files named after several units counts for each (it must be graded once per unit); an entry that
    cannot be read counts for the unit its name, or its files' names, give (its row will say why it scores
    nothing); one that says no unit is not counted. What a command without ``--unit`` goes by."""
    from collections import Counter

    from autograder.intake.load import LoadError, expand, load

    every_name = tuple(name for unit in units.all_units() for name in unit.file_names)
    try:
        found = expand(paths, every_name)[:most]
    except (OSError, ValueError):
        return {}
    counts = Counter()
    for path in found:
        named = {unit.name for unit in map(units.of_file_name, _names_in(path)) if unit is not None}
        if len(named) > 1:  # a student's folder of several units' files (nbgrader's submitted/STUDENT/): each counts
            counts.update(named)
            continue
        try:
            best = recognise(load(path, every_name)).best()
        except (LoadError, OSError, ValueError):  # unreadable (its row will say why): its name, or its files'
            best = named.pop() if named else None
        if best is not None:
            counts[best] += 1
    return dict(counts)
