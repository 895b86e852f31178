"""An error model of each reference: its mutants, and which of them gives a student's output. Instructor-only.

A declared mistake (a ``Mistake`` in a task's cases module) is named when it gives the student's output. Most
mistakes nobody declared are small edits of the right code: a sign, an off-by-one, a factor dropped, another
axis, a check left out. So each task's reference function is edited automatically, one edit at a time
(``OPERATORS``), and when a task fails and no declared mistake explains it, those edited references, the
mutants, are run on the same hidden cases as the student's code. A mutant whose outcome equals the student's on
every case of the task, passing and failing alike, is named in plain words, from the edit and where it is.

* Only reference-derived code runs, never the student's, and it runs in a job of its own with the usual limits
  (``run_mutants``): an edit can make a loop that never ends or a tensor too big, like any code.
* A mutant that passes every case is equivalent to the reference on these cases and names nothing; mutants with
  the same outcome on every case are one class, named together ("or ..."): which of them was made cannot be told.
* Where no single edit gives the student's output, pairs of edits are tried, among those that each give it on
  some of the failing cases (cheap: a few pairs, one more job).
* What the mutants give on a seed's cases is kept (``Model``): a class graded on one seed runs each task's
  mutants once.

What is said quotes the reference's expression and the edited one ("your output equals the reference's with
`factor` where it has `factor ** (head_dim / (head_dim - 2))`, on every case"): the code of the formula the
docstring states, never a hidden input. The core names no unit: everything here is read from the unit given.
"""

import ast
import contextlib
import copy
import functools
import io
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

from autograder.core.cases import returned_value
from autograder.core.compare import first_wrong
from autograder.core.parsing import parse
from autograder.intake.load import Submission

PREFIX = "_mutant_"  # the name a mutant is defined under in its job: PREFIX + number + "_" + the function's name
PAIRS_TRIED = 12  # pairs of edits tried at most for one failing task
KEPT = 20000  # mutants' outcomes kept (one per mutant and case): a few seeds' worth of every task's screening
BATCH = 400  # mutants run in one job (each a task of the job's: one that hangs costs its own calls only)
SHOWN = 3  # mutants named at most for one output (the others give it too: said as a count)

# Operators: each turns one node of the reference into others, with the words for what the edit is.
_SWAPPED_OPERATORS = {ast.Add: (ast.Sub, "+ and - swapped"), ast.Sub: (ast.Add, "- and + swapped"),
                      ast.Mult: (ast.Div, "* and / swapped"), ast.Div: (ast.Mult, "/ and * swapped")}
_DIVISIONS = {ast.Div: ((ast.FloorDiv, "floor division // where the formula divides exactly"),),
              ast.FloorDiv: ((ast.Div, "true division / where the formula rounds down with //"),)}
_COMPARISONS = {ast.Lt: (ast.LtE, "a non-strict comparison (<=) where the formula's is strict (<)"),
                ast.LtE: (ast.Lt, "a strict comparison (<) where the formula's is non-strict (<=)"),
                ast.Gt: (ast.GtE, "a non-strict comparison (>=) where the formula's is strict (>)"),
                ast.GtE: (ast.Gt, "a strict comparison (>) where the formula's is non-strict (>=)")}
# Functions (by attribute or name) and the neighbours a slip puts in their place.
_NEIGHBOUR_CALLS = {
    "log": (("log1p", "log1p where the formula takes log"), ("log2", "log2 where the formula takes the natural log"),
            ("log10", "log10 where the formula takes the natural log")),
    "log2": (("log", "the natural log where the formula takes log2"),),
    "log1p": (("log", "log where the formula takes log1p"),),
    "floor": (("ceil", "rounded up where the formula rounds down"), ("round", "rounded to nearest where the formula "
                                                                               "rounds down")),
    "ceil": (("floor", "rounded down where the formula rounds up"), ("round", "rounded to nearest where the formula "
                                                                             "rounds up")),
    "round": (("floor", "rounded down where the formula rounds to nearest"),),
    "sin": (("cos", "cos where the formula takes sin"),), "cos": (("sin", "sin where the formula takes cos"),),
    "min": (("max", "the largest where the formula takes the smallest"),),
    "max": (("min", "the smallest where the formula takes the largest"),),
    "minimum": (("maximum", "the largest where the formula takes the smallest"),),
    "maximum": (("minimum", "the smallest where the formula takes the largest"),),
    "tril": (("triu", "the upper triangle where the formula keeps the lower"),),
    "triu": (("tril", "the lower triangle where the formula keeps the upper"),),
    "exp": (("exp2", "2 ** x where the formula takes e ** x"),),
    "sqrt": (("", "no square root where the formula takes one"),),
}
_DTYPES = {"float64": "float32", "float32": "float64", "long": "int32", "int64": "int32", "int32": "int64"}
_CASTS = ("to", "float", "double", "long", "int", "type")
_READS = ("shape", "size", "dtype", "device", "ndim", "dim")
_IN_PLACE = {ast.Add: "add_", ast.Sub: "sub_", ast.Mult: "mul_", ast.Div: "div_"}
_STEPS = ("unsqueeze", "squeeze", "clamp", "clamp_min", "clamp_max", "transpose", "permute", "contiguous", "flip",
          "abs", "neg", "expand", "expand_as", "reshape", "view", "flatten", "sum", "mean", "round", "floor", "ceil",
          "exp", "log", "sqrt", "tril", "triu", "masked_fill", "softmax", "movedim", "swapaxes")
_CONSTANTS = {10000.0: (500000.0,), 500000.0: (10000.0,), 10000: (500000,), 500000: (10000,)}
_AXIS_WORDS = ("dim", "axis", "dim0", "dim1", "start_dim", "end_dim")
_AXIS_CALLS = ("transpose", "permute", "cat", "stack", "gather", "sum", "mean", "softmax", "unsqueeze", "squeeze",
               "flatten", "movedim", "swapaxes", "narrow", "chunk", "split", "flip", "roll", "select", "amax", "amin",
               "cumsum", "index_select", "repeat_interleave", "take_along_dim")


@dataclass(frozen=True)
class Mutant:
    """One edit of a task's reference: the edited definition (defined under ``defined_as`` in the job), and what the
    edit is, in words a student reads."""

    number: int
    task: str
    function: str  # the task's function (or class) the edit is in
    defined_as: str
    source: str
    words: str  # "`factor` where the reference has `factor ** (...)`: a factor dropped"
    site: tuple  # (node index, operator index): two edits at one site do not make a pair
    parts: tuple = ()  # the single mutants a pair is made of


def _text(node, longest=120):
    try:
        text = ast.unparse(node)
    except Exception:
        return "?"
    return text if len(text) <= longest else text[:longest - 3] + "..."


def _is_number(node):
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _call_name(node):
    function = node.func
    return function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) \
        else ""


def _number(value):
    return ast.Constant(value)


def _edits(node, parent_call, parameters=(), defaults=None, tensors=()):
    """(new node, words) for each edit the operators make of ``node``; ``parent_call`` is (call name, keyword) of
    the call whose argument the node is, if it is one."""
    found = []
    if isinstance(node, ast.BinOp):
        kind = type(node.op)
        if kind in _SWAPPED_OPERATORS:
            other, words = _SWAPPED_OPERATORS[kind]
            found.append((ast.BinOp(node.left, other(), node.right), words))
        for other, words in _DIVISIONS.get(kind, ()):
            found.append((ast.BinOp(node.left, other(), node.right), words))
        if kind in (ast.Mult, ast.Div):
            found.append((node.left, f"a factor dropped (`{_text(node.right)}`)"))
        if kind is ast.Mult:
            found.append((node.right, f"a factor dropped (`{_text(node.left)}`)"))
            found.append((ast.BinOp(node.left, ast.Mult(), ast.BinOp(node.right, ast.Pow(), _number(2))),
                          f"a factor squared (`{_text(node.right)}`)"))
        if kind in (ast.Add, ast.Sub):
            found.append((node.left, f"a term left out (`{_text(node.right)}`)"))
        if kind is ast.Pow:
            found.append((node.left, f"the power left out (`** {_text(node.right)}`)"))
            found.append((ast.BinOp(node.left, ast.Pow(), ast.UnaryOp(ast.USub(), node.right)),
                          "the exponent's sign flipped"))
            found.append((ast.BinOp(node.left, ast.Pow(), ast.BinOp(_number(1), ast.Div(), node.right)),
                          "the exponent inverted"))
            found.append((ast.BinOp(node.left, ast.Pow(), ast.BinOp(node.right, ast.Mult(), _number(2))),
                          "the exponent doubled"))
            found.append((ast.BinOp(node.left, ast.Pow(), ast.BinOp(node.right, ast.Div(), _number(2))),
                          "the exponent halved"))
        if kind is ast.Div:
            found.append((ast.BinOp(node.right, ast.Div(), node.left), "the division turned over"))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_number(node.operand):
        found += _number_edits(-node.operand.value, parent_call)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        found.append((node.operand, "the minus sign left out"))
    elif isinstance(node, ast.Compare):
        for index, operator in enumerate(node.ops):
            swapped = _COMPARISONS.get(type(operator))
            if swapped:
                ops = list(node.ops)
                ops[index] = swapped[0]()
                found.append((ast.Compare(node.left, ops, node.comparators), swapped[1]))
        if len(node.ops) == 2:  # a chain, low < x < high: one of its bounds left out
            found.append((ast.Compare(node.left, node.ops[:1], node.comparators[:1]),
                          f"the bound `{_text(node.comparators[1])}` left out"))
            found.append((ast.Compare(node.comparators[0], node.ops[1:], node.comparators[1:]),
                          f"the bound `{_text(node.left)}` left out"))
    elif isinstance(node, ast.BoolOp) and len(node.values) > 1:
        for index, value in enumerate(node.values):
            rest = node.values[:index] + node.values[index + 1:]
            kept = rest[0] if len(rest) == 1 else ast.BoolOp(type(node.op)(), rest)
            found.append((kept, f"the condition `{_text(value)}` left out"))
    elif _is_number(node) and not isinstance(node.value, bool):
        found += _number_edits(node.value, parent_call)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch" \
            and node.attr in _DTYPES:
        found.append((ast.Attribute(node.value, _DTYPES[node.attr], ast.Load()),
                      f"torch.{_DTYPES[node.attr]} where the formula uses torch.{node.attr}"))
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "math" \
            and node.attr == "pi":
        found.append((_number(1.0), "1 where the formula has pi"))
    if isinstance(node, ast.Name) and node.id in parameters and isinstance(node.ctx, ast.Load):
        for other in sorted(parameters):  # another argument in its place: length_k where length_q is meant
            if other != node.id:
                found.append((ast.Name(other, ast.Load()), f"`{other}` where the formula uses `{node.id}`"))
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in (defaults or {}):
        default = defaults[node.id]
        found.append((copy.deepcopy(default), f"the argument `{node.id}` ignored (its default `{_text(default)}` "
                                              "used)"))
    if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Name) and node.left.id in tensors \
            and type(node.op) in _IN_PLACE:
        method = _IN_PLACE[type(node.op)]
        found.append((ast.Call(ast.Attribute(ast.Name(node.left.id, ast.Load()), method, ast.Load()), [node.right], []),
                      f"computed in place on `{node.left.id}` (`{node.left.id}.{method}(...)`), which changes the "
                      "caller's tensor"))
    if isinstance(node, ast.Name) and node.id in parameters and getattr(node, "_in_arithmetic", False):
        for operator, sign in ((ast.Sub, "-"), (ast.Add, "+")):
            found.append((ast.BinOp(ast.Name(node.id, ast.Load()), operator(), _number(1)),
                          f"an off-by-one: `{node.id} {sign} 1` where the formula has `{node.id}`"))
    if isinstance(node, ast.Call):
        name = _call_name(node)
        for other, words in _NEIGHBOUR_CALLS.get(name, ()):
            if not other:
                if len(node.args) == 1 and not node.keywords:
                    found.append((node.args[0], words))
                continue
            edited = copy.copy(node)
            if isinstance(node.func, ast.Attribute) and other == "round" and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "math":
                edited.func = ast.Name("round", ast.Load())  # math has no round: the builtin rounds to nearest
            elif isinstance(node.func, ast.Attribute):
                edited.func = ast.Attribute(node.func.value, other, ast.Load())
            elif name in ("min", "max") and other in ("min", "max"):
                edited.func = ast.Name(other, ast.Load())
            elif name == "round":
                edited.func = ast.Attribute(ast.Name("math", ast.Load()), other, ast.Load())
            else:
                continue
            found.append((edited, words))
        if isinstance(node.func, ast.Attribute) and name in _CASTS and name != "type":
            found.append((node.func.value, f"the cast `.{name}(...)` left out"))
        elif isinstance(node.func, ast.Attribute) and name in _STEPS:
            found.append((node.func.value, f"the step `.{name}(...)` left out"))
        for keyword in node.keywords:
            if keyword.arg in ("device", "dtype"):
                edited = copy.copy(node)
                edited.keywords = [other for other in node.keywords if other is not keyword]
                found.append((edited, f"`{keyword.arg}=` left out (the default {keyword.arg} instead)"))
        if name == "clamp":
            keywords = {keyword.arg: keyword.value for keyword in node.keywords}
            if len(node.args) >= 3 or ("min" in keywords and "max" in keywords) or (
                    isinstance(node.func, ast.Attribute) and len(node.args) == 2):
                edited = copy.copy(node)
                if "min" in keywords and "max" in keywords:
                    edited.keywords = [ast.keyword("min", keywords["max"]), ast.keyword("max", keywords["min"])]
                else:
                    args = list(node.args)
                    args[-1], args[-2] = args[-2], args[-1]
                    edited.args = args
                found.append((edited, "the clamp's bounds swapped"))
        if len(node.args) >= 2 and name not in ("clamp", "range", "arange", "isinstance", "getattr", "ValueError",
                                                "TypeError", "max", "min"):
            for index in range(len(node.args) - 1):
                if any(isinstance(arg, ast.Starred) for arg in node.args[index:index + 2]):
                    continue
                edited = copy.copy(node)
                args = list(node.args)
                args[index], args[index + 1] = args[index + 1], args[index]
                edited.args = args
                found.append((edited, f"the arguments `{_text(node.args[index])}` and "
                                      f"`{_text(node.args[index + 1])}` swapped"))
        if name in ("range", "arange", "linspace"):
            for index, arg in enumerate(node.args[:2]):
                if _is_number(arg):
                    continue  # a constant's neighbours are tried already
                for step, words in ((1, "+ 1"), (-1, "- 1")):
                    edited = copy.copy(node)
                    args = list(node.args)
                    args[index] = ast.BinOp(arg, ast.Add() if step > 0 else ast.Sub(), _number(1))
                    edited.args = args
                    found.append((edited, "an off-by-one"))
    if isinstance(node, ast.Slice):
        for part in ("lower", "upper"):
            bound = getattr(node, part)
            if bound is None or _is_number(bound):
                continue
            for operator in (ast.Add, ast.Sub):
                edited = copy.copy(node)
                setattr(edited, part, ast.BinOp(bound, operator(), _number(1)))
                found.append((edited, "an off-by-one in a slice"))
    return found


def _number_edits(value, parent_call):
    """A number's usual neighbours: one more and one less (an int), 2 and 1, the other usual base, 2 pi and 1, twice
    and half (a float); told as another axis where the number is a call's axis."""
    axis = parent_call is not None and (parent_call[1] in _AXIS_WORDS or parent_call[0] in _AXIS_CALLS)
    index = parent_call is not None and parent_call[0] == "[]"
    neighbours = list(_CONSTANTS.get(value, ()))
    if isinstance(value, int):
        neighbours += [value + 1, value - 1]
    elif value == 2 * math.pi:
        neighbours.append(1.0)
    elif value not in (0.0, 1.0, -1.0):
        neighbours += [value * 2, value / 2]
    if value == 2:
        neighbours.append(1)
    found = []
    for other in dict.fromkeys(neighbours):
        if other == value:
            continue
        words = "another axis" if axis else "another index" if index else "an off-by-one" if isinstance(
            value, int) and abs(other - value) == 1 else "another constant"
        found.append((_number(other) if other >= 0 else ast.UnaryOp(ast.USub(), _number(-other)), words))
    return found


def _statement_edits(node, tensors=()):
    """Edits of a statement: a check left out (an ``if`` that raises), a condition negated, another exception, a
    cast of the result added."""
    found = []
    # (A message without its values is not an edit here: outcomes are told apart by the exception's class, so
    # every raise would give it; the check itself says which values a message leaves out.)
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
        if isinstance(node.exc.func, ast.Name) and node.exc.func.id != "AssertionError":
            exc = copy.copy(node.exc)
            exc.func = ast.Name("AssertionError", ast.Load())
            found.append((ast.Raise(exc, node.cause), f"an assert (AssertionError) where the function raises "
                                                      f"{node.exc.func.id}"))
    if isinstance(node, ast.Return) and node.value is not None:
        casts = [("torch.float32", "float32"), ("torch.float64", "float64"), ("torch.int32", "int32")]
        casts += [(f"{name}.dtype", f"{name}'s dtype") for name in tensors]
        for dtype, words in casts:
            value = parse(f"(_).to({dtype})", mode="eval").body
            value.func.value = node.value
            found.append((ast.Return(value), f"the result cast to {words}"))
    if isinstance(node, ast.If):
        raises = any(isinstance(inner, ast.Raise) for inner in node.body)
        if raises and not node.orelse:
            # Said so that a narrower check (one that lets these cases through) is told right too.
            found.append((ast.Pass(), f"no check `if {_text(node.test)}: raise ...` for these cases (it is left "
                                      "out, or narrower)"))
        found.append((ast.If(ast.UnaryOp(ast.Not(), node.test), node.body, node.orelse),
                      f"the condition `{_text(node.test)}` negated"))
    if isinstance(node, ast.IfExp):
        found.append((ast.IfExp(ast.UnaryOp(ast.Not(), node.test), node.body, node.orelse),
                      f"the condition `{_text(node.test)}` negated"))
    return found


def _skipped(node):
    """Nodes no edit touches: docstrings, error messages, f-strings, type annotations."""
    return isinstance(node, (ast.JoinedStr, ast.FormattedValue)) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str))


class _Walk:
    """Every node of a definition, in a fixed order, with the call it is an argument of and the expression it is
    shown in (a constant or a name alone says nothing: ``5`` is told as ``head_dim < 5``)."""

    def __init__(self):
        self.nodes = []

    def visit(self, node, parent_call=None, around=None, statement=None):
        if _skipped(node) or isinstance(node, (ast.arg, ast.arguments)) or getattr(node, "_no_edit", False):
            return
        if isinstance(node, ast.Raise):
            self.nodes.append((node, None, node, node))  # what is raised, and its message: edited as a whole
            return
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.If, ast.For, ast.While,
                                                                ast.With, ast.Try)):
            statement = node  # a simple statement: the context of a name or number directly in it
        leaf = isinstance(node, (ast.Constant, ast.Name, ast.Attribute, ast.UnaryOp))
        shown = (around if around is not None else statement if statement is not None else node) if leaf else node
        self.nodes.append((node, parent_call, shown, statement))
        within = node if isinstance(node, ast.expr) and not leaf else around if leaf else None
        if isinstance(node, ast.Call):
            name = _call_name(node)
            self.visit(node.func, None, within, statement)
            for arg in node.args:
                self.visit(arg, (name, None), within, statement)
            for keyword in node.keywords:
                self.visit(keyword.value, (name, keyword.arg), within, statement)
            return
        if isinstance(node, ast.UnaryOp) and _is_number(node.operand):
            return  # -1 is one number: its neighbours are its edits
        if isinstance(node, ast.BinOp):
            for operand in (node.left, node.right):
                if isinstance(operand, ast.Name):
                    operand._in_arithmetic = True
        if isinstance(node, ast.Attribute) and node.attr in _READS and isinstance(node.value, ast.Name):
            # Another tensor's size is often the same size on every case (bias's last axis is Lk, as k's is): an
            # edit there would name a variable the student never used.
            node.value._no_edit = True
        if isinstance(node, ast.Subscript):
            self.visit(node.value, None, within, statement)
            self.visit(node.slice, ("[]", None), within, statement)
            return
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                decorator._no_edit = True
        for child in ast.iter_child_nodes(node):
            self.visit(child, None, within, statement)


def _within(inner, outer):
    return any(node is inner for node in ast.walk(outer))


def _definitions(source):
    """{name: node} of the module-level functions and classes of ``source`` (parsed one at a time: ast.parse is
    not safe beside another thread's, see core/parsing.py)."""
    tree = parse(source)
    found = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    for definition in found.values():  # docstrings dropped: a mutant's text is read by nobody, and made thousands of times
        for node in ast.walk(definition):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None:
                node.body = node.body[1:] or [ast.Pass()]
    return found


def _detach_edits(definition):
    """A ``.detach()`` put on each tensor argument of a function as its first statement: no gradient reaches it."""
    functions = [definition] if isinstance(definition, ast.FunctionDef) else [
        item for item in definition.body if isinstance(item, ast.FunctionDef) and item.name == "forward"]
    found = []
    for function in functions:
        for arg in function.args.args + function.args.kwonlyargs:
            if arg.arg == "self":
                continue
            statement = parse(f"{arg.arg} = {arg.arg}.detach() if isinstance({arg.arg}, torch.Tensor) "
                                  f"else {arg.arg}").body[0]
            found.append((function, statement, f"no gradient reaches `{arg.arg}` (it is detached)"))
    return found


def _reciprocal_edits(definition):
    """A number argument with a default (``scale=None``, ``base=10000.0``) replaced by its reciprocal as the first
    statement: the slip of a student who divides by it where the docstring multiplies (or the other way round),
    which no one edit of the reference's text gives where the default is written as a reciprocal itself."""
    if not isinstance(definition, ast.FunctionDef):
        return []
    args = definition.args
    positional = args.args[len(args.args) - len(args.defaults):]
    defaulted = list(zip(positional, args.defaults)) + [(arg, value) for arg, value in
                                                        zip(args.kwonlyargs, args.kw_defaults) if value is not None]
    found = []
    for arg, default in defaulted:
        if isinstance(default, ast.Constant) and (default.value is None or type(default.value) is float):
            name = arg.arg
            number = f"isinstance({name}, (int, float)) and not isinstance({name}, bool)"
            statement = parse(f"{name} = (1 / {name} if {name} else float('inf')) if {number} else {name}").body[0]
            found.append((definition, statement, f"`1 / {name}` in place of `{name}` (the argument used as a divisor "
                                                  "where it multiplies, or the other way round)"))
    return found


_SWAPPING = threading.Lock()  # an edit is made in the reference's tree and read there: one at a time


@functools.lru_cache(maxsize=None)
def _mutants_cached(source, task, functions):
    definitions = _definitions(source)
    mutants = []
    for function in functions:
        definition = definitions.get(function)
        if definition is None:
            continue
        parents = _parents(definition)
        _PARENTS[id(definition)] = (definition, parents)
        # Each function (a class's: each method) is walked with its own arguments: an edit puts one of them, or
        # its default, where another is used.
        scopes = [definition] if isinstance(definition, ast.FunctionDef) else [
            inner for inner in definition.body if isinstance(inner, ast.FunctionDef)]
        walked = []
        for scope in scopes:
            parameters = {arg.arg for arg in scope.args.args + scope.args.kwonlyargs if arg.arg != "self"}
            positional = scope.args.args[len(scope.args.args) - len(scope.args.defaults):]
            defaults = dict(zip((arg.arg for arg in positional), scope.args.defaults))
            defaults.update({arg.arg: value for arg, value in zip(scope.args.kwonlyargs, scope.args.kw_defaults)
                             if value is not None})
            # The arguments that are tensors: those whose dtype, device or shape the function reads.
            tensors = sorted({node.value.id for node in ast.walk(scope) if isinstance(node, ast.Attribute)
                              and isinstance(node.value, ast.Name) and node.value.id in parameters
                              and node.attr in ("dtype", "device", "shape", "dim", "size", "ndim")})
            walk = _Walk()
            for child in scope.body:
                walk.visit(child)
            walked += [(node, parent_call, shown, statement, parameters, defaults, tensors)
                       for node, parent_call, shown, statement in walk.nodes]
        statement_of = _prepare_texts(definition)
        first_of_function = len(mutants)
        for index, (node, parent_call, shown, statement, parameters, defaults, tensors) in enumerate(walked):
            edits = _edits(node, parent_call, parameters, defaults, tensors) + _statement_edits(node, tensors)
            for number, (new, words) in enumerate(edits):
                old_shown = _text(shown, 1000)
                with _swapped(parents, [(node, new)]):
                    new_shown = _text(new if shown is node else shown, 1000)
                    text = _text_as(definition, f"{PREFIX}{len(mutants)}_{function}", {statement_of[id(node)]})
                said = _said(node, new, words, old_shown, new_shown)
                mutants.append((function, text, said, (function, index, number), (definition, node, new), statement))
        _told_apart(mutants, first_of_function)
        for number, (inner, statement, words) in enumerate(_detach_edits(definition) + _reciprocal_edits(definition)):
            edited = copy.deepcopy(definition)
            target = edited if inner is definition else next(
                item for item in edited.body if isinstance(item, ast.FunctionDef) and item.name == inner.name)
            target.body.insert(0, statement)
            text = _text_as(ast.fix_missing_locations(edited), f"{PREFIX}{len(mutants)}_{function}")
            mutants.append((function, text, words, (function, "detach", number), None, None))
    built = []
    for number, (function, text, words, site, edit, _) in enumerate(mutants):
        try:
            compile(text, "<mutant>", "exec")
        except Exception:
            continue
        built.append(Mutant(number, task, function, f"{PREFIX}{number}_{function}", text, words, site))
        if edit is not None:
            _EDITS[(task, function, number)] = edit
    return tuple(built)


def _told_apart(mutants, start):
    """The words of edits of one function that read alike (``length_q - 2`` for ``length_q - 1``, where that
    expression is in two statements) told apart: by the statement each is in, then by its place among them."""
    groups = {}
    for index in range(start, len(mutants)):
        groups.setdefault(mutants[index][2], []).append(index)
    for words, indices in groups.items():
        if len(indices) < 2:
            continue
        for index in indices:
            statement = mutants[index][5]
            where = f" in `{_clip(_text(statement, 1000).splitlines()[0], 80)}`" if statement is not None else ""
            mutants[index] = mutants[index][:2] + (words + where,) + mutants[index][3:]
        again = {}
        for index in indices:
            again.setdefault(mutants[index][2], []).append(index)
        for said, alike in again.items():
            if len(alike) > 1:
                for place, index in enumerate(alike, start=1):
                    mutants[index] = mutants[index][:2] + (f"{said} (the {_ORDINALS.get(place, f'{place}th')} "
                                                           "place it is)",) + mutants[index][3:]


_ORDINALS = {1: "first", 2: "second", 3: "third"}


def _parents(tree):
    """{id(node): (its parent, the field that holds it, its index in that field's list or None)}."""
    found = {}
    for parent in ast.walk(tree):
        for name, value in ast.iter_fields(parent):
            if isinstance(value, ast.AST):
                found[id(value)] = (parent, name, None)
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, ast.AST):
                        found[id(item)] = (parent, name, index)
    return found


@contextlib.contextmanager
def _swapped(parents, swaps):
    """The tree with each (old, new) of ``swaps`` in place, put back as it was on leaving: an edit made and read
    without copying the whole definition."""
    done = []
    try:
        for old, new in swaps:
            parent, name, index = parents[id(old)]
            if index is None:
                setattr(parent, name, new)
            else:
                getattr(parent, name)[index] = new
            done.append((parent, name, index, old))
        yield
    finally:
        for parent, name, index, old in reversed(done):
            if index is None:
                setattr(parent, name, old)
            else:
                getattr(parent, name)[index] = old


def _text_as(definition, name, changed=None):
    """The source of ``definition`` defined under ``name``. ``changed``: the indices of its body's statements that
    an edit in place touches; the others' text is the one made once (``_TEXTS``): a long function is not written
    out whole for each of its hundreds of edits."""
    kept = definition.name
    definition.name = name
    try:
        if changed is None or id(definition) not in _TEXTS:
            return ast.unparse(definition)
        head, texts = _TEXTS[id(definition)]
        body = [_indented(ast.unparse(statement)) if index in changed else texts[index]
                for index, statement in enumerate(definition.body)]
        return head.replace(_HEAD_NAME, name, 1) + "\n" + "\n".join(body)
    except Exception:
        return ""
    finally:
        definition.name = kept


_HEAD_NAME = "_a_definition_s_name_"
_TEXTS = {}  # id(definition) -> (its first line with _HEAD_NAME for its name, each body statement's text)


def _indented(text):
    return "\n".join("    " + line if line else line for line in text.splitlines())


def _prepare_texts(definition):
    """The text of each statement of ``definition``'s body, made once, and which statement each node is in."""
    body, kept_name = definition.body, definition.name
    definition.body, definition.name = [ast.Pass()], _HEAD_NAME
    try:
        head = ast.unparse(definition).rsplit("\n", 1)[0]
    finally:
        definition.body, definition.name = body, kept_name
    _TEXTS[id(definition)] = (head, [_indented(ast.unparse(statement)) for statement in body])
    return {id(node): index for index, statement in enumerate(body) for node in ast.walk(statement)}


_PARENTS = {}  # id(definition) -> (the definition, its _parents): for pairs
_EDITS = {}  # (task, mutant number) -> (the definition, the node edited, what it became): for pairs


def _said(node, new, words, old_shown, new_shown):
    """The words for an edit: "`new` where the reference has `old` (what the edit is)", shown in the expression
    around the edited node (``old_shown``, ``new_shown``), or the node alone where that is too long to read."""
    if isinstance(node, ast.stmt) or isinstance(new, ast.Pass):
        return words
    if len(new_shown) > 100 and not isinstance(node, ast.Constant):
        old_shown, new_shown = _text(node, 1000), _text(new, 1000)
    return f"`{_clip(new_shown)}` where the reference has `{_clip(old_shown)}` ({words})"


def _clip(text, longest=120):
    return text if len(text) <= longest else text[:longest - 3] + "..."


def mutants(unit, task):
    """The single-edit mutants of ``task``'s reference functions in ``unit``, numbered in a fixed order."""
    functions = tuple(unit.rubric.TASK_BY_NAME[task].functions)
    with _SWAPPING:
        return _mutants_cached(unit.finished_reference, task, functions)


def paired(first, second):
    """The mutant with both edits, where they are of one function and neither edits a part of the other's node;
    else None."""
    one = _EDITS.get((first.task, first.function, first.number))
    two = _EDITS.get((second.task, second.function, second.number))
    if one is None or two is None or one[0] is not two[0] or first.function != second.function:
        return None
    definition, node_one, new_one = one
    _, node_two, new_two = two
    if _within(node_one, node_two) or _within(node_two, node_one):
        return None
    number = 100000 + first.number * 1000 + second.number
    defined_as = f"{PREFIX}{number}_{first.function}"
    _, parents = _PARENTS[id(definition)]
    with _SWAPPING, _swapped(parents, [(node_one, new_one), (node_two, new_two)]):
        text = _text_as(definition, defined_as)
    try:
        compile(text, "<mutant>", "exec")
    except Exception:
        return None
    return Mutant(number, first.task, first.function, defined_as, text, f"{first.words}, and {second.words}",
                  ("pair", first.site, second.site), parts=(first, second))


@functools.lru_cache(maxsize=None)
def twins(candidates):
    """The pairs of ``candidates`` that make one slip twice on one line: two calls there each replaced by the same
    other call (``math.floor(low), math.ceil(high)`` both rounded to nearest), or the same operator exchanged in
    two places. No single edit gives them, and the pairs of single edits that each explain some cases need not
    find them (each alone may explain none): a student who rounds the wrong way rounds so everywhere. A tuple,
    made once for a task's mutants (``candidates``, the tuple ``mutants`` gives)."""
    groups = {}
    for mutant in candidates:
        edit = _EDITS.get((mutant.task, mutant.function, mutant.number))
        if edit is None:
            continue
        _, node, new = edit
        if isinstance(node, ast.Call) and isinstance(new, ast.Call) and _call_name(node) != _call_name(new):
            kind = ("call", _call_name(new))
        elif isinstance(node, ast.BinOp) and isinstance(new, ast.BinOp) and type(node.op) is not type(new.op):
            kind = ("operator", type(node.op).__name__, type(new.op).__name__)
        else:
            continue
        groups.setdefault((mutant.function, getattr(node, "lineno", None), kind), []).append(mutant)
    found = []
    for group in groups.values():
        for index, one in enumerate(group):
            for two in group[index + 1:]:
                if one.site[:2] != two.site[:2]:
                    pair = paired(one, two)
                    if pair is not None:
                        found.append(pair)
    return tuple(found[:PAIRS_TRIED])


# --- running them -------------------------------------------------------------------------------

def run_mutants(unit, cases, chosen, limits, server, run_submission, plan_type):
    """{mutant number: {case id: outcome}} for each of ``chosen`` on ``cases`` (one task's), in one job of the usual
    limits: the finished reference with the mutants' definitions after it. A mutant whose calls hung or whose job
    broke has no outcomes (it is named by nothing). Mutants that the job's time limit left unrun (a loaded machine
    runs fewer in the time) run in a job of their own again, for as long as each job gets further: what the model
    names must not depend on the machine's load."""
    found = {}
    for start in range(0, len(chosen), BATCH):
        found.update(_run_batch(unit, cases, chosen[start:start + BATCH], limits, server, run_submission, plan_type))
    return found


def _run_batch(unit, cases, chosen, limits, server, run_submission, plan_type):
    found = {}
    while chosen:
        outcome = _run_job(unit, cases, chosen, limits, server, run_submission, plan_type)
        ran = {m.number: outcome.results[f"mutant {m.number}"] for m in chosen
               if f"mutant {m.number}" in outcome.results}
        found.update(ran)
        unrun = set(outcome.unrun)
        if not ran and not set(outcome.failures) - unrun:
            break  # nothing got further (the job did not load): the rest have no outcomes
        chosen = [m for m in chosen if f"mutant {m.number}" in unrun]
    return found


def _run_job(unit, cases, chosen, limits, server, run_submission, plan_type):
    source = unit.finished_reference
    chunks = [{"label": f"{unit.module_name}.py", "source": source},
              {"label": "the error model's mutants", "source": "\n\n\n".join(m.source for m in chosen) + "\n"}]
    submission = Submission(name="the error model", path=Path(f"{unit.module_name}.py"), chunks=chunks, skipped=[])
    # The cases' probes once, for every mutant: the job calls each mutant's name in place of the task's function, on
    # inputs of the mutant's own (sandbox/worker.py, ``_renamed``). A copy per mutant made here was most of the
    # job's time: 400 mutants of one task on 38 cases were 51 MB to write, send and read back.
    probes = [case.probe for case in cases]
    buffer = io.BytesIO()
    torch.save({"tasks": [{"task": f"mutant {m.number}", "probes": probes, "rename": [m.function, m.defined_as]}
                          for m in chosen]}, buffer)
    ops = {probe["id"]: probe["op"] for probe in probes}
    tasks = {f"mutant {m.number}": dict(ops) for m in chosen}
    plan = plan_type(buffer.getvalue(), tasks, unit.module_name, unit.job_source)
    return run_submission(submission, plan, list(tasks), limits, server)


# --- comparing outcomes -------------------------------------------------------------------------

def _same_value(a, b, atol, rtol):
    try:
        got, other = returned_value({"value": a}), returned_value({"value": b})
    except Exception:
        return False
    if isinstance(got, torch.Tensor) != isinstance(other, torch.Tensor):
        return False
    if not isinstance(got, torch.Tensor):
        return got.type_name == other.type_name and got.text == other.text
    if got.shape != other.shape or got.dtype != other.dtype or a.get("device", "cpu") != b.get("device", "cpu"):
        return False
    if got.device.type == "meta" or other.device.type == "meta":
        return True
    if torch.equal(got, other):  # the same entries bit for bit (no NaN among them: torch.equal never finds one equal)
        return True
    # A tolerance per entry is of the right answer's shape: for an output of another shape, its loosest entry.
    try:
        atol, rtol = (_loosest(t, got.shape) for t in (atol, rtol))
        got, other = _finite_alike(got, other)
        atol, rtol = _own_precision(got, other, atol, rtol)
        # The entries the check's comparison (compare.mismatch) finds wrong, without the words it says them in: for
        # one task, hundreds of mutants' outputs are compared with the student's, most of them different.
        return first_wrong(got, other, atol=atol, rtol=rtol) is None
    except Exception:
        return False


def _own_precision(got, other, atol, rtol):
    """The check's tolerance, but no finer than what two results of one coarse dtype, computed in another order,
    can tell apart (16 of its ulps, of the largest finite entry of either for the absolute part): a float32 result
    where the check wants float64 is compared to float32's precision, not to float64's."""
    if got.dtype != other.dtype or not got.is_floating_point() or got.dtype == torch.float64 or not got.numel():
        return atol, rtol
    eps = torch.finfo(got.dtype).eps
    finite = torch.cat([got[got.isfinite()].flatten(), other[other.isfinite()].flatten()]).float()
    largest = float(finite.abs().max()) if finite.numel() else 0.0
    return tuple(tolerance.clamp(min=least) if isinstance(tolerance, torch.Tensor) else max(tolerance, least)
                 for tolerance, least in ((atol, 16 * eps * largest), (rtol, 16 * eps)))


def _finite_alike(got, other):
    """The two tensors with every entry that is not finite in both set to 0 in both, unless they are infinities of
    opposite signs: NaN and an infinity are the same outcome to the model. Where a divisor is zero (``scale=0``), the
    order of the operations decides between them (``(a + b) / 0`` is an infinity where ``a / 0 + b / 0`` may be
    NaN), which no edit of one step follows; finite entries, and whether an entry is finite, still count."""
    if not (got.is_floating_point() and other.is_floating_point()) or got.shape != other.shape:
        return got, other
    loose = ~got.isfinite() & ~other.isfinite()
    if not loose.any():
        return got, other
    opposite = got.isinf() & other.isinf() & (got.sign() != other.sign())
    loose &= ~opposite
    return got.masked_fill(loose, 0), other.masked_fill(loose, 0)


def _loosest(tolerance, shape):
    if not isinstance(tolerance, torch.Tensor) or tolerance.shape == shape:
        return tolerance
    return float(tolerance.max()) if tolerance.numel() else 0.0


def same_outcome(a, b, atol=1e-5, rtol=1e-5):
    """Whether two outcomes of one probe are the same to a reader of the check: both raised the same kind of
    exception, or both returned equal values (dtype, shape, device, and values within the check's tolerance),
    with the same parts besides (inputs changed in place, global settings changed, gradients, a second call's
    value, a module's steps, a sequence's calls)."""
    if not isinstance(a, dict) or not isinstance(b, dict) or "missing" in a or "missing" in b:
        return False
    if "calls" in a or "calls" in b:  # a sequence of calls: each in turn
        calls_a, calls_b = a.get("calls"), b.get("calls")
        return isinstance(calls_a, list) and isinstance(calls_b, list) and len(calls_a) == len(calls_b) and all(
            same_outcome(x, y, atol, rtol) for x, y in zip(calls_a, calls_b))
    if ("error" in a) != ("error" in b):
        return False
    if "error" in a:
        return a["error"].get("type") == b["error"].get("type")
    if set(a) != set(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        if key == "value" and "init" not in a:
            same = _same_value(x, y, atol, rtol)
        elif key == "grads" and isinstance(x, dict) and isinstance(y, dict) and "value" in x and "value" in y:
            same = len(x["value"]) == len(y["value"]) and all(
                _same_value(g, h, atol, rtol) for g, h in zip(x["value"], y["value"]))
        elif isinstance(x, dict) and isinstance(y, dict) and ("value" in x or "error" in x or "init" in x):
            same = same_outcome(x, y, atol, rtol)
        else:
            same = x == y
        if not same:
            return False
    return True


def _tolerance(case):
    check = case.check
    return getattr(check, "atol", 1e-5), getattr(check, "rtol", 1e-5)


def _passes_all(cases, outcomes):
    for case in cases:
        try:
            verdict = case.check(outcomes.get(case.id))
        except Exception:
            return False
        if not verdict.passed:
            return False
    return True


def _agrees(cases, student, outcomes, student_passes=None):
    """Whether a mutant's ``outcomes`` are the student's on every case that ran for both: the same outcome, and the
    same verdict of the case's check. ``student_passes(case)``, where given, is the check's verdict on the
    student's outcome, already known (the grade checked it)."""
    student_passes = student_passes or student_verdicts(student)
    compared = 0
    for case in cases:
        mine, its = student.get(case.id), outcomes.get(case.id)
        if mine is None:
            continue
        atol, rtol = _tolerance(case)
        try:
            same = same_outcome(mine, its, atol, rtol)
        except Exception:  # an outcome the comparison cannot read: not the same
            same = False
        # The same to the comparison and yet judged apart by the check (an error message the check reads, which
        # the comparison does not): not the student's outcome.
        if not same or student_passes(case) != passes(case, its):
            return False
        compared += 1
    return compared > 0


class Model:
    """The error model of one unit for a grading run.

    A failing task is explained in two steps: every mutant of the task runs on the first failing case of each
    failing test (a call or a few each, in one job); only the mutants that give the student's outcome there run
    on the task's other cases. What each mutant gave on each case is kept for the seed (``KEPT`` outcomes at
    most), so a class graded on one seed runs each call once."""

    def __init__(self, unit, limits, server, run_submission, plan_type):
        self.unit, self.limits, self.server = unit, limits, server
        self._run, self._plan_type = run_submission, plan_type
        self._kept = OrderedDict()  # (seed, task, mutant number, case id) -> outcome (None: it did not run)
        self._lock = threading.Lock()

    def _outcomes(self, seed, task, chosen, cases):
        """{mutant number: {case id: outcome}} of ``chosen`` on ``cases``, each call run once per seed (while it is
        kept). What this call ran is returned as it ran, never read back from the store: another grading thread
        may have pushed it out meanwhile (the oldest go first past ``KEPT``), and a mutant read back as not run
        names nothing."""
        with self._lock:
            known = {}
            for m in chosen:
                keys = [(seed, task, m.number, case.id) for case in cases]
                if all(key in self._kept for key in keys):
                    known[m.number] = {case.id: self._kept[key] for case, key in zip(cases, keys)}
        missing = [m for m in chosen if m.number not in known]
        if missing:
            found = run_mutants(self.unit, cases, missing, self.limits, self.server, self._run, self._plan_type)
            fresh = {m.number: {case.id: found.get(m.number, {}).get(case.id) for case in cases} for m in missing}
            with self._lock:
                for number, outcomes in fresh.items():
                    for case_id, outcome in outcomes.items():
                        self._kept[(seed, task, number, case_id)] = outcome
                while len(self._kept) > KEPT:
                    self._kept.popitem(last=False)
            known.update(fresh)
        return {m.number: known[m.number] for m in chosen}

    def outcomes(self, seed, task, cases, chosen=None):
        """(the mutants of ``chosen`` (default: all the task's) that fail some case, that is, that differ from the
        reference on these cases, {number: outcomes}): the error model probed for equivalent mutants."""
        chosen = mutants(self.unit, task) if chosen is None else chosen
        found = self._outcomes(seed, task, chosen, cases)
        live = tuple(m for m in chosen if not _passes_all(cases, found[m.number]))
        return live, {m.number: found[m.number] for m in live}

    def explain(self, seed, task, cases, student, student_passes=None):
        """The words of every mutant (or pair) whose outcome is the student's on every case of ``task`` that ran,
        in the mutants' order; () where none is. ``student_passes(case)``: the check's verdict on the student's
        outcome where the caller knows it (each check is then run once per grading, not once per mutant)."""
        student_passes = student_passes or student_verdicts(student)
        ran = [case for case in cases if student.get(case.id) is not None]
        failing = [case for case in ran if not student_passes(case)]
        if not failing:
            return ()
        first = []
        for case in failing:  # the first failing case of each test
            if all(other.test != case.test for other in first):
                first.append(case)
        everything = mutants(self.unit, task)
        screened = self._outcomes(seed, task, everything, first)
        agreeing = {m.number: {case.id for case in first
                               if _agrees([case], student, screened[m.number], student_passes)}
                    for m in everything}
        candidates = [m for m in everything if len(agreeing[m.number]) == len(first)]
        if candidates:
            found = self._outcomes(seed, task, candidates, ran)
            matched = [m for m in candidates if _agrees(ran, student, found[m.number], student_passes)]
            if matched:
                return tuple(dict.fromkeys(m.words for m in matched))
        helpful = [m for m in everything if agreeing[m.number]]
        return tuple(dict.fromkeys(m.words for m in self._pairs(seed, task, ran, student, helpful, agreeing, first,
                                                                everything, student_passes)))

    def _pairs(self, seed, task, ran, student, helpful, agreeing, first, everything, student_passes):
        """Pairs of edits, tried on every case: the same slip made twice on one line (``twins``), and pairs each of
        whose edits gives the student's outcome on some of the screened cases, together on all of them
        (``PAIRS_TRIED`` at most)."""
        wanted = {case.id for case in first}
        candidates = list(twins(tuple(everything)))
        most = len(candidates) + PAIRS_TRIED
        for index, one in enumerate(helpful):
            for two in helpful[index + 1:]:
                if agreeing[one.number] | agreeing[two.number] >= wanted:
                    pair = paired(one, two)
                    if pair is not None:
                        candidates.append(pair)
                if len(candidates) >= most:
                    break
            if len(candidates) >= most:
                break
        candidates = list({pair.number: pair for pair in candidates}.values())  # a twin may be a pair too
        if not candidates:
            return []
        found = self._outcomes(seed, task, candidates, ran)
        return [pair for pair in candidates if _agrees(ran, student, found[pair.number], student_passes)]


def passes(case, outcome):
    """Whether ``case``'s check passes ``outcome`` (a check that cannot read it: no)."""
    try:
        return case.check(outcome).passed
    except Exception:
        return False


def student_verdicts(student, known=None):
    """``passed(case)``: whether ``case``'s check passes the student's outcome (``student``: outcomes by case id),
    each case's check run at most once; ``known`` ({case id: (Verdict or None, message)}, as score_tests fills
    it) holds the verdicts already found, which are read rather than checked again."""
    found = {}

    def passed(case):
        if case.id not in found:
            if known and case.id in known:
                verdict = known[case.id][0]
                found[case.id] = verdict is not None and verdict.passed
            else:
                found[case.id] = passes(case, student.get(case.id))
        return found[case.id]
    return passed


def likely_line(words):
    """The sentence that names what the model found: the first edit, and the others that give the same output."""
    first, *others = words
    said = f"your output equals the reference's with {first}, on every case"
    if others:
        shown = others[:SHOWN - 1]
        said += "; or, with the same output on every case: " + "; ".join(shown)
        if len(others) > len(shown):
            said += f" (and {len(others) - len(shown)} more edits give it too)"
    return said + "."
