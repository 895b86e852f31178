"""Which submissions of a class share code, task by task: a report for the instructor, never a grade.

Each submission is read by ``autograder.intake.load`` (as the grader reads it: no link followed, nothing run),
and for each task of the unit the functions it grades (``rubric.TASKS[...].functions``) are taken from it: the
top-level ``def`` or ``class`` of that name, the last one where it is defined twice; a notebook's code cells are
read in order, each parsed on its own, so a later cell's definition replaces an earlier one (a cell that does not
parse is left out, and the report says so). After them come the helpers they use: the file's own top-level
functions and classes that they read by name (once what has no effect is dropped), and that those read in turn,
in the order first read, each once; a name the stub defines (another task's function, the code a unit borrows
finished) is never a helper. A helper that nothing of the task reads is not compared, and neither is the order of
the file's functions. A function longer than ``MAX_LINES`` lines, as written, is not compared.

Normalisation, on the syntax tree (``ast``):

* comments and blank lines are gone with the parse; type annotations are dropped;
* docstrings, and every other statement that is a lone constant (``...``, a bare string), are dropped, and so
  is ``pass``;
* statements that affect no output are dropped (``drop_no_effect``), again and again until none is left, all
  judged from the code's form alone: assignments to names that nothing live reads (a value that calls something
  stays, as a bare call: ``_ = x.add_(1)`` becomes ``x.add_(1)``), augmented assignments to a name only ever
  bound to new objects (``n = 0; n += 1``, not ``y = x[0]; y += 1``, which changes x), class attributes that
  nothing reads, expressions that call nothing but builtins and ``math`` and ``torch`` constructors, ``pass``,
  imports and inner functions and classes that nothing uses, ``del`` of such names, what follows a ``return``,
  ``raise``, ``break`` or ``continue``, the branch an ``if`` on a constant never takes, and ``if``, ``for`` and
  ``try`` statements left with nothing in them. A call to anything else, a store into an object (``x[i] = v``,
  ``self.a = v``), an augmented assignment to a name that is read, ``global``, ``nonlocal``, and every store of a
  function that reads its variables by name (``locals()``, ``eval``) are kept;
* every string literal and f-string becomes the one string ``'S'``: messages are free text, and rewording one
  costs a copier nothing;
* every local identifier (arguments, names assigned or bound by ``for``, ``with``, ``except``, comprehensions,
  lambdas, and the names of inner functions and classes) becomes a placeholder ``v_0``, ``v_1``..., numbered in
  order of first appearance; attribute names, keyword-argument names, method names of a class, names imported
  or declared ``global``, and every name not bound in the function (``torch``, ``math``, ``F``, the student's
  helper functions) are kept, since they carry the algorithm.

The normalised code is written back with ``ast.unparse`` and cut into tokens by ``tokenize``; statement ends
and indentation are tokens too. What the stub already gives is left out of that stream, exactly:

* the ``def``/``class`` line, with its decorators, of each function and class that the stub defines (the
  graded function, a graded class and its methods);
* their docstrings (as every docstring);
* each statement directly in the body of one of those that reads, once normalised, as a statement of the stub
  at the same place (``super().__init__()``), and every ``raise NotImplementedError`` there, in any form.

The stub is the unit's reference with its solution regions replaced (``autograder.course.build.make_stub``),
so it is exactly what students receive. A task whose stream is then empty is the stub's code only (or not
defined at all): its submission is compared with no one for that task. Then, as MOSS's base file, every k-gram of
the stub's own code (``stub_kgrams``: its functions and classes, the finished code a unit borrows included) is no
student's fingerprint, wherever it is found. A helper's name becomes a placeholder, as a local name does.

Fingerprints: the hashes of the stream's k-grams (``K`` tokens), winnowed (Schleimer, Wilkerson and Aiken,
"Winnowing: local algorithms for document fingerprinting", SIGMOD 2003): of each window of ``WINDOW``
consecutive hashes the smallest is kept (robust winnowing: the rightmost smallest, or the one already kept).
Within a k-gram the placeholders are numbered again, from the k-gram's first token, so a k-gram is the same
for two copies whatever the names around it: a statement added at the top changes the k-grams that span it,
not every one after it. Any run of ``K + WINDOW - 1`` tokens that two submissions share gives them a common
fingerprint; no run shorter than ``K`` does.

A stream shorter than ``K`` tokens is one k-gram.

Code most of the class writes alike (the natural way to write a line, an idiom of the lesson) says nothing
about copying: for each task, a fingerprint that more than half of the submissions compared hold is left out of
every comparison, as MOSS leaves out passages found in more than ``-m`` programs, where at least
``COMMON_MIN_CLASS`` submissions are compared (``--keep-common`` keeps them).

Two numbers for a pair and a task, from the fingerprint sets A and B:

* the score, their Jaccard index |A & B| / |A | B|: 1 for code that is the same once normalised, and it falls
  both for code one side lacks and for code it adds;
* the containment, |A & B| / min(|A|, |B|): the share of the smaller side's fingerprints found in the other, 1
  where one side's code is all in the other's, however much the other adds.

Pairs rank by containment, since what a copier adds (helpers that are called, statements that do something)
lowers the score but not the containment; a pair that shares fewer than ``RANK_MIN_SHARED`` fingerprints counts
as containing at most shared / ``RANK_MIN_SHARED``, as a run or two is too little to rank on. Ties go by score,
then by fingerprints shared. Across tasks, a pair's containment and score are the means over the tasks both
submitted code for, ranked the same way.

The page (``write_html``) is one file with its style inside and no script. Every text that comes from a
submission (names, code, messages) is escaped with ``html.escape``, and the page's body is then passed through
``nh3.clean`` with only the tags and attributes the page uses.
"""

import argparse
import ast
import copy
import csv
import hashlib
import html
import io
import sys
import tokenize
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from autograder.core import parsing, units
from autograder.intake.inert import csv_cell, inert, inert_line
from autograder.intake.load import LoadError, class_entries, load, submission_name

# A line of this code is about 10 to 14 tokens once normalised (``v_3 = torch.arange(v_0, device=v_2)`` and its
# end are 13). K = 15 makes the shortest shared run that counts a little longer than one such line, so two honest
# solutions that share a typical line (the same torch.arange, the same ValueError check) share no fingerprint
# for it alone; much longer and the short functions (40 to 80 tokens in all) would have too few k-grams to
# compare. WINDOW = 4 keeps about 2 / (WINDOW + 1) = 40% of the k-grams: every shared run of 18 tokens, about a
# line and a half, is found, and a function still has a dozen fingerprints or more.
K = 15
WINDOW = 4
TOP = 10  # pairs shown per task, and across tasks
# A fingerprint held by more than half of the submissions compared for a task is the class's common code, left out
# of every comparison (MOSS's -m), where at least this many are compared: then "more than half" is 4 or more, two
# more than a copied pair, so a copy and its source alone never make a run common.
COMMON_MIN_CLASS = 6
# Pairs rank by containment, which a copier's additions do not lower; but a pair that shares only a run or two
# (fewer than this many fingerprints) counts as containing at most shared / RANK_MIN_SHARED, so a two-line start of
# a function found in a classmate's does not outrank a copied whole.
RANK_MIN_SHARED = 5
# A function longer than this, as written, is not compared: the reference's longest is 95 lines, and 10,000 take
# 3 s. So far above any honest function that padding, which is dropped before comparing, cannot hide a copy here
# without also making it the longest function of the class by a hundred times (the report lists it, with its length).
MAX_LINES = 10_000

_NEWLINE, _INDENT, _DEDENT = "<newline>", "<indent>", "<dedent>"
_STRING = "S"  # what every string literal becomes
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Pair(NamedTuple):
    """One compared pair for one task; ``name_a`` comes before ``name_b`` in the class's order."""

    task: str
    name_a: str
    name_b: str
    score: float  # Jaccard index of the two fingerprint sets, 0 to 1
    shared_fingerprints: int  # how many fingerprints they have in common
    containment: float = 0.0  # the share of the smaller set found in the other, 0 to 1


class Overall(NamedTuple):
    """One pair across tasks: the means of its scores over the tasks both submitted code for."""

    name_a: str
    name_b: str
    score: float
    tasks: int  # how many tasks the mean is over
    shared_fingerprints: int  # summed over those tasks
    containment: float = 0.0


@dataclass
class Shown:
    """One function as the student wrote it: where it is, and its lines."""

    name: str
    label: str  # the file, or the notebook's cell (load's chunk label)
    first_line: int  # the number of lines[0] in that file or cell
    lines: list


@dataclass
class TaskCode:
    """A submission's code for one task: the original functions, and their normalised stream and fingerprints."""

    functions: list = field(default_factory=list)  # [Shown], in the order of the task's functions
    tokens: list = field(default_factory=list)
    origins: list = field(default_factory=list)  # per token: (index in functions, first line, last line)
    fingerprints: list = field(default_factory=list)  # [(hash, index of the k-gram's first token)]
    hashes: frozenset = frozenset()
    why_not: str = ""  # why this task is compared with no one; "" when it is compared

    def lines_of(self, hashes):
        """{index in functions: set of line numbers} of the k-grams whose fingerprints are in ``hashes``."""
        found = defaultdict(set)
        for value, start in self.fingerprints:
            if value in hashes:
                for function, first, last in self.origins[start:start + K]:
                    found[function].update(range(first, last + 1))
        return found


@dataclass
class Fingerprinted:
    """One submission, fingerprinted task by task."""

    name: str
    path: Path
    tasks: dict  # {task name: TaskCode}
    notes: list  # what was left out (cells that do not parse), for the report


class Report(list):
    """The per-task rows (``Pair``), each task's ranked (closest first), in the rubric's task order.

    Beside the rows: ``unit``, ``overall`` (``Overall`` rows, ranked), ``sources`` ({name: Fingerprinted}),
    ``skipped`` ([(name, reason)]: every entry of the class that was not compared at all, and why) and
    ``not_compared`` ({task: [(name, why)]}: submissions that gave a task nothing to compare) and ``common``
    ({task: frozenset of fingerprints}: those most of the class shares, left out of every comparison).
    """

    def __init__(self, rows, unit, overall, sources, skipped, not_compared, common=None):
        super().__init__(rows)
        self.common = common or {}
        self.unit = unit
        self.overall = overall
        self.sources = sources
        self.skipped = skipped
        self.not_compared = not_compared


# Normalisation.

class _Tidy(ast.NodeTransformer):
    """Drop docstrings, lone constants, ``pass`` and annotations; turn every string into ``'S'``."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            statements = getattr(node, name, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                kept = [statement for statement in statements if not _is_no_op(statement)]
                if not kept and name == "body":
                    kept = [ast.copy_location(ast.Pass(), statements[0])]  # a body cannot be empty
                setattr(node, name, kept)
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            return ast.copy_location(ast.Constant(_STRING), node)
        return node

    def visit_JoinedStr(self, node):
        return ast.copy_location(ast.Constant(_STRING), node)

    def visit_arg(self, node):
        node.annotation = None
        node.type_comment = None
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        node.type_comment = None
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node):
        if node.value is None:
            return None  # ``x: int`` binds nothing
        return self.visit(ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node))


def _is_no_op(statement):
    return isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr)
                                               and isinstance(statement.value, ast.Constant))


def _bound_names(root):
    """The names local to ``root`` (a function or class and everything inside it)."""
    bound, declared_global = set(), set()
    for node in ast.walk(root):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, _SCOPES + (ast.Lambda,)):
            for inner in ast.iter_child_nodes(node):
                # A function or class defined in a function is local there; one in a class body is a method.
                if isinstance(inner, _SCOPES) and not isinstance(node, ast.ClassDef):
                    bound.add(inner.name)
    return bound - declared_global


class _Rename(ast.NodeTransformer):
    """Rename the local names to placeholders in order of first appearance (the fields' order, as written)."""

    def __init__(self, bound, prefix):
        self.bound, self.prefix, self.names, self.kept = bound, prefix, {}, set()

    def placeholder(self, name):
        if name not in self.bound:
            return name
        if name not in self.names:
            self.names[name] = f"{self.prefix}{len(self.names)}"
        return self.names[name]

    def visit_Name(self, node):
        node.id = self.placeholder(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.placeholder(node.arg)
        return self.generic_visit(node)

    def visit_ExceptHandler(self, node):
        if node.name:
            node.name = self.placeholder(node.name)
        return self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            node.name = self.placeholder(node.name)
        return self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node):
        if node.rest:
            node.rest = self.placeholder(node.rest)
        return self.generic_visit(node)

    def visit_Nonlocal(self, node):
        node.names = [self.placeholder(name) for name in node.names]
        return node

    def _scope(self, node):
        # A method's name is an attribute of its class's objects, and the task's own name is the rubric's: kept.
        if id(node) not in self.kept:
            node.name = self.placeholder(node.name)
        if isinstance(node, ast.ClassDef):
            self.kept.update(id(inner) for inner in node.body if isinstance(inner, _SCOPES))
        return self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope


def _placeholder_prefix(root):
    """A prefix no identifier in ``root`` starts with, so a placeholder is never a name the student wrote."""
    names = {node.id for node in ast.walk(root) if isinstance(node, ast.Name)}
    names |= {node.arg for node in ast.walk(root) if isinstance(node, ast.arg)}
    names |= {node.attr for node in ast.walk(root) if isinstance(node, ast.Attribute)}
    names |= {node.name for node in ast.walk(root) if isinstance(node, _SCOPES)}
    prefix = "v_"
    while any(name.startswith(prefix) for name in names):
        prefix = "v" + prefix
    return prefix


# Dropping what has no effect on any output. Read as data, never run: what a statement does is judged from its
# form alone, and where the form does not tell, the statement is kept.

# Calls that change nothing (they may raise): builtins, and functions of math and of torch that make a new value.
_PURE_BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "dict", "divmod",
    "enumerate", "float", "format", "frozenset", "getattr", "hasattr", "hash", "hex", "id", "int", "isinstance",
    "issubclass", "len", "list", "max", "min", "oct", "ord", "pow", "range", "repr", "reversed", "round", "set",
    "slice", "sorted", "str", "sum", "tuple", "type", "zip"})
_PURE_TORCH = frozenset({
    "arange", "as_tensor", "empty", "empty_like", "eye", "finfo", "full", "full_like", "iinfo", "linspace",
    "logspace", "ones", "ones_like", "tensor", "zeros", "zeros_like"})
# A function that calls one of these can read its variables by name: none of its stores is dropped.
_INTROSPECTION = frozenset({"dir", "eval", "exec", "locals", "vars"})
_ATTRIBUTE_INTROSPECTION = frozenset({"delattr", "getattr", "hasattr", "setattr"})  # what a class's may be read by
_BLOCKS = ("body", "orelse", "finalbody")
_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # try ... except* is Python 3.11's


def _outside_lambdas(expression):
    """The nodes of ``expression``, less the bodies of its lambdas (defining a lambda runs none of it)."""
    stack = [expression]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(ast.iter_child_nodes(node.args) if isinstance(node, ast.Lambda) else ast.iter_child_nodes(node))


def _pure_call(function, shadowed):
    if isinstance(function, ast.Name):
        return function.id in _PURE_BUILTINS and function.id not in shadowed
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
        module = function.value.id
        return module not in shadowed and (module == "math" or (module == "torch" and function.attr in _PURE_TORCH))
    return False


def _pure(expression, shadowed):
    """Whether evaluating ``expression`` changes nothing (it may raise): no call but to ``_PURE_*``, no await,
    yield or ``:=``. ``shadowed``: the names bound in the function, which are then not the builtins or modules."""
    for node in _outside_lambdas(expression):
        if isinstance(node, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return False
        if isinstance(node, ast.Call) and not _pure_call(node.func, shadowed):
            return False
    return True


def _fresh(expression):
    """Whether ``expression`` makes a new object, never one reachable from elsewhere (``x + 1``, not ``x`` or
    ``x[0]``, a view): an augmented assignment to a name bound only to fresh objects changes nothing else."""
    return isinstance(expression, (ast.Constant, ast.JoinedStr, ast.Compare, ast.BinOp, ast.UnaryOp, ast.List,
                                   ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp,
                                   ast.GeneratorExp))


def _target_names(target):
    """The names a plain assignment target binds, or None where it stores into an object (``x[0]``, ``x.a``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return _names_of(target.elts)
    return None


def _names_of(targets):
    """The names all of ``targets`` bind (see _target_names), or None where one stores into an object."""
    names = set()
    for target in targets:
        inner = _target_names(target)
        if inner is None:
            return None
        names |= inner
    return names


def _imported_names(statement):
    if any(alias.name == "*" for alias in statement.names):
        return None
    return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}


class _Liveness:
    """Which names may reach an effect, in a function or class and everything inside it.

    A *candidate* is a statement whose only effect is to bind names: an assignment to plain names, an augmented
    one to a name only ever bound to fresh objects, an import, a ``del`` of names, an undecorated inner ``def`` or
    ``class``. Every other statement is an effect (a call, a store into an object, a return, a branch's test) and
    the names it reads are live; a candidate's own reads are live once a name it binds is. Names are not told
    apart by scope (a name read anywhere is read everywhere), which only ever keeps more. In a class body, an
    assignment to a plain name is a candidate too, dead where no attribute of that name is read or written
    anywhere in the class and nothing there reads attributes by a computed name (``getattr``, ``__dict__``).
    """

    def __init__(self, root):
        self.shadowed = _bound_names(root)
        self.protected = {name for node in ast.walk(root) if isinstance(node, (ast.Global, ast.Nonlocal))
                          for name in node.names}
        self.introspects = any(isinstance(node, ast.Name) and node.id in _INTROSPECTION for node in ast.walk(root))
        self.attributes = {node.attr for node in ast.walk(root) if isinstance(node, ast.Attribute)}
        self.class_introspects = self.introspects or any(
            (isinstance(node, ast.Name) and node.id in _ATTRIBUTE_INTROSPECTION)
            or (isinstance(node, ast.Attribute) and node.attr == "__dict__") for node in ast.walk(root))
        self.class_level = set()  # id(candidate) of those in a class body
        self.unfresh = self._unfresh(root)
        self.binds = {}  # id(candidate statement): the names it binds
        self.reads = defaultdict(set)  # id(candidate) or None (an effect): the names read there
        for statement in root.body:
            self._statement(statement, None, in_class=isinstance(root, ast.ClassDef))
        binders = defaultdict(list)  # name: the candidates that bind it
        for candidate, names in self.binds.items():
            for name in names:
                binders[name].append(candidate)
        self.live, waiting = set(), list(self.reads[None] | self.protected)
        while waiting:  # a name is live: so is every name read by a candidate that binds it
            name = waiting.pop()
            if name not in self.live:
                self.live.add(name)
                waiting.extend(read for candidate in binders[name] for read in self.reads[candidate])

    @staticmethod
    def _unfresh(root):
        """Names an augmented assignment may not be dropped for: bound to something not fresh, somewhere."""
        unfresh = {node.arg for node in ast.walk(root) if isinstance(node, ast.arg)}
        for node in ast.walk(root):
            if isinstance(node, ast.Assign) and not _fresh(node.value):
                unfresh |= {name.id for target in node.targets for name in ast.walk(target)
                            if isinstance(name, ast.Name)}
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                unfresh |= {name.id for name in ast.walk(node.target) if isinstance(name, ast.Name)}
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                unfresh |= {name.id for name in ast.walk(node.optional_vars) if isinstance(name, ast.Name)}
            elif isinstance(node, ast.NamedExpr):
                unfresh.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                unfresh |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ExceptHandler) and node.name:
                unfresh.add(node.name)
            elif isinstance(node, _SCOPES):
                unfresh.add(node.name)
        return unfresh

    def dead(self, statement):
        """Whether ``statement`` is a candidate none of whose names is live."""
        names = self.binds.get(id(statement))
        if id(statement) in self.class_level and names & self.attributes:
            return False
        return names is not None and not self.introspects and not names & self.live

    def _candidate(self, statement, in_class):
        """The names ``statement`` binds and the part of it whose reads count only if they are live; or None."""
        if in_class:  # a class body's names are the class's attributes
            if not isinstance(statement, ast.Assign) or self.class_introspects or not all(
                    isinstance(target, ast.Name) and not target.id.startswith("__") for target in statement.targets):
                return None
            self.class_level.add(id(statement))
            return ({target.id for target in statement.targets},
                    statement.value if _pure(statement.value, self.shadowed) else None)
        if isinstance(statement, ast.Assign):
            names = _names_of(statement.targets)
            if names is None:
                return None
            return names, (statement.value if _pure(statement.value, self.shadowed) else None)
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            if statement.target.id in self.unfresh:
                return None
            return {statement.target.id}, (statement.value if _pure(statement.value, self.shadowed) else None)
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            names = _imported_names(statement)
            return (names, None) if names else None
        if isinstance(statement, ast.Delete) and all(isinstance(target, ast.Name) for target in statement.targets):
            return {target.id for target in statement.targets}, None
        if isinstance(statement, _SCOPES) and not statement.decorator_list:
            return {statement.name}, statement
        return None

    def _statement(self, statement, owner, in_class):
        found = self._candidate(statement, in_class)
        if found is not None:
            names, conditional = found
            self.binds[id(statement)] = names
            if conditional is statement:  # an inner def or class: all it reads counts only if it is used
                self._children(statement, id(statement), in_class=isinstance(statement, ast.ClassDef))
                return
            if conditional is not None:
                self._expression(conditional, id(statement))
            elif isinstance(statement, (ast.Assign, ast.AugAssign)):
                self._expression(statement.value, owner)  # it calls something: evaluated whatever it binds
            return
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            self.reads[owner].add(statement.target.id)  # ``x += 1`` reads x (and may change what x is bound to)
        self._children(statement, owner, in_class=isinstance(statement, ast.ClassDef) or
                       (in_class and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))))

    def _children(self, node, owner, in_class):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self._statement(child, owner, in_class)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                self._children(child, owner, in_class)
            else:
                self._expression(child, owner)

    def _expression(self, node, owner):
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load):
                self.reads[owner].add(inner.id)


def _ends(statement):
    """Whether control never passes from ``statement`` to the one after it."""
    if isinstance(statement, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(statement, ast.If):
        return bool(statement.orelse) and _ends_block(statement.body) and _ends_block(statement.orelse)
    return False


def _ends_block(statements):
    return any(_ends(statement) for statement in statements)


def _only_pass(statements):
    return all(isinstance(statement, ast.Pass) for statement in statements)


class _Sweep:
    """One pass that drops, from a function or class, what ``_Liveness`` finds dead and what never runs or does
    nothing: ``pass``, expressions with no effect, statements after a return, raise, break or continue, the
    branch an ``if`` on a constant never takes, empty branches and loops over nothing that matters."""

    def __init__(self, liveness):
        self.liveness = liveness

    def block(self, statements, in_class):
        kept = []
        for statement in statements:
            kept.extend(self.statement(statement, in_class))
            if kept and _ends(kept[-1]):
                break  # the rest never runs
        return kept

    def _blocks(self, node, in_class):
        for name in _BLOCKS:
            statements = getattr(node, name, None)
            if isinstance(statements, list):
                setattr(node, name, self.block(statements, in_class))
        for handler in getattr(node, "handlers", ()):
            handler.body = self.block(handler.body, in_class) or [ast.copy_location(ast.Pass(), handler)]
        for case in getattr(node, "cases", ()):
            case.body = self.block(case.body, in_class) or [ast.copy_location(ast.Pass(), case.pattern)]
        if hasattr(node, "body") and not node.body and not isinstance(node, ast.If):
            node.body = [ast.copy_location(ast.Pass(), node)]  # a body cannot be empty

    def statement(self, statement, in_class):
        """What ``statement`` becomes: a list of none, itself, or what stands for it."""
        liveness = self.liveness

        def pure(expression):
            return _pure(expression, liveness.shadowed)

        if liveness.dead(statement):
            value = getattr(statement, "value", None)
            if isinstance(statement, (ast.Assign, ast.AugAssign)) and not pure(value):
                return [ast.copy_location(ast.Expr(value), statement)]  # the call stays; the name it bound goes
            return []
        if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr) and pure(statement.value)):
            return []
        if isinstance(statement, ast.Assign) and len(statement.targets) > 1 and not in_class:
            live = [target for target in statement.targets
                    if (_target_names(target) is None or _target_names(target) & liveness.live
                        or liveness.introspects)]
            statement.targets = live or statement.targets[:1]
        inner_class = isinstance(statement, ast.ClassDef) or (
            in_class and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self._blocks(statement, inner_class)
        if isinstance(statement, (ast.If, ast.While)) and isinstance(statement.test, ast.Constant):
            if isinstance(statement, ast.If):
                return statement.body if statement.test.value else statement.orelse
            if not statement.test.value:
                return statement.orelse
        if isinstance(statement, ast.If):
            if not statement.body and not statement.orelse and pure(statement.test):
                return []
            statement.body = statement.body or [ast.copy_location(ast.Pass(), statement)]
        if isinstance(statement, ast.For) and _only_pass(statement.body) and not statement.orelse \
                and pure(statement.iter):
            names = _target_names(statement.target)  # None for ``for x[0] in ...``: a store into an object
            if names is not None and not names & liveness.live:
                return []
        if isinstance(statement, _TRIES) and _only_pass(statement.body):
            return statement.orelse + statement.finalbody  # nothing in it can raise: no handler runs
        return [statement]


def drop_no_effect(root):
    """``root`` (a function or class node, already tidied) without the statements that affect no output, dropped
    again and again until none is left (a store whose only reader was dropped goes next). Changed in place."""
    before = None
    for _ in range(1_000):  # until a pass changes nothing (one resolves whole chains; the bound is for safety)
        now = ast.dump(root)
        if now == before:
            break
        before = now
        sweep = _Sweep(_Liveness(root))
        root.body = sweep.block(root.body, in_class=isinstance(root, ast.ClassDef)) or [
            ast.copy_location(ast.Pass(), root)]
    return ast.fix_missing_locations(root)  # each statement says where it was written; one made here, its parent's


def normalise(node, drop=True):
    """A normalised copy of a function or class node (see the module's docstring), and its placeholders' names.

    ``drop``: whether statements with no effect are dropped (not for the stub, whose given statements may be
    unused only because its solution is missing). The copy keeps the original's line numbers, so each statement
    still says where it was written.
    """
    tree = _Tidy().visit(copy.deepcopy(node))
    if drop:
        tree = drop_no_effect(tree)
    prefix = _placeholder_prefix(tree)
    renamer = _Rename(_bound_names(tree), prefix)
    renamer.kept.add(id(tree))
    tree = renamer.visit(tree)
    return tree, set(renamer.names.values())


# The stream of tokens, with where each came from.

def _tokens(text):
    """The tokens of ``text`` as (string, row), with statement ends and indentation as tokens of their own."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER, tokenize.ENCODING):
            continue
        if token.type == tokenize.NEWLINE:
            found.append((_NEWLINE, token.start[0]))
        elif token.type == tokenize.INDENT:
            found.append((_INDENT, token.start[0]))
        elif token.type == tokenize.DEDENT:
            found.append((_DEDENT, token.start[0]))
        else:
            found.append((token.string, token.start[0]))
    return found


def _header_lines(statement):
    """The original lines of a statement itself: all of a simple one; a compound one's up to its first inner line."""
    first = min([statement.lineno] + [decorator.lineno for decorator in getattr(statement, "decorator_list", ())])
    inner = [child.lineno for child in ast.iter_child_nodes(statement) if isinstance(child, ast.stmt)]
    inner += [handler.lineno for handler in getattr(statement, "handlers", ())]
    inner += [case.pattern.lineno for case in getattr(statement, "cases", ())]
    last = statement.end_lineno if not inner else max(statement.lineno, min(inner) - 1)
    return first, last


def _statement_tokens(statement, function):
    """The tokens of a normalised statement, each with (function, first line, last line) of the original."""
    text = ast.unparse(statement)
    tokens = _tokens(text)
    written = [node for node in ast.walk(statement) if isinstance(node, ast.stmt)]
    try:
        again = [node for node in ast.walk(parsing.parse(text)) if isinstance(node, ast.stmt)]
    except (SyntaxError, ValueError):  # not expected of ast.unparse's text; the statement's lines stand for all
        again = []
    owner = {}  # row of ``text``: the original lines of the innermost statement there
    if len(written) == len(again) and all(type(a) is type(b) for a, b in zip(written, again)):
        for original, reparsed in zip(written, again):  # breadth first: an inner statement overwrites its parent
            start = min([reparsed.lineno] + [d.lineno for d in getattr(reparsed, "decorator_list", ())])
            lines = _header_lines(original)
            for row in range(start, reparsed.end_lineno + 1):
                owner[row] = lines
    whole = (statement.lineno, statement.end_lineno)
    return [(string, (function,) + owner.get(row, whole)) for string, row in tokens]


def _is_placeholder_raise(statement):
    if not isinstance(statement, ast.Raise) or statement.exc is None:
        return False
    exc = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _given(stub_node):
    """{path of names: [normalised statements]} of a stub's function or class: what each of its defs gives."""
    given = {}

    def walk(node, path):
        given[path] = [ast.unparse(statement) for statement in node.body if not isinstance(statement, _SCOPES)]
        for inner in node.body:
            if isinstance(inner, _SCOPES):
                walk(inner, path + (inner.name,))

    walk(normalise(stub_node, drop=False)[0], (stub_node.name,))
    return given


def _stream(tree, given, function):
    """The tokens of a normalised function or class that are the student's own: what the stub gives left out."""
    tokens = []

    def walk(node, path):
        left = list(given[path])
        for statement in node.body:
            if isinstance(statement, _SCOPES) and path + (statement.name,) in given:
                walk(statement, path + (statement.name,))
                continue
            if isinstance(statement, ast.Pass) or _is_placeholder_raise(statement):
                continue  # the stub's placeholder, or what _Tidy left of a body that was only a docstring
            text = ast.unparse(statement)
            if text in left:
                left.remove(text)
                continue
            tokens.extend(_statement_tokens(statement, function))

    if (tree.name,) in given:
        walk(tree, (tree.name,))
    else:  # a function the stub does not have: all of it is the student's
        tokens.extend(_statement_tokens(tree, function))
    return tokens


# Fingerprints.

def kgram_hashes(tokens, placeholders, k=None):
    """The hash of each k-gram (``k`` tokens, default ``K``) of ``tokens``, placeholders numbered again within each.

    A stream shorter than ``k`` is one k-gram, so a short function still has a fingerprint.
    """
    k = K if k is None else k
    if not tokens:
        return []
    hashes = []
    for start in range(max(1, len(tokens) - k + 1)):
        seen = {}
        parts = [seen.setdefault(token, f"\x01{len(seen)}") if token in placeholders else token
                 for token in tokens[start:start + k]]
        digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
        hashes.append(int.from_bytes(digest, "big"))
    return hashes


def winnow(hashes, window=None):
    """Robust winnowing: [(hash, position)] of the smallest hash of each window of ``window`` (default ``WINDOW``)
    consecutive hashes.

    Of equal smallest hashes the one already kept stays kept, else the rightmost is taken; each position is
    kept once. Fewer hashes than a window: the smallest of them all.
    """
    window = WINDOW if window is None else window
    kept, last = [], -1
    for start in range(max(1, len(hashes) - window + 1)):
        part = hashes[start:start + window]
        if not part:
            break
        smallest = min(part)
        if last >= start and hashes[last] == smallest:
            continue
        last = start + len(part) - 1 - part[::-1].index(smallest)
        kept.append((hashes[last], last))
    return kept


# Reading a class.

def _definitions(submission):
    """({name: (node, chunk label, chunk lines)} of top-level defs and classes, the last of each name; notes)."""
    found, notes = {}, []
    for chunk in submission.chunks:
        try:
            tree = parsing.parse(chunk["source"])
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            where = f" at line {error.lineno}" if getattr(error, "lineno", None) else ""
            notes.append(f"{chunk['label']} does not parse{where} ({type(error).__name__}); "
                         "the functions in it are not compared")
            continue
        lines = chunk["source"].split("\n")
        for node in tree.body:
            if isinstance(node, _SCOPES):
                found[node.name] = (node, chunk["label"], lines)
    return found, notes


def _used_names(tree):
    """The names ``tree`` reads, in the order they are first written."""
    found = sorted((node.lineno, node.col_offset, node.id) for node in ast.walk(tree)
                   if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))
    return list(dict.fromkeys(name for _, _, name in found))


def _task_code(rubric_task, definitions, givens, given_kgrams=frozenset()):
    """A submission's ``TaskCode`` for one task: its functions, then the helpers they use (the file's own top-level
    functions and classes they read by name, at any depth, that the stub does not define), each normalised."""
    code = TaskCode()
    tokens, placeholders = [], set()
    missing, helpers = [], {}  # helpers: {name: the placeholder that stands for it}
    waiting = list(rubric_task.functions)
    while waiting:
        name = waiting.pop(0)
        if name not in definitions:
            missing.append(name)
            continue
        node, label, lines = definitions[name]
        first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        if node.end_lineno - first >= MAX_LINES:
            return TaskCode(why_not=f"{name} is {node.end_lineno - first + 1:,} lines long, more than the "
                                    f"{MAX_LINES:,} compared")
        code.functions.append(Shown(name, inert_line(label), first, lines[first - 1:node.end_lineno]))
        tree, names = normalise(node)
        placeholders |= names
        for used in _used_names(tree):
            if used in definitions and used not in givens and used not in rubric_task.functions \
                    and used not in helpers:
                # A helper's name is the student's to choose: it stands as a placeholder, as a local name does.
                helpers[used] = f"\x02{used}"
                waiting.append(used)
        tokens.extend(_stream(tree, givens.get(name, {}), len(code.functions) - 1))
    code.tokens = [helpers.get(string, string) for string, _ in tokens]
    code.origins = [origin for _, origin in tokens]
    fingerprints = winnow(kgram_hashes(code.tokens, placeholders | set(helpers.values())))
    code.fingerprints = [(value, start) for value, start in fingerprints if value not in given_kgrams]
    code.hashes = frozenset(value for value, _ in code.fingerprints)
    if missing and not code.functions:
        code.why_not = f"does not define {', '.join(missing)}"
    elif not code.hashes:  # nothing of its own, or only what the stub gives, pasted in (every k-gram the stub's)
        code.why_not = "has the stub's code only"
    return code


def _stub_scopes(unit):
    """The top-level functions and classes of ``unit``'s stub, as its students receive it."""
    from autograder.course.build import make_stub

    stub = make_stub(unit.reference_path.read_text(encoding="utf-8"), unit)
    return [node for node in parsing.parse(stub).body if isinstance(node, _SCOPES)]


def stub_givens(unit):
    """{function or class name: what the stub gives in it (see ``_given``)}, for each of ``unit``'s stub's."""
    return {node.name: _given(node) for node in _stub_scopes(unit)}


def stub_kgrams(unit):
    """The hashes of every k-gram of the code ``unit``'s stub gives (MOSS's base file): a fingerprint of these is
    no student's own, whatever function it is found in. Each function and class is cut into k-grams both as a
    whole (as a helper's code is) and statement by statement below its def lines (as a graded function's is)."""
    found = set()
    for node in _stub_scopes(unit):
        every_path = {path: [] for path in _given(node)}
        for drop in (False, True):  # a given statement may be unused in the stub, and used in a submission
            tree, names = normalise(node, drop)
            for tokens in (_statement_tokens(tree, 0), _stream(tree, every_path, 0)):
                found.update(kgram_hashes([string for string, _ in tokens], names))
    return frozenset(found)


def fingerprint_submission(unit, submission, name=None, givens=None, given_kgrams=None):
    """A loaded submission (``load``'s Submission) fingerprinted for each task of ``unit``.

    ``givens``: ``stub_givens(unit)``, and ``given_kgrams``: ``stub_kgrams(unit)``, made here where not given.
    """
    unit = units.get(unit) if isinstance(unit, str) else unit
    givens = stub_givens(unit) if givens is None else givens
    given_kgrams = stub_kgrams(unit) if given_kgrams is None else given_kgrams
    definitions, notes = _definitions(submission)
    tasks = {}
    for task in unit.rubric.TASKS:
        try:
            tasks[task.name] = _task_code(task, definitions, givens, given_kgrams)
        except (RecursionError, MemoryError, SyntaxError, ValueError) as error:  # nesting beyond ast.unparse
            tasks[task.name] = TaskCode(why_not=f"could not be analysed ({type(error).__name__})")
    return Fingerprinted(name or inert_line(submission.name, limit=120), submission.path, tasks, notes)


def _unique_names(paths):
    """A name for each submission path, inert and unique: its submission name, numbered from its second time."""
    names, taken = [], set()
    for path in paths:
        name = candidate = inert_line(submission_name(path), limit=120)
        count = 1
        while candidate in taken:
            count += 1
            candidate = f"{name}-{count}"
        taken.add(candidate)
        names.append(candidate)
    return names


def _read_class(unit, paths):
    """({name: Fingerprinted}, [(name, reason)]): every entry of the class, compared or skipped with why."""
    found, skipped_entries = class_entries(paths, unit.file_names)
    skipped = [(inert_line(Path(path).name, limit=120), reason) for path, reason in skipped_entries]
    givens, given_kgrams = stub_givens(unit), stub_kgrams(unit)
    sources = {}
    for path, name in zip(found, _unique_names(found)):
        try:
            submission = load(path, unit.file_names)
        except LoadError as error:
            skipped.append((name, f"could not be read: {inert_line(error)}"))
            continue
        except (OSError, ValueError) as error:
            skipped.append((name, f"could not be read ({type(error).__name__})"))
            continue
        try:
            fingerprinted = fingerprint_submission(unit, submission, name, givens, given_kgrams)
        except Exception as error:  # noqa: BLE001  (a student's file never stops the report; it is listed)
            skipped.append((name, f"could not be analysed ({type(error).__name__})"))
            continue
        if not any(code.functions for code in fingerprinted.tasks.values()):
            why = "; ".join(fingerprinted.notes) or "it defines none of the unit's functions"
            skipped.append((name, f"nothing to compare: {why}"))
            continue
        sources[name] = fingerprinted
    return sources, skipped


def jaccard(first, second):
    """|A & B| / |A | B| of two sets; 0 where both are empty."""
    union = len(first | second)
    return len(first & second) / union if union else 0.0


def containment(first, second):
    """|A & B| / min(|A|, |B|): the share of the smaller set found in the other; 0 where either is empty."""
    smaller = min(len(first), len(second))
    return len(first & second) / smaller if smaller else 0.0


def common_fingerprints(fingerprint_sets, min_class=None):
    """The fingerprints held by more than half of ``fingerprint_sets`` (one per submission compared for a task),
    where there are at least ``min_class`` of them (default ``COMMON_MIN_CLASS``); else none."""
    min_class = COMMON_MIN_CLASS if min_class is None else min_class
    fingerprint_sets = list(fingerprint_sets)
    if len(fingerprint_sets) < min_class:
        return frozenset()
    held = Counter(value for hashes in fingerprint_sets for value in hashes)
    return frozenset(value for value, count in held.items() if 2 * count > len(fingerprint_sets))


def _rank(row):
    """How a pair (or an ``Overall`` row) ranks, closest first: by its containment, counted as at most
    shared / ``RANK_MIN_SHARED`` (a few shared runs are too few to rank on, however small the smaller side), then
    by its Jaccard index, then by how many fingerprints it shares."""
    return (-min(row.containment, row.shared_fingerprints / RANK_MIN_SHARED), -row.score,
            -row.shared_fingerprints)


def similarity_report(unit, paths, keep_common=False):
    """Compare every pair of submissions in ``paths`` (files, student folders or class folders), task by task.

    ``unit``: a unit's name or ``Unit``. Returns a ``Report``: a list of ``Pair`` rows (task, name_a, name_b,
    score, shared_fingerprints, containment), the rubric's tasks in order and each task's pairs ranked, closest
    first, with the ranking across tasks in ``.overall``, what was not compared in ``.skipped`` and
    ``.not_compared``, and the fingerprints most of the class shares, left out, in ``.common``. A pair is compared
    for a task only where both have code of their own for it. ``keep_common``: leave nothing out for being
    common. Raises FileNotFoundError for a path that is not there, and KeyError for a unit there is not.
    """
    unit = units.get(unit) if isinstance(unit, str) else unit
    sources, skipped = _read_class(unit, paths)
    names = list(sources)
    order = {name: index for index, name in enumerate(names)}
    rows, not_compared, common = [], {}, {}
    for task in unit.rubric.TASK_NAMES:
        compared = [name for name in names if not sources[name].tasks[task].why_not]
        not_compared[task] = [(name, sources[name].tasks[task].why_not) for name in names
                              if sources[name].tasks[task].why_not]
        common[task] = frozenset() if keep_common else common_fingerprints(
            sources[name].tasks[task].hashes for name in compared)
        kept = {name: sources[name].tasks[task].hashes - common[task] for name in compared}
        pairs = []
        for index, first in enumerate(compared):
            a = kept[first]
            for second in compared[index + 1:]:
                b = kept[second]
                pairs.append(Pair(task, first, second, jaccard(a, b), len(a & b), containment(a, b)))
        pairs.sort(key=lambda pair: _rank(pair) + (order[pair.name_a], order[pair.name_b]))
        rows.extend(pairs)
    return Report(rows, unit, overall_ranking(rows, names), sources, skipped, not_compared, common)


def overall_ranking(rows, order=None):
    """``Overall`` rows: each pair's mean containment and mean score over the tasks it was compared on, ranked as
    a task's pairs are (then by the number of tasks, more first)."""
    scores = defaultdict(list)
    for row in rows:
        scores[(row.name_a, row.name_b)].append(row)
    rank = {name: index for index, name in enumerate(order or ())}
    overall = [Overall(a, b, sum(row.score for row in found) / len(found), len(found),
                       sum(row.shared_fingerprints for row in found),
                       sum(row.containment for row in found) / len(found)) for (a, b), found in scores.items()]
    overall.sort(key=lambda row: _rank(row) + (-row.tasks, rank.get(row.name_a, 0), rank.get(row.name_b, 0),
                                               row.name_a, row.name_b))
    return overall


def top_pairs(report, task, top=TOP):
    """The ``top`` closest pairs of ``task`` that share a fingerprint (the report's rows are ranked already)."""
    return [row for row in report if row.task == task and row.shared_fingerprints][:top]


def _top_overall(report, top):
    return [row for row in report.overall if row.shared_fingerprints][:top]


def _no_pairs(report, task):
    """Why a task has no pair to show."""
    if any(row.task == task for row in report):
        return "No two submissions share a fingerprint for this task."
    return "Fewer than two submissions have code of their own for this task."


# Writing the report.

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table.pairs { border-collapse: collapse; margin: 0.5em 0 1em; }
table.pairs th, table.pairs td { border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: left; }
td.score { text-align: right; font-variant-numeric: tabular-nums; }
details { margin: 0.4em 0; }
summary { cursor: pointer; }
div.side { display: flex; gap: 1em; align-items: flex-start; }
div.code { flex: 1 1 50%; min-width: 0; overflow-x: auto; border: 1px solid #ccc; }
div.code h4 { margin: 0; padding: 0.3em 0.5em; background: #eee; font-weight: normal; }
pre { margin: 0; padding: 0.3em 0; font-size: 0.85em; line-height: 1.35; width: max-content; min-width: 100%; }
span.line { display: block; padding-right: 0.5em; white-space: pre; }
span.shared { background: #ffe08a; }
span.number { display: inline-block; width: 3.5em; color: #888; text-align: right; padding-right: 0.8em; }
p.note { color: #555; max-width: 60em; }
""".strip()

_TAGS = {"h1", "h2", "h3", "h4", "p", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "div",
         "pre", "span", "code", "ul", "li", "em", "strong", "a", "section"}
_ATTRIBUTES = {"*": {"class", "id"}, "a": {"href"}, "details": {"open"}}


def _e(text):
    """Text of a student's, or of anyone's, as HTML text: every <, >, &, " and ' escaped."""
    return html.escape(str(text), quote=True)


def _anchor(*parts):
    """An id made of plain characters only, from a task and a pair's place: never from a student's text."""
    return "-".join(str(part) for part in parts)


def _code_panel(name, code, highlighted):
    parts = [f'<div class="code"><h4>{_e(name)}</h4>']
    for index, shown in enumerate(code.functions):
        lines = highlighted.get(index, set())
        parts.append(f'<h4>{_e(shown.name)} in {_e(shown.label)}, line {shown.first_line}</h4><pre>')
        for offset, line in enumerate(shown.lines):
            number = shown.first_line + offset
            css = "line shared" if number in lines else "line"
            # inert: a bidirectional override or a zero-width character in a student's line is shown, not obeyed
            parts.append(f'<span class="{css}"><span class="number">{number}</span>{_e(inert(line))}</span>')
        parts.append("</pre>")
    parts.append("</div>")
    return "".join(parts)


def _pair_view(pair, sources, anchor, opened, common=frozenset()):
    first, second = sources[pair.name_a].tasks[pair.task], sources[pair.name_b].tasks[pair.task]
    shared = (first.hashes & second.hashes) - common
    return (f'<details id="{anchor}"{" open" if opened else ""}><summary>{_e(pair.name_a)} and {_e(pair.name_b)}: '
            f"containment {pair.containment:.2f}, score {pair.score:.2f} ({pair.shared_fingerprints} shared "
            'fingerprints)</summary><div class="side">'
            f"{_code_panel(pair.name_a, first, first.lines_of(shared))}"
            f"{_code_panel(pair.name_b, second, second.lines_of(shared))}</div></details>")


def page(report, sources=None, top=TOP):
    """The report as one self-contained HTML page (no script, no file or address outside it)."""
    sources = report.sources if sources is None else sources
    unit = report.unit
    body = [f"<h1>Similar code: {_e(unit.title)} ({_e(unit.name)})</h1>",
            f'<p class="note">{len(sources)} submissions, compared task by task: the functions each task grades '
            "and the helpers they call. Before comparing, comments, docstrings, annotations and blank lines are "
            "removed, every string becomes one placeholder string, and every local name (arguments, variables, "
            "inner functions, helpers) becomes a placeholder; attribute and library names are kept. Statements "
            "that affect no output are dropped: assignments to names nothing reads, expressions that call "
            "nothing, pass, unused imports and inner functions, code after a return or raise. What the stub gives "
            "is left out: the def and class lines of its functions and methods, their docstrings, "
            "super().__init__(), raise NotImplementedError, and every run of its finished code. Fingerprints are "
            f"winnowed hashes of {K}-token runs (window {WINDOW}); those more than half the submissions of a "
            f"task hold (where {COMMON_MIN_CLASS} or more are compared) are the class's common code and left out. "
            "Containment is the share of the smaller side's fingerprints found in the other: code added to a "
            "copy does not lower it. The score is the Jaccard index of the two sets: 1 is the same code once "
            "normalised, 0 no shared run. Pairs are ranked by containment (counted as at most shared / "
            f"{RANK_MIN_SHARED} where they share fewer than {RANK_MIN_SHARED} fingerprints), then by score. "
            "Highlighted lines hold runs the two share. A high score says where to look; it does not say who "
            "copied.</p>"]
    body.append("<h2>All tasks: means over the tasks both submitted code for</h2>")
    if _top_overall(report, top):
        body.append('<table class="pairs"><thead><tr><th>#</th><th>submission</th><th>submission</th>'
                    "<th>mean containment</th><th>mean score</th><th>tasks</th><th>shared fingerprints</th>"
                    "</tr></thead><tbody>")
        for rank, row in enumerate(_top_overall(report, top), start=1):
            body.append(f"<tr><td>{rank}</td><td>{_e(row.name_a)}</td><td>{_e(row.name_b)}</td>"
                        f'<td class="score">{row.containment:.2f}</td>'
                        f'<td class="score">{row.score:.2f}</td><td class="score">{row.tasks}</td>'
                        f'<td class="score">{row.shared_fingerprints}</td></tr>')
        body.append("</tbody></table>")
    else:
        body.append("<p>No two submissions share a fingerprint in any task.</p>")
    for number, task in enumerate(unit.rubric.TASKS):
        pairs = top_pairs(report, task.name, top)
        body.append(f'<section><h2 id="{_anchor("task", number)}">{_e(task.title)} ({_e(task.name)})</h2>')
        if pairs:
            body.append('<table class="pairs"><thead><tr><th>#</th><th>submission</th><th>submission</th>'
                        "<th>containment</th><th>score</th><th>shared fingerprints</th></tr></thead><tbody>")
            for rank, pair in enumerate(pairs, start=1):
                body.append(f'<tr><td><a href="#{_anchor("pair", number, rank)}">{rank}</a></td>'
                            f"<td>{_e(pair.name_a)}</td><td>{_e(pair.name_b)}</td>"
                            f'<td class="score">{pair.containment:.2f}</td><td class="score">{pair.score:.2f}</td>'
                            f'<td class="score">{pair.shared_fingerprints}</td></tr>')
            body.append("</tbody></table>")
            body.extend(_pair_view(pair, sources, _anchor("pair", number, rank), rank == 1,
                                   report.common.get(task.name, frozenset()))
                        for rank, pair in enumerate(pairs, start=1))
        else:
            body.append(f"<p>{_e(_no_pairs(report, task.name))}</p>")
        common = len(report.common.get(task.name, ()))
        if common:
            body.append(f"<p>{common} fingerprint{'s' * (common != 1)} that more than half of the submissions "
                        "hold for this task were left out as the class's common code.</p>")
        left_out = report.not_compared.get(task.name, [])
        if left_out:
            body.append("<p>Not compared for this task:</p><ul>")
            body.extend(f"<li>{_e(name)}: {_e(why)}</li>" for name, why in left_out)
            body.append("</ul>")
        body.append("</section>")
    if report.skipped:
        body.append("<h2>Not compared at all</h2><ul>")
        body.extend(f"<li>{_e(name)}: {_e(reason)}</li>" for name, reason in report.skipped)
        body.append("</ul>")
    notes = [(name, note) for name, found in sources.items() for note in found.notes]
    if notes:
        body.append("<h2>Left out of submissions</h2><ul>")
        body.extend(f"<li>{_e(name)}: {_e(note)}</li>" for name, note in notes)
        body.append("</ul>")
    import nh3

    # Every student text above went through html.escape; nh3 keeps only the tags this page uses, in case.
    cleaned = nh3.clean("\n".join(body), tags=_TAGS, attributes=_ATTRIBUTES, link_rel=None, url_schemes=set())
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>Similar code: {_e(unit.name)}</title>\n<style>\n{_STYLE}\n</style>\n</head>\n<body>\n"
            f"{cleaned}\n</body>\n</html>\n")


def write_html(report, out_path, sources=None, top=TOP):
    """Write ``page(report, sources, top)`` to ``out_path`` (``sources`` defaults to the report's own)."""
    from autograder.core.report import write_atomically

    write_atomically(out_path, page(report, sources, top))
    return Path(out_path)


def csv_text(report):
    """similarity.csv: every compared pair of every task, then each pair across tasks (task "overall"), each in
    its ranking's order; ``score`` is the Jaccard index (for "overall", means over ``tasks`` tasks)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["task", "submission_a", "submission_b", "score", "containment", "shared_fingerprints",
                     "tasks"])
    for row in report:
        writer.writerow([csv_cell(row.task), csv_cell(row.name_a), csv_cell(row.name_b), f"{row.score:.4f}",
                         f"{row.containment:.4f}", row.shared_fingerprints, 1])
    for row in report.overall:
        writer.writerow(["overall", csv_cell(row.name_a), csv_cell(row.name_b), f"{row.score:.4f}",
                         f"{row.containment:.4f}", row.shared_fingerprints, row.tasks])
    return buffer.getvalue()


def write_csv(report, out_path):
    from autograder.core.report import write_atomically

    write_atomically(out_path, csv_text(report))
    return Path(out_path)


def summary_text(report, top=TOP):
    """The top pairs of each task and across tasks, and what was skipped, as lines for a terminal."""
    lines = ["Containment (the share of the smaller side found in the other), then score (Jaccard index):"]
    for task in report.unit.rubric.TASKS:
        pairs = top_pairs(report, task.name, top)
        lines.append(f"{task.name} ({task.title}):")
        lines += [f"  {pair.containment:.2f}  {pair.score:.2f}  {pair.name_a}  ~  {pair.name_b}  "
                  f"({pair.shared_fingerprints} shared)" for pair in pairs] or [f"  {_no_pairs(report, task.name)}"]
    lines.append("All tasks (means over the tasks both submitted):")
    lines += [f"  {row.containment:.2f}  {row.score:.2f}  {row.name_a}  ~  {row.name_b}  "
              f"({row.tasks} task{'s' * (row.tasks != 1)})"
              for row in _top_overall(report, top)] or ["  No two submissions share a fingerprint in any task."]
    if report.skipped:
        lines.append("Not compared:")
        lines += [f"  {name}: {inert_line(reason)}" for name, reason in report.skipped]
    return "\n".join(lines) + "\n"


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m autograder similarity",
        description="Rank the pairs of submissions whose code for each task is most alike (normalised, "
                    "fingerprinted and winnowed), and write FOLDER/similarity.html and FOLDER/similarity.csv.")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="submissions (.py, .ipynb, a student's folder) or class folders holding them")
    parser.add_argument("--unit", required=True, choices=units.folder_names(), help="the unit the submissions are of")
    parser.add_argument("--out", required=True, metavar="FOLDER", help="where to write the report")
    parser.add_argument("--top", type=int, default=TOP, metavar="N",
                        help=f"pairs shown per task and across tasks (default {TOP})")
    parser.add_argument("--keep-common", action="store_true",
                        help="keep the code that more than half of the class shares in the comparison (it is left "
                             f"out by default, where {COMMON_MIN_CLASS} or more submissions are compared), for "
                             "instance where a solution is thought to have gone round most of a small class")
    return parser


def main(argv=None):
    """``similarity PATH [PATH ...] --unit UNIT --out FOLDER [--top N] [--keep-common]``: 0 once written, 2 for bad
    input."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse has printed why (or the help: status 0)
        return 0 if exit.code is None else exit.code if isinstance(exit.code, int) else 2
    prefix = "python -m autograder similarity:"
    if args.top < 1:
        print(f"{prefix} --top must be 1 or more, got {args.top}", file=sys.stderr)
        return 2
    try:
        report = similarity_report(args.unit, args.paths, keep_common=args.keep_common)
    except (OSError, KeyError) as error:  # a path not there, a class folder that cannot be listed, a unit unknown
        print(f"{prefix} {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    if not report.sources:
        listed = "".join(f"\n  {name}: {inert_line(reason)}" for name, reason in report.skipped)
        print(f"{prefix} no submission to compare in the paths given{listed}", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        out.mkdir(mode=0o700, parents=True, exist_ok=True)
        csv_path = write_csv(report, out / "similarity.csv")
        html_path = write_html(report, out / "similarity.html", top=args.top)
    except OSError as error:
        print(f"{prefix} cannot write to {args.out} ({error.strerror or error})", file=sys.stderr)
        return 2
    except ImportError:  # nh3, of the kit's "course" extra
        print(f"{prefix} wrote {csv_path}, but the HTML page needs nh3 (pip install nh3, or the kit's course "
              "extra)", file=sys.stderr)
        return 2
    sys.stdout.write(summary_text(report, args.top))
    print(f"wrote {html_path} and {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
