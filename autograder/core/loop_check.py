"""The static loop check of the timing tier: Python loops in the score path, however its names are bound.

A vectorized score path does its work in tensor operations; a loop over positions runs Python once per
position. The timing tier gives no points to a path with such a loop, and this check finds it in the
source, without running it: from the timed names it follows every way the module binds a name, and
fails closed on a binding it cannot read (``exec``, ``globals()``, ``sys.modules``...), with a finding
worded for the student. The grader uses it on the trusted side; the student's visible checks use the
same code in ``checks.py`` (``python -m autograder build`` puts it there), so it imports only the
standard library.

It reads only the submission's own text, so every name that the timed path reaches, or that code run
while the submission loads uses, must resolve either to that text (which is then read) or to a trusted
library that the job cannot have written (``_TRUSTED_LIBRARIES``: the public modules of Python's
standard library, torch, numpy, einops and matplotlib; the job runs ``python -I`` and cannot write where they
live). Anything else fails closed, as a "refused" finding that says what the check could not read:

* a name that comes from any other module (``import helpers``, ``from helpers import f``,
  ``from helpers import *``, a module imported inside a function), or from a private part of a trusted
  one (``torch._C``, ``_imp``): its code is not in the submission;
* a change to where Python looks for modules (``sys.path``, ``sys.meta_path``, ``sys.path_hooks``,
  ``site``, ``sys.modules``, ``importlib``...), anywhere in code that runs: it could load a module that the
  job wrote, under any name, a trusted one included;
* the parts of the trusted libraries that make code, load it or fetch it by a name that is not written
  out (``_REFUSED_PATHS``: exec, compile, runpy, marshal, pickle, ``types.FunctionType``, ctypes,
  ``torch.load``, ``torch.fx``, ``operator.attrgetter``, ``getattr`` with a computed name...).

A module outside the submission that is imported but never used by code that runs is no finding. In a
notebook kernel's history (what ``assert_no_loops`` reads there), the course's own cells are among the
sources, and the modules they use (``_COURSE_MODULES``: matplotlib, the kit's checks...) are trusted too.
"""

import ast
import builtins
import functools
import re
import sys
import warnings

from autograder.core.parsing import check_compiles, parse


def loops_in(sources, names):
    """Python loops in the functions ``names`` and in everything they reach, found in ``sources``.

    ``sources`` is a text, or a list of (label, text) in the order they run (a
    later binding replaces an earlier one, as when the code runs). Returns
    ["name, line N: the line (label)", ...]: one entry for each ``for``,
    ``while``, comprehension, ``map``/``filter``/``reduce`` and recursion, and
    one for each way of binding a name that the check cannot follow
    (``exec``, ``globals()``, ``sys.modules``...), which says so. A loop whose
    count is written in the text (over a literal tuple or list, ``for mode in
    ("add", "concat")``, ``for t in (q, k)``, or a small constant ``range``) is
    not a loop over positions and is left out; any loop whose count comes from
    the inputs is a finding, whether it runs over positions or heads.

    The names are followed however they come to be bound: ``def``, ``class``
    (every method), assignments of every kind, aliases, lambdas, decorators
    (their own code too), ``functools.partial``, containers, attributes of
    objects defined in the source, and every name that reachable code uses.
    Trusted libraries (``_TRUSTED_LIBRARIES`` and the standard library) are not
    read, but a change the source makes to one (``torch.gather = my_gather``)
    is followed; a name that code which runs takes from any other module
    (``import helpers``, ``from helpers import *``) is refused: its code is not
    in ``sources``.
    """
    return [text for _, text in _loop_findings(sources, names)]


def assert_no_loops(function, inputs=None):
    """Fail when ``function`` (or anything of its module that it reaches) has a Python loop over positions in it.

    The text is read first: a loop whose count is written in it (over ``(q, k)``, a small constant ``range``) is
    fine, and so is every other loop once it is counted. ``inputs(L)`` gives the arguments of one call at sequence
    length L, as a tuple; the call is then run at each of ``COUNT_LENGTHS``, counting the lines your code runs
    and the tensor operations (``counted``), as the grader's timing tier does: a loop whose count stays the same
    at every length (over the heads, say) passes, one whose count changes with the length runs over positions and
    fails. Without ``inputs`` any such loop fails: the text alone cannot say what it runs over.
    """
    __tracebackhide__ = True  # pytest shows the check's line that called this, with the message, not this frame
    name = _bound_name(function)
    sources = _sources_of(function)
    if sources is None:
        raise AssertionError(f"{name} cannot be checked for loops: its source text cannot be found."
                             "\nLikely cause: it was made from text (exec) or elsewhere; define it with def.")
    found = _loop_findings(sources, [name])
    if found and all(kind != "refused" for kind, _ in found) and inputs is not None:
        counts = []
        function(*inputs(COUNT_LENGTHS[0]))  # once, uncounted: what it does on its first call alone is not counted
        for length in COUNT_LENGTHS:
            arguments = inputs(length)
            _, count, intact = count_in_process(lambda: function(*arguments), student_code)
            if not intact:
                raise AssertionError(f"{name}: its count of steps was interfered with (the trace function, or the "
                                     "tracing of a frame, changed while it ran)")
            counts.append((length, count))
            if count_changes(counts):
                raise AssertionError(
                    f"{name} has a Python loop over positions: " + "; ".join(text for _, text in found)
                    + f"\nCounted in one call at each sequence length (lines of your code run, and tensor "
                    f"operations): {counts_words(counts)}; the count changes with the length.\nLikely cause: a "
                    "loop over positions (rows, keys, chunks of them); use tensor operations (broadcasting, gather).")
        return
    if any(kind != "refused" for kind, _ in found):
        raise AssertionError(f"{name} has a Python loop: " + "; ".join(text for _, text in found)
                             + "\nLikely cause: a loop whose count comes from the inputs (positions, heads, rows): the "
                             "check reads the text and cannot tell what it runs over; use tensor operations "
                             "(broadcasting, gather), or give the check ``inputs`` to count it.")
    if found:
        raise AssertionError(f"{name} cannot be checked for loops: " + "; ".join(text for _, text in found)
                             + "\nLikely cause: it is made in a way the check cannot read; define it with def.")


# What a loop runs over, counted (the timing tier's rule, autograder/core/timing.py's ``count_loops``). The static
# check finds every loop in the text but cannot tell what it runs over: ``for h in range(slopes.shape[0])`` runs once
# per head, ``for i in range(q.shape[-2])`` once per query position. So a path with loops (and nothing the check
# cannot read) is run once at each of several sequence lengths, with the batch, the heads and the head size fixed,
# and each call's steps are counted: every line the submission's own code runs and every call of one of its
# functions (a ``for`` or a comprehension runs a line per trip, a recursion a call per level), and every tensor
# operation of torch, from wherever it is called (``map(torch.roll, ...)`` runs no line of the submission per trip,
# but an operation). A count that stays the same at every length is a fixed amount of Python work per call, whatever
# the length (a loop over the heads, the two layouts, a few feature pairs): no loop over positions. One that changes
# with the length is one (in chunks, over pairs, or at some lengths only, included).
#
# Not counted: iteration inside C code that runs neither a line of the submission nor a torch operation per trip
# (``sum(range(L))``, ``list(map(abs, ...))``): its cost is the interpreter's, which the timing bands judge.
#
# In the grader the count runs in the student's timing job, so its honesty rests on the static check first: it is
# made only for a path with no binding the check cannot follow (no trace function, frame, torch.overrides or exec),
# and a count whose trace function was changed, or one of whose frames stopped being traced, is refused. The job runs
# ``counted`` from a dictionary of its own (its source is sent with the job's code), with the functions it needs
# taken before any submitted code ran; so it imports nothing.
COUNT_LENGTHS = (16, 32, 64, 128, 256)  # the self-checks' lengths; the grader's are TIMING_COUNT_LENGTHS


def counted(call, mine, settrace, gettrace, mode_class):
    """Run ``call()`` once, counting its steps: returns (its value, Python steps, torch operations, intact).

    ``mine(filename)`` says whether code of that file is the submission's own: its function calls and lines are
    the Python steps. Every torch function that runs while ``call`` does is an operation (a mode of
    ``mode_class``, torch's TorchFunctionMode, sees each one however it is called). ``intact`` is False when the
    trace function was not the counter's own once ``call`` returned, or when a frame of the submission's stopped
    being traced before it returned (its ``f_trace`` changed): the count cannot be trusted then.
    """
    steps = [0, 0]
    frames = [0, 0]  # the submission's frames entered (a call, or a generator resumed), and those seen leaving

    def line(frame, event, argument):
        if event == "line":
            steps[0] += 1
        elif event == "return":
            frames[1] += 1
        return line

    def tracer(frame, event, argument):
        if mine(frame.f_code.co_filename):
            steps[0] += 1  # the call
            frames[0] += 1
            return line
        return None  # a library's own Python code: its work is the operations it runs

    class Counting(mode_class):
        def __torch_function__(self, function, types, arguments=(), keywords=None):
            steps[1] += 1
            return function(*arguments, **(keywords or {}))

    counting, previous = Counting(), gettrace()
    settrace(tracer)
    try:
        with counting:
            value = call()
    finally:
        intact = gettrace() is tracer
        settrace(previous)
    return value, steps[0], steps[1], intact and frames[0] == frames[1]


def count_changes(counts):
    """The first (length, count) whose count differs from the count at the first length, or None: ``counts`` is
    [(length, count)] in the order of growing lengths."""
    return next(((length, count) for length, count in counts[1:] if count != counts[0][1]), None)


def counts_words(counts):
    """The counts as the feedback states them: 'L = 16: 40; L = 32: 72'."""
    return "; ".join(f"L = {length}: {count}" for length, count in counts)


def student_code(filename):
    """Whether code of ``filename`` is the student's own, in their process (a notebook's kernel, a self-check): any
    file but the installed libraries' and the standard library's, and this check's own."""
    import sysconfig

    libraries = tuple({path for key, path in sysconfig.get_paths().items() if key in (
        "stdlib", "platstdlib", "purelib", "platlib")} | {__file__})
    return not filename.startswith(libraries) and not filename.startswith("<frozen")


def count_in_process(call, mine):
    """``counted`` in this process, which runs no audit hook: (value, Python steps and torch operations together,
    intact). It imports torch, for its TorchFunctionMode."""
    from torch.overrides import TorchFunctionMode

    value, python_steps, operations, intact = counted(call, mine, sys.settrace, sys.gettrace, TorchFunctionMode)
    return value, python_steps + operations, intact


def _bound_name(function):
    """The name ``function`` has in its module: a lambda or a memoized function is known by its binding."""
    namespace = getattr(_unwrapped(function), "__globals__", {})
    if namespace.get(getattr(function, "__name__", None)) is function:
        return function.__name__
    for key, value in list(namespace.items()):
        if value is function and not key.startswith("_"):
            return key
    return getattr(function, "__name__", None) or getattr(_unwrapped(function), "__name__", "the function")


def _unwrapped(function):
    """The plain function behind a partial, a bound method, a memoized or decorated function, or a callable object."""
    import functools
    import inspect

    for _ in range(32):
        if isinstance(function, functools.partial):
            function = function.func
        elif inspect.ismethod(function):
            function = function.__func__
        elif hasattr(function, "__wrapped__"):
            function = function.__wrapped__
        elif not (inspect.isfunction(function) or inspect.isclass(function)) and callable(function):
            function = type(function)
        else:
            break
    return function


def _sources_of(function):
    """The sources to check ``function`` in: its module's file, the notebook's cells run so far, or its own text."""
    import inspect
    import linecache

    inner = _unwrapped(function)
    namespace = getattr(inner, "__globals__", {})
    # In Jupyter the code has no file; IPython keeps the text of every cell run so far, in order.
    history = namespace.get("_ih")
    if isinstance(history, list) and any(isinstance(cell, str) and cell.strip() for cell in history):
        return _KernelHistory((f"cell {number}", cell) for number, cell in enumerate(history) if isinstance(cell, str))
    module = inspect.getmodule(inner) or sys.modules.get(namespace.get("__name__", ""))
    try:
        return [("", inspect.getsource(module))]
    except (OSError, TypeError):
        pass
    lines = linecache.getlines(namespace["__file__"]) if isinstance(namespace.get("__file__"), str) else []
    if lines:
        return [("", "".join(lines))]
    try:
        text = inspect.getsource(inner)
    except (OSError, TypeError):
        return None
    # Its own text only: check it under its own name, with a binding of the name it is known by.
    return [("", text + f"\n{_bound_name(function)} = {inner.__name__}\n")] if inspect.isfunction(inner) and \
        inner.__name__.isidentifier() and _bound_name(function).isidentifier() else [("", text)]


# The static loop check. It follows every way the module's own level binds a name, from the timed names
# on, and fails closed: a binding made in a way it cannot read is a finding, worded for the student.

_LATER = float("inf")  # after the whole module has run: when the grader calls the timed functions
_LOOP_NODES = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_FUNCTIONS = _DEFS + (ast.Lambda,)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ())
_TRIES = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_ADVICE = "define the function with def and call it by its name"
_ADVICE_OUTSIDE = ("the check reads only your submission's own code: define the function in your submission with def "
                   "and call it by its name, and use no module but torch, numpy, einops, matplotlib and Python's standard library")
# Libraries the check trusts without reading them, besides the public modules of the standard library: the job
# cannot have written them (it runs with ``python -I``, and a change to where Python looks for modules is refused).
# A name from any other module is refused when code that runs reaches it. Keep this set small: each library in it
# is one whose functions the check takes on trust to hold no Python loop over positions.
_TRUSTED_LIBRARIES = frozenset({"torch", "numpy", "einops", "matplotlib"})  # installed, read-only in every job
# The course's own modules, which its read-only and hidden notebook cells use: trusted only in a kernel's history
# (``_KernelHistory``), where those cells are among the sources; never in the submission's own text.
_COURSE_MODULES = frozenset({"checks", "capstone", "matplotlib", "autograder"})
# The standard library's modules where ``sys.stdlib_module_names`` (Python 3.10+) is missing: those a score path or
# a notebook may use; the rest of the standard library then counts as outside the submission.
_STDLIB_FALLBACK = frozenset({
    "__future__", "abc", "argparse", "array", "ast", "bisect", "builtins", "cmath", "collections", "contextlib",
    "copy", "dataclasses", "decimal", "enum", "fractions", "functools", "gc", "heapq", "inspect", "io",
    "itertools", "json", "math", "numbers", "operator", "os", "pathlib", "random", "re", "statistics", "string",
    "sys", "threading", "time", "types", "typing", "warnings", "weakref"})
_HIDDEN_LOOPS = {"builtins.map", "builtins.filter", "functools.reduce", "itertools.starmap", "itertools.accumulate"}
_CALLED_ON_CALL = ("__init__", "__new__", "__call__", "forward")  # what calling a class or its instance runs
_MUTATORS = {"update", "setdefault", "append", "extend", "insert", "add", "__setitem__", "__iadd__", "__ior__",
             "setattr", "setitem", "add_module", "impl", "define", "custom_op", "register"}
_REFUSED_BUILTINS = {
    "exec": "runs text as code with exec(...)",
    "eval": "runs text as code with eval(...)",
    "compile": "turns text into code with compile(...)",
    "globals": "reaches the module's names through globals()",
    "vars": "reaches names through vars()",
    "locals": "reaches names through locals()",
    "__import__": "imports a module by name with __import__(...)",
    "breakpoint": "calls a hook that the environment names, with breakpoint()",
}
_REFUSED_PATHS = {  # modules, and attributes of modules, by dotted path
    "__main__": "imports __main__",
    "importlib": "imports modules by name while running (importlib)",
    "imp": "imports modules by name while running (imp)",
    "pkgutil": "imports modules by name while running (pkgutil)",
    "zipimport": "imports code from an archive (zipimport)",
    "runpy": "runs another file as code (runpy)",
    "code": "runs text as code (the code module)",
    "codeop": "turns text into code (codeop)",
    "marshal": "loads compiled code (marshal)",
    "ctypes": "changes memory directly (ctypes)",
    "_ctypes": "changes memory directly (ctypes)",
    "dill": "loads pickled code (dill)",
    "cloudpickle": "loads pickled code (cloudpickle)",
    "shelve": "loads pickled objects (shelve)",
    "pickle.load": "loads pickled objects (pickle)",
    "pickle.loads": "loads pickled objects (pickle)",
    "pickle.Unpickler": "loads pickled objects (pickle)",
    "_pickle.load": "loads pickled objects (pickle)",
    "_pickle.loads": "loads pickled objects (pickle)",
    "_pickle.Unpickler": "loads pickled objects (pickle)",
    "joblib.load": "loads pickled objects (joblib)",
    "numpy.load": "loads pickled objects (numpy.load)",
    "torch.load": "loads pickled objects (torch.load)",
    "torch.serialization": "loads pickled objects (torch.serialization)",
    "torch.jit.load": "loads compiled TorchScript code (torch.jit.load)",
    "torch.package": "loads packaged code (torch.package)",
    "torch.hub": "loads code from elsewhere (torch.hub)",
    "torch.utils.cpp_extension": "compiles code that the check cannot read (cpp_extension)",
    "sys.modules": "reaches modules through sys.modules",
    "sys._getframe": "reaches another function's names through sys._getframe()",
    "sys._current_frames": "reaches another function's names through sys._current_frames()",
    "inspect.currentframe": "reaches another function's names through its frame (inspect.currentframe)",
    "inspect.stack": "reaches another function's names through its frame (inspect.stack)",
    "inspect.getouterframes": "reaches another function's names through its frame (inspect)",
    "inspect.trace": "reaches another function's names through its frame (inspect.trace)",
    "gc.get_referrers": "finds objects through the garbage collector (gc)",
    "gc.get_referents": "finds objects through the garbage collector (gc)",
    "gc.get_objects": "finds objects through the garbage collector (gc)",
    "types.FunctionType": "builds a function from parts with types.FunctionType",
    "types.LambdaType": "builds a function from parts with types.LambdaType",
    "types.MethodType": "binds a function with types.MethodType",
    "types.CodeType": "builds code with types.CodeType",
    "types.CellType": "builds a closure cell with types.CellType",
    # Where Python looks for modules: a module the job writes could then be imported, under any name.
    "sys.path": "changes where Python looks for modules (sys.path)",
    "sys.meta_path": "changes how Python finds modules (sys.meta_path)",
    "sys.path_hooks": "changes how Python finds modules (sys.path_hooks)",
    "sys.path_importer_cache": "changes how Python finds modules (sys.path_importer_cache)",
    "site": "changes where Python looks for modules (site)",
    # Code run on every call, or named by the environment.
    "sys.settrace": "runs code on every call (sys.settrace)",
    "sys.setprofile": "runs code on every call (sys.setprofile)",
    "threading.settrace": "runs code on every call (threading.settrace)",
    # Work in a thread of its own: the count of a path's steps follows the thread that calls the path, not others.
    "threading.Thread": "runs code in a thread of its own (threading.Thread), where the count of steps cannot follow",
    "threading.Timer": "runs code in a thread of its own (threading.Timer), where the count of steps cannot follow",
    "_thread": "runs code in a thread of its own (_thread), where the count of steps cannot follow",
    "concurrent.futures": "runs code in threads or processes of its own (concurrent.futures), where the count of "
                          "steps cannot follow",
    "multiprocessing": "runs code in processes of its own (multiprocessing), where the count of steps cannot follow",
    "threading.setprofile": "runs code on every call (threading.setprofile)",
    "sys.breakpointhook": "calls a hook that the environment names (sys.breakpointhook)",
    # What the timing tier's count of a path's steps stands on (``counted``): the trace function and torch's modes.
    "sys.gettrace": "reads the trace function (sys.gettrace)",
    "sys.getprofile": "reads the profile function (sys.getprofile)",
    "sys.monitoring": "runs code on every call (sys.monitoring)",
    "torch.overrides": "changes how torch runs its operations (torch.overrides)",
    # The standard library's other ways of running text as code, loading code, or fetching a name that is not
    # written out.
    "inspect": "reaches code and names through inspect",
    "doctest": "runs text as code (doctest)",
    "pdb": "runs text as code (pdb)",
    "bdb": "runs text as code (bdb)",
    "trace": "runs text as code (trace)",
    "profile": "runs text as code (profile)",
    "cProfile": "runs text as code (cProfile)",
    "pydoc": "imports modules by name (pydoc)",
    "unittest": "replaces or imports things by name (unittest)",
    "logging.config": "imports things by name (logging.config)",
    "py_compile": "compiles code (py_compile)",
    "compileall": "compiles code (compileall)",
    "operator.attrgetter": "fetches attributes by name with operator.attrgetter",
    "operator.methodcaller": "fetches methods by name with operator.methodcaller",
    "string.Formatter": "fetches attributes by name with string.Formatter",
    "typing.get_type_hints": "runs the text of annotations as code (typing.get_type_hints)",
    "typing.ForwardRef": "runs the text of annotations as code (typing.ForwardRef)",
    "functools.singledispatch": "runs the text of annotations as code (functools.singledispatch)",
    "functools.singledispatchmethod": "runs the text of annotations as code (functools.singledispatchmethod)",
    # The trusted libraries' ways of building or loading code the check cannot read.
    "torch.fx": "builds code from a graph (torch.fx)",
    # A kernel registered for one of torch's own operations runs wherever that operation does: in the timed path
    # unseen, and in the job's own reads of the outputs on a GPU.
    "torch.library": "replaces torch's own operations with kernels of its own (torch.library)",
    "torch.jit.CompilationUnit": "compiles text as TorchScript code (torch.jit.CompilationUnit)",
    "torch.ops.load_library": "loads compiled code (torch.ops.load_library)",
    "torch.classes.load_library": "loads compiled code (torch.classes.load_library)",
    "torch.cuda.jiterator": "compiles text as code (torch.cuda.jiterator)",
    "torch.export.load": "loads a saved program (torch.export.load)",
    "numpy.ctypeslib": "changes memory directly (numpy.ctypeslib)",
    "numpy.f2py": "compiles code (numpy.f2py)",
    "numpy.distutils": "compiles code (numpy.distutils)",
    "numpy.lib.format": "loads pickled objects (numpy.lib.format)",
    "numpy.lib.npyio": "loads pickled objects (numpy.lib.npyio)",
    "torch.utils.model_zoo": "loads pickled objects (torch.utils.model_zoo)",
    **{f"builtins.{name}": reason for name, reason in _REFUSED_BUILTINS.items()},
}
_REFUSED_ATTRIBUTES = {  # whatever they are an attribute of
    "__code__": "uses __code__, the compiled code of a function",
    "__globals__": "reaches the module's names through __globals__",
    "__builtins__": "reaches the builtins through __builtins__",
    "__dict__": "reaches names through __dict__",
    "__setattr__": "sets an attribute through __setattr__",
    "__getattribute__": "fetches an attribute by name through __getattribute__",
    "__getattr__": "fetches an attribute by name through __getattr__",
    "f_globals": "reaches names through a frame (f_globals)",
    "f_locals": "reaches names through a frame (f_locals)",
    "f_builtins": "reaches names through a frame (f_builtins)",
    "f_back": "reaches another function's frame (f_back)",
    "tb_frame": "reaches a function's frame through a traceback (tb_frame)",
    "gi_frame": "reaches a generator's frame (gi_frame)",
    "cr_frame": "reaches a coroutine's frame (cr_frame)",
    "ag_frame": "reaches a generator's frame (ag_frame)",
    "f_trace": "changes how a frame is traced (f_trace)",
    "f_trace_lines": "changes how a frame is traced (f_trace_lines)",
    "f_trace_opcodes": "changes how a frame is traced (f_trace_opcodes)",
}
# Called with code, not text, these are fine: a statement that is a lambda. Any other use runs text as code.
_TEXT_OR_CODE = {"timeit.timeit": ("stmt", "setup"), "timeit.repeat": ("stmt", "setup"),
                 "timeit.Timer": ("stmt", "setup")}
_REFUSED_STORES = {"__call__", "__wrapped__", "__class__", "__defaults__", "__kwdefaults__", "__bases__", "__closure__",
                   "cell_contents", "__getattr__", "__getattribute__"}
_REFUSED_MODULE_NAMES = {"__getattr__", "__builtins__", "__dict__", "__class__"}


_COMPILE_CHECK = "<the loop check's compile of a submission>"
# compile() warns of dubious code ("is" with a literal): the job shows its own warnings, the check none
warnings.filterwarnings("ignore", module=re.escape(_COMPILE_CHECK) + r"\Z")


def refuse_imports_of(module_names):
    """Refuse an import of each of ``module_names``: the names a submission's own code is known by while it runs
    (the grader's job names it after its unit), through which it could replace its own functions unseen."""
    for name in module_names:
        _REFUSED_PATHS[name] = f"imports {name}, the submission's own module, whose names it can replace"


class _KernelHistory(list):
    """The cells a notebook's kernel ran, as ``_sources_of`` finds them, the course's own cells among them: read-only
    demonstrations that plot with matplotlib, the import of the kit's checks and capstone, nbgrader's hidden tests
    (autograder). In these sources, and only in them, ``_COURSE_MODULES`` count as trusted libraries too. (The grader
    checks the submission's own cells, without the course's: there those modules are outside the submission.)"""


def findings(sources, names):
    """``loops_in`` with each finding's kind: [(kind, text)], kind "loop", "recursion" or "refused"."""
    return _loop_findings(sources, names)


def _loop_findings(sources, names):
    """[(kind, text)] with kind "loop", "recursion" or "refused": the check behind ``loops_in``."""
    first = names[0] if names else "the module"
    try:
        return _check(sources, names, first)
    except (RecursionError, MemoryError) as error:
        # Fail closed: code this check cannot read (nested too deep, say) gets no timing points, and says so.
        return [("refused", f"{first}: the code could not be read by the loop check ({type(error).__name__}), "
                            f"so it cannot follow {first}; {_ADVICE}")]


@functools.lru_cache(maxsize=8)
def _read(sources, course=False):
    """The program of ``sources`` (a tuple of (label, text)) and what its loading does that the check cannot
    follow: the same for every timed path of a submission, so read once. ``course``: see ``_KernelHistory``."""
    program = _Program(list(sources), course)
    loading = _Walk(program, timed=False, first_name=None)
    for record in program.records:
        if isinstance(record.node, _DEFS):
            loading._refusals(record.node, program.module, record)  # its name: a module __getattr__
        loading.push(record, record.parts, record.pos)
    loading.run()
    return program, [(kind, text) for _, kind, text in loading.findings]


def _check(sources, names, first):
    course = isinstance(sources, _KernelHistory)  # the course's own cells are among them
    sources = ((("", sources),) if isinstance(sources, str) else tuple((label, text) for label, text in sources))
    program, loading_findings = _read(sources, course)
    timed = _Walk(program, timed=True, first_name=first)
    for name in names:
        timed.follow_name(name, None, None, at=_LATER, body_q=_LATER)
    # The timed functions get tensors: their operators and methods run torch, whatever names the code uses.
    timed.follow_library("torch")
    timed.follow_library("builtins")
    timed.run()
    timed.report_recursion()
    found = [(kind, text) for _, kind, text in timed.findings]
    # Code that runs while the module loads can bind anything: it is read for what the check cannot follow.
    texts = {text for _, text in found}
    return found + [(kind, text) for kind, text in loading_findings if text not in texts]


class _Scope:
    """Where the names of a piece of code are looked up: a function, lambda, class, comprehension or the module."""

    def __init__(self, node, parent):
        self.node, self.parent = node, parent
        if node is None:
            self.kind = "module"
        elif isinstance(node, ast.ClassDef):
            self.kind = "class"
        elif isinstance(node, _COMPREHENSIONS):
            self.kind = "comprehension"
        else:
            self.kind = "function"
        # Deferred: runs when called, not where it is written.
        self.deferred = self.kind == "function" or (parent is not None and parent.deferred)
        self.local, self.declared = _names_bound_in(node) if node is not None else (set(), set())
        self.function = node if self.kind == "function" else (parent.function if parent else None)

    def is_global(self, name):
        scope, innermost = self, True
        while scope.kind != "module":
            if name in scope.declared:
                return True
            # A class's names are seen by its own body only, not by the functions inside it.
            if (innermost or scope.kind != "class") and name in scope.local:
                return False
            scope, innermost = scope.parent, False
        return True

    def owner_of(self, name):
        """The innermost function scope where ``name`` is local, or None."""
        scope = self
        while scope is not None and scope.kind != "module":
            if scope.kind == "function" and name in scope.local:
                return scope
            scope = scope.parent
        return None

    def method_class(self):
        """The class node when this scope is a method's body (its first parameter is the instance)."""
        if self.kind == "function" and self.parent is not None and self.parent.kind == "class":
            return self.parent.node
        return None


def _parameters(function):
    arguments = function.args
    return [arg.arg for arg in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
            + [arguments.vararg, arguments.kwarg] if arg is not None]


def _names_bound_in(node):
    """(local names, names declared global) of the scope that ``node`` opens."""
    local, declared = set(), set()
    if isinstance(node, _COMPREHENSIONS):
        for generator in node.generators:
            local.update(n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name))
        return local, declared
    if isinstance(node, _FUNCTIONS):
        local.update(_parameters(node))
    stack = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Global):
            declared.update(n.names)
        elif isinstance(n, ast.Nonlocal):
            local.update(n.names)
        elif isinstance(n, (*_DEFS, ast.ClassDef)):
            local.add(n.name)
            stack.extend(n.decorator_list)
        elif isinstance(n, ast.Lambda):
            stack.extend(n.args.defaults)
        elif isinstance(n, _COMPREHENSIONS):
            local.update(w.target.id for w in ast.walk(n) if isinstance(w, ast.NamedExpr))
        else:
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                local.add(n.id)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                local.update((a.asname or a.name.split(".")[0]) for a in n.names if a.name != "*")
            elif isinstance(n, ast.ExceptHandler) and n.name:
                local.add(n.name)
            elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
                local.add(n.name)
            elif isinstance(n, ast.MatchMapping) and n.rest:
                local.add(n.rest)
            stack.extend(ast.iter_child_nodes(n))
    return local - declared, declared


def _scoped(node, scope, annotations=True):
    """(node, scope) for ``node`` and everything under it, in source order, each with the scope it runs in."""
    stack = [(node, scope)]
    while stack:
        n, s = stack.pop()
        yield n, s
        if isinstance(n, _FUNCTIONS):
            inner = _Scope(n, s)
            arguments = n.args
            outside = ([] if isinstance(n, ast.Lambda) else list(n.decorator_list)) + arguments.defaults + [
                d for d in arguments.kw_defaults if d is not None]
            if annotations and not isinstance(n, ast.Lambda):
                outside += [a.annotation for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
                            + [arguments.vararg, arguments.kwarg] if a is not None and a.annotation is not None]
                outside += [n.returns] if n.returns is not None else []
            body = [n.body] if isinstance(n, ast.Lambda) else n.body
            children = [(c, s) for c in outside] + [(c, inner) for c in body]
        elif isinstance(n, ast.ClassDef):
            inner = _Scope(n, s)
            children = [(c, s) for c in n.decorator_list + n.bases + n.keywords] + [(c, inner) for c in n.body]
        elif isinstance(n, _COMPREHENSIONS):
            inner = _Scope(n, s)
            children = [(n.generators[0].iter, s)]
            for number, generator in enumerate(n.generators):
                children += [(generator.target, inner)] + ([(generator.iter, inner)] if number else [])
                children += [(condition, inner) for condition in generator.ifs]
            children += [(part, inner) for part in ((n.key, n.value) if isinstance(n, ast.DictComp) else (n.elt,))]
        elif isinstance(n, ast.AnnAssign) and not annotations:
            children = [(c, s) for c in (n.target, n.value) if c is not None]
        else:
            children = [(c, s) for c in ast.iter_child_nodes(n)]
        stack.extend(reversed(children))


def _chain(node):
    """(root, [attributes]) of ``a.b[c].d``: the root node after attributes and subscripts are peeled off."""
    attributes = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            attributes.append(node.attr)
        node = node.value
    return node, attributes[::-1]


def _dotted(node):
    """(root name, [attributes]) of a plain ``a.b.c``, or (None, []) when a subscript or a call is in the way."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return (node, attributes[::-1]) if isinstance(node, ast.Name) else (None, [])


def _alias_root(node):
    """The name whose object ``node`` may be (part of): ``ns``, ``ns.fn``, ``d["k"]``, ``d.get("k")``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "get", "pop", "setdefault", "values", "items", "copy", "__getitem__", "__getattribute__"):
        node = node.func.value
    root, _ = _chain(node)
    return root.id if isinstance(root, ast.Name) else None


_FIXED_RANGE = 16  # a constant range(...) of at most this many steps: far fewer than any timed length


def _constant_iteration(node):
    """A loop whose number of steps is written in the text, whatever the inputs: over a literal tuple, list or set
    (``for mode in ("add", "concat")``, ``for t in (q, k)``), or over ``range`` of integer constants of at most
    ``_FIXED_RANGE`` steps. It cannot grow with the sequence length, so it is not a loop over positions. A loop
    whose count comes from the inputs (``range(len(slopes))``, ``range(x.shape[1])``) is a finding: the text does
    not say which axis a count measures."""
    def integer(node):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            node = node.operand
        return isinstance(node, ast.Constant) and type(node.value) is int

    def constant(iterable):
        if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
            return not any(isinstance(e, ast.Starred) for e in iterable.elts)
        if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
                and not iterable.keywords and 1 <= len(iterable.args) <= 3 and all(map(integer, iterable.args))):
            try:
                steps = len(range(*(ast.literal_eval(a) for a in iterable.args)))
            except (ValueError, OverflowError):
                return False
            return steps <= _FIXED_RANGE
        return False

    if isinstance(node, (ast.For, ast.AsyncFor)):
        return constant(node.iter)
    if isinstance(node, _COMPREHENSIONS):
        return all(constant(generator.iter) for generator in node.generators)
    return False


def _has_call(nodes):
    return any(isinstance(n, ast.Call) for node in nodes for n in ast.walk(node))


def _attribute_exists(path):
    """Whether the dotted ``path`` names something already loaded in this process (nothing is imported or run)."""
    import inspect

    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            break
    else:
        return False
    value = module
    for number, part in enumerate(parts[cut:], start=cut):
        try:
            value = inspect.getattr_static(value, part)
        except AttributeError:
            value = sys.modules.get(".".join(parts[:number + 1]))
            if value is None:
                return False
    return True


def _refused_path(path):
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):  # the longest refused prefix: its reason is the most precise
        reason = _REFUSED_PATHS.get(".".join(parts[:cut]))
        if reason:
            return reason
    return None


def _trusted_module(path, course=False):
    """Whether the module at the top of the dotted ``path`` is a trusted library (see ``_TRUSTED_LIBRARIES``);
    ``course``: the sources are a kernel's history, where the course's own modules are trusted too."""
    top = path.split(".")[0]
    if top in _TRUSTED_LIBRARIES or top == "__future__" or course and top in _COURSE_MODULES:
        return True
    if not top or top.startswith("_"):  # a relative import, or a private module (_imp, _frozen_importlib...)
        return False
    return top in (getattr(sys, "stdlib_module_names", None) or _STDLIB_FALLBACK)


def _private_part(path):
    """The first private name after the top of a dotted ``path`` into a library (``torch._C``), or None."""
    for part in path.split(".")[1:]:
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return part
    return None


def _outside_reason(path, verb="uses", course=False):
    """Why a name bound to the dotted ``path`` (of a library) is code the check cannot read, or None."""
    if path.startswith("."):
        return None  # a relative import: refused where it is written
    parts = path.split(".")
    if not _trusted_module(path, course):
        return f"{verb} {parts[0]}, a module outside your submission"
    private = _private_part(path)
    if private and parts[0] != "builtins":
        return f"{verb} {'.'.join(parts[:parts.index(private, 1) + 1])}, a private part of {parts[0]}"
    return None


class _Record:
    """A statement at the module's own level, with its place in the order the code runs."""

    def __init__(self, node, pos, label, lines, parts, full, definite):
        self.node, self.pos, self.label, self.lines = node, pos, label, lines
        self.parts, self.full, self.definite, self.binds = parts, full, definite, []


class _Binding:
    """One way a module-level name gets a value: kind "def", "class", "expr", "import" or "global"."""

    def __init__(self, name, kind, value, record, visible_from, definite):
        self.name, self.kind, self.value, self.record = name, kind, value, record
        self.visible_from, self.definite = visible_from, definite


class _Program:
    """What the source binds, changes and calls, read once; nothing in it is run."""

    def __init__(self, sources, course=False):
        if isinstance(sources, str):
            sources = [("", sources)]
        self.course = course  # see _KernelHistory
        self.records, self.bindings, self.anytime = [], {}, {}
        self.sites, self.passes, self.aliases, self.calls = {}, {}, {}, {}
        self.library_of = {}  # name -> {dotted path of the module or object an import binds it to}
        self.stars = []  # a binding of kind "star" for each ``from m import *``: it may bind any name
        self.local_imports = {}  # (id(function), name) -> {dotted path}: imports inside functions
        self.display = {}  # id(def, lambda or class) -> its name in findings
        self.mutated = {}  # id(function) -> {(parameter, "attr" | "item" | "call")}
        self.functions_named = {}  # name -> [def nodes], methods included
        self.module = _Scope(None, None)
        self._defined = set()  # names certainly bound by the statements read so far
        for label, text in sources:
            try:
                tree = parse(text)
                # Code that parses but does not compile (a nonlocal with no binding, a return outside a
                # function) does not run either: read, it could stand in for a definition that runs.
                # (A kernel's cells may await at their top level: IPython runs them so.)
                check_compiles(tree, _COMPILE_CHECK, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if course else 0)
            except SyntaxError:
                continue  # the grader reports code that does not compile elsewhere; none of it runs
            self._statements(tree.body, label, text.splitlines(), None, False, [True])
        self._scan()

    # -- the module's own level, in order

    def _statements(self, body, label, lines, loop_pos, conditional, clean):
        for statement in body:
            pos = len(self.records)
            compound = isinstance(statement, _COMPOUND)
            if compound:
                parts = self._header(statement)
            elif isinstance(statement, _DEFS):
                arguments = statement.args
                parts = list(statement.decorator_list) + arguments.defaults + [
                    d for d in arguments.kw_defaults if d is not None]
            else:
                parts = [statement]
            full = [statement] if isinstance(statement, (*_DEFS, ast.ClassDef)) else parts
            safe = not compound and self._safe_statement(statement)
            # A binding replaces the earlier ones only if it certainly runs: the worker goes on with the next
            # cell after an exception, so a statement that may raise leaves the rest of its cell in doubt.
            definite = not conditional and clean[0] and safe
            if not conditional:
                clean[0] = clean[0] and safe
            record = _Record(statement, pos, label, lines, parts, full, definite)
            self.records.append(record)
            self._bind(statement, record, pos if loop_pos is None else loop_pos, definite)
            if compound:
                inner_loop = pos if loop_pos is None and isinstance(statement, (ast.For, ast.AsyncFor, ast.While)) \
                    else loop_pos
                for inner in self._bodies(statement):
                    self._statements(inner, label, lines, inner_loop, True, clean)

    @staticmethod
    def _header(statement):
        if isinstance(statement, (ast.If, ast.While)):
            return [statement.test]
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return [statement.target, statement.iter]
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            return list(statement.items)
        if isinstance(statement, ast.Match):
            return [statement.subject] + [part for case in statement.cases for part in (case.pattern, case.guard)
                                          if part is not None]
        return [handler.type for handler in statement.handlers if handler.type is not None]

    @staticmethod
    def _bodies(statement):
        if isinstance(statement, ast.Match):
            return [case.body for case in statement.cases]
        bodies = [statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", [])]
        return bodies + [handler.body for handler in getattr(statement, "handlers", [])]

    def _bind(self, statement, record, visible, definite):
        def bind(target, value, whole=False, certain=definite):
            if isinstance(target, ast.Name):
                self._add_binding(target.id, "expr", value, record, visible, certain)
            elif isinstance(target, (ast.Tuple, ast.List)):
                values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and not whole else None
                starred = any(isinstance(e, ast.Starred) for e in target.elts + (values or []))
                if values is not None and len(values) == len(target.elts) and not starred:
                    for inner, inner_value in zip(target.elts, values):
                        bind(inner, inner_value, certain=certain)
                else:
                    for inner in target.elts:
                        bind(inner, value, whole=True, certain=certain)
            elif isinstance(target, ast.Starred):
                bind(target.value, value, whole=True, certain=certain)
            # a.b = v and a[k] = v change an object: they are sites, found by _scan

        if isinstance(statement, _DEFS):
            self._add_binding(statement.name, "def", statement, record, visible, definite)
        elif isinstance(statement, ast.ClassDef):
            self._add_binding(statement.name, "class", statement, record, visible, definite)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                bind(target, statement.value)
                if isinstance(target, ast.Name) and _alias_root(statement.value):
                    self.aliases.setdefault(_alias_root(statement.value), set()).add(target.id)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            bind(statement.target, statement.value)
        elif isinstance(statement, ast.AugAssign):
            bind(statement.target, statement.value, certain=False)  # the old value stays part of the new one
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            bind(statement.target, statement.iter, whole=True, certain=False)
            for name in (n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)):
                if _alias_root(statement.iter):
                    self.aliases.setdefault(_alias_root(statement.iter), set()).add(name)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            for item in statement.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, item.context_expr, whole=True, certain=False)
        elif isinstance(statement, _TRIES):
            for handler in statement.handlers:
                if handler.name:
                    self._add_binding(handler.name, "expr", handler.type, record, visible, False)
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                for n in ast.walk(case.pattern):
                    name = getattr(n, "name", None) or getattr(n, "rest", None)
                    if isinstance(name, str):
                        self._add_binding(name, "expr", statement.subject, record, visible, False)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name == "*":
                    # Any name may be bound here: what the module holds is not in the text.
                    self.stars.append(_Binding("*", "star", "." * statement.level + (statement.module or ""),
                                               record, visible, False))
                    continue
                if isinstance(statement, ast.Import):
                    name = alias.asname or alias.name.split(".")[0]
                    path = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    name = alias.asname or alias.name
                    path = "." * statement.level + (statement.module or "") + "." + alias.name
                self._add_binding(name, "import", path, record, visible, definite)
                self.library_of.setdefault(name, set()).add(path)

    def _add_binding(self, name, kind, value, record, visible, definite):
        self.bindings.setdefault(name, []).append(_Binding(name, kind, value, record, visible, definite))
        record.binds.append(name)
        if definite:
            self._defined.add(name)

    # -- whether a statement certainly runs to its end

    def _safe_statement(self, statement):
        if isinstance(statement, ast.Expr):
            return isinstance(statement.value, ast.Constant)
        if isinstance(statement, (ast.Pass, ast.Global, ast.Nonlocal)):
            return True
        if isinstance(statement, ast.Import):
            return all(self._loaded(alias.name) for alias in statement.names)
        if isinstance(statement, ast.ImportFrom):
            module = statement.module or ""
            return statement.level == 0 and all(
                self._loaded(module) if alias.name == "*" else (
                    self._loaded(f"{module}.{alias.name}") or _attribute_exists(f"{module}.{alias.name}"))
                for alias in statement.names)
        if isinstance(statement, _DEFS):
            arguments = statement.args
            parts = list(statement.decorator_list) + arguments.defaults + [
                d for d in arguments.kw_defaults if d is not None]
            parts += [a.annotation for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
                      + [arguments.vararg, arguments.kwarg] if a is not None and a.annotation is not None]
            parts += [statement.returns] if statement.returns is not None else []
            return all(self._safe_expression(part) for part in parts)
        if isinstance(statement, ast.ClassDef):
            return (all(self._safe_expression(part) for part in statement.decorator_list + statement.bases
                        + [k.value for k in statement.keywords])
                    and all(self._safe_statement(inner) for inner in statement.body))
        if isinstance(statement, ast.Assign):
            return all(isinstance(t, ast.Name) for t in statement.targets) and self._safe_expression(statement.value)
        if isinstance(statement, ast.AnnAssign):
            return (isinstance(statement.target, ast.Name) and self._safe_expression(statement.annotation)
                    and (statement.value is None or self._safe_expression(statement.value)))
        return False

    def _safe_expression(self, node):
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self._safe_expression(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.operand, ast.Constant)
        if isinstance(node, ast.Name):
            return node.id in self._defined or (node.id not in self.bindings and hasattr(builtins, node.id))
        if isinstance(node, ast.Attribute):
            root, attributes = _dotted(node)
            if root is None or root.id not in self._defined:
                return False
            kinds = {b.kind for b in self.bindings.get(root.id, [])}
            paths = self.library_of.get(root.id, set())
            return kinds == {"import"} and len(paths) == 1 and _attribute_exists(".".join([*paths, *attributes]))
        if isinstance(node, ast.Lambda):
            return all(self._safe_expression(d) for d in node.args.defaults + node.args.kw_defaults if d is not None)
        return False

    @staticmethod
    def _loaded(path):
        if _refused_path(path):
            return False
        return path in sys.modules or ("." not in path and path in getattr(sys, "stdlib_module_names", ())
                                       and _stdlib_present(path))

    # -- the whole source, every scope: changes to objects, writes to globals, calls

    def _scan(self):
        local_aliases, pending = {}, []
        for record in self.records:
            lambda_owner = record.binds[0] if (isinstance(record.node, ast.Assign)
                                               and isinstance(record.node.value, ast.Lambda) and record.binds) else None
            for root in record.full:
                for n, s in _scoped(root, self.module):
                    self._scan_node(n, s, record, lambda_owner, local_aliases, pending)
        for function_id, name, record, kind, attribute in pending:
            for target in local_aliases.get((function_id, name), ()):
                if kind != "call" or self._mutator(attribute) or not self.is_library(target):
                    self.sites.setdefault(target, []).append(record)

    def _scan_node(self, n, s, record, lambda_owner, local_aliases, pending):
        if isinstance(n, (*_DEFS, ast.ClassDef, ast.Lambda)):
            parent = self.display.get(id(s.node)) if s.node is not None and not isinstance(
                s.node, _COMPREHENSIONS) else None
            if isinstance(n, ast.Lambda):
                bound_directly = parent is None and lambda_owner is not None and record.node.value is n
                owner = parent or lambda_owner or (record.binds[0] if record.binds else None)
                self.display[id(n)] = lambda_owner if bound_directly else (
                    f"lambda in {owner}" if owner else "lambda")
            else:
                self.display[id(n)] = f"{parent}.{n.name}" if parent else n.name
                if isinstance(n, _DEFS):
                    self.functions_named.setdefault(n.name, []).append(n)
                decorators = n.decorator_list
                if any(self._registrar(d) for d in decorators):
                    for library in self._libraries_in(decorators, s):
                        self.sites.setdefault(f"<library {library}>", []).append(record)
                if isinstance(n, ast.ClassDef) and any(
                        isinstance(m, _DEFS) and m.name in ("__torch_function__", "__torch_dispatch__")
                        for m in n.body):
                    self.sites.setdefault("<library torch>", []).append(record)
        if isinstance(n, ast.NamedExpr) and self._binds_module(s):
            self._add_binding(n.target.id, "expr", tuple(record.parts), record, record.pos - 0.5, False)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and s.kind != "module" \
                and n.id in s.declared:  # global X, then X = ... inside a function
            self.anytime.setdefault(n.id, []).append(
                _Binding(n.id, "global", s.function, record, -1, False))
        written = [n.name] if isinstance(n, (*_DEFS, ast.ClassDef)) else [
            a.asname or a.name.split(".")[0] for a in n.names if a.name != "*"] if isinstance(
            n, (ast.Import, ast.ImportFrom)) else []
        for name in written:
            if s.kind == "function" and name in s.declared:
                self.anytime.setdefault(name, []).append(_Binding(name, "global", s.function, record, -1, False))
        if isinstance(n, (ast.Import, ast.ImportFrom)) and s.kind == "function":
            for alias in n.names:
                if alias.name != "*":
                    name = alias.asname or alias.name.split(".")[0]
                    top = (alias.name if isinstance(n, ast.Import) else (n.module or "")).split(".")[0]
                    local_aliases.setdefault((id(s.function), name), set()).add(f"<library {top}>")
                    if isinstance(n, ast.Import):
                        path = alias.name if alias.asname else alias.name.split(".")[0]
                    else:
                        path = "." * n.level + (n.module or "") + "." + alias.name
                    self.local_imports.setdefault((id(s.function), name), set()).add(path)
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr)) and s.kind == "function":
            value = n.iter if isinstance(n, (ast.For, ast.AsyncFor)) else n.value
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            root = _alias_root(value) if value is not None else None
            if root is not None and s.is_global(root):
                for target in targets:
                    for name in (t.id for t in ast.walk(target) if isinstance(t, ast.Name)):
                        local_aliases.setdefault((id(s.function), name), set()).add(root)
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            self._site(n.value, s, record, "attr" if isinstance(n, ast.Attribute) else "item", None, pending)
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Attribute):
                self._site(n.func.value, s, record, "call", n.func.attr, pending)
                self.calls.setdefault(n.func.attr, []).append(record)
            elif isinstance(n.func, ast.Name):
                self.calls.setdefault(n.func.id, []).append(record)
                if n.func.id in ("setattr", "delattr") and n.args:
                    self._site(n.args[0], s, record, "attr", None, pending)
            for argument in n.args + [k.value for k in n.keywords]:
                argument = argument.value if isinstance(argument, ast.Starred) else argument
                root, _ = _chain(argument)
                if isinstance(root, ast.Name) and s.is_global(root.id):
                    self.passes.setdefault(root.id, []).append((n, s, record))

    def _site(self, base, s, record, kind, attribute, pending):
        """``base`` (an object's expression) is changed at ``record``: by a store, a method call or setattr."""
        root, _ = _chain(base)
        names = [root] if isinstance(root, ast.Name) else [
            m for m in ast.walk(root) if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load)]
        for name in (m.id for m in names):
            if s.is_global(name):
                if kind != "call" or self._mutator(attribute) or not self.is_library(name):
                    self.sites.setdefault(name, []).append(record)
                continue
            owner = s.owner_of(name)
            if owner is None:
                continue
            if name in _parameters(owner.node) and (kind != "call" or self._mutator(attribute)):
                self.mutated.setdefault(id(owner.node), set()).add((name, kind))
            pending.append((id(owner.node), name, record, kind, attribute))

    @staticmethod
    def _binds_module(s):
        """Whether a name bound in scope ``s`` (a walrus inside a comprehension, say) is bound in the module."""
        while s.kind == "comprehension":
            s = s.parent
        return s.kind == "module"

    @staticmethod
    def _mutator(attribute):
        return attribute is not None and (attribute in _MUTATORS or attribute.startswith("register"))

    def _registrar(self, decorator):
        """A decorator that hands the function to a library (torch.library.custom_op, register_...)."""
        node = decorator.func if isinstance(decorator, ast.Call) else decorator
        root, attributes = _chain(node)
        return (isinstance(root, ast.Name) and self.is_library(root.id)
                and any(self._mutator(a) or a in ("library", "custom_op") for a in attributes))

    def _libraries_in(self, nodes, s):
        found = set()
        for node in nodes:
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and s.is_global(n.id):
                    found.update(path.split(".")[0] for path in self.library_of.get(n.id, ()))
        return found

    # -- questions the walk asks

    def trusts(self, path):
        return _trusted_module(path, self.course)

    def outside_reason(self, path, verb="uses"):
        return _outside_reason(path, verb, self.course)

    def is_library(self, name):
        return bool(self.library_of.get(name))

    def visible(self, name, at=None, after=None):
        """(bindings ``name`` may have, whether it may be unbound there and so a builtin).

        ``at``: the value as the statement at that position runs; ``after``: any value from that position on.
        """
        point = at if at is not None else after
        everything = sorted(self.bindings.get(name, []) + self.stars, key=lambda b: b.visible_from)
        found, certain = [], False
        for binding in reversed([b for b in everything if b.visible_from < point]):
            found.append(binding)
            if binding.definite:
                certain = True
                break
        if at is None and after != _LATER:
            found += [b for b in everything if b.visible_from >= after]
        return found + self.anytime.get(name, []), not certain

    def paths_of(self, node, s):
        """Dotted paths of an attribute chain rooted at an imported name or a builtin: ``torch.load`` ..."""
        root, attributes = _dotted(node)
        if root is None:
            return []
        if not s.is_global(root.id):
            return [".".join([path, *attributes]) for path in self.local_paths(root.id, s)]
        return [".".join([path, *attributes]) for path in self.name_paths(root.id)]

    def name_paths(self, name):
        """Dotted paths a global ``name`` may be bound to in a library: by an import, as a builtin, by ``import *``."""
        paths = list(self.library_of.get(name, ()))
        if name not in self.bindings and name not in self.anytime:
            # Not bound in the text: a builtin, or a name of a module imported with ``import *``. (Where the text
            # binds it too, the walk sees an ``import *`` that may replace that binding: see ``_Walk.follow_name``.)
            paths += [f"builtins.{name}"] + [f"{star.value}.{name}" for star in self.stars]
        return paths

    def local_paths(self, name, s):
        """Dotted paths a name local to a function may be bound to by an import inside it."""
        owner = s.owner_of(name)
        return sorted(self.local_imports.get((id(owner.node), name), ())) if owner is not None else []

    def may_change(self, call, s, library):
        """Whether ``call`` may change the object passed to it (an argument of it is being followed)."""
        function = call.func
        kinds = {"attr"} if library else {"attr", "item", "call"}

        def changes(node):
            return any(kind in kinds for _, kind in self.mutated.get(id(node), ()))

        if isinstance(function, ast.Name):
            if not s.is_global(function.id):
                return True
            bindings = self.bindings.get(function.id, []) + self.anytime.get(function.id, [])
            if not bindings:
                return function.id in ("setattr", "delattr")
            for binding in bindings:
                if binding.kind == "import":
                    if self._mutator(binding.value.split(".")[-1]):
                        return True
                elif binding.kind == "def":
                    if changes(binding.value):
                        return True
                elif binding.kind == "class":
                    if any(changes(m) for m in binding.value.body if isinstance(m, _DEFS)):
                        return True
                else:
                    return True
            return False
        if isinstance(function, ast.Attribute):
            if self.paths_of(function, s):
                return self._mutator(function.attr)
            return self._mutator(function.attr) or any(changes(f) for f in self.functions_named.get(function.attr, []))
        return True


def _stdlib_present(name):
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _Walk:
    """Follow names from where the walk starts, and report what is found in the code reached.

    ``timed``: the walk from the timed names, which reports loops, recursion and what it cannot follow; else the
    walk of the code that runs while the module loads, which reports only what it cannot follow.
    """

    def __init__(self, program, timed, first_name=None):
        self.program, self.timed, self.first_name = program, timed, first_name
        self.findings, self._keys = [], set()
        self._visited, self._todo = {}, []
        self._sites, self._libraries = set(), set()
        self._edges = []  # (caller, call, callee, record)
        self._targets = {}
        self._called = set()  # id of each func node of a call checked for what it is called with (getattr...)
        self._stars_reported = set()

    def push(self, record, roots, body_q):
        """Read ``roots`` (nodes of ``record``): names outside function bodies as the statement runs, names in
        them as from ``body_q`` on (_LATER: only after the module has run)."""
        key = (id(record), tuple(id(root) for root in roots))
        if key in self._visited and self._visited[key] <= body_q:
            return
        self._visited[key] = body_q
        self._todo.append((record, roots, body_q))

    def run(self):
        while self._todo:
            record, roots, body_q = self._todo.pop(0)
            for root in roots:
                for n, s in _scoped(root, self.program.module, annotations=not self.timed):
                    self._node(n, s, record, body_q)

    def _node(self, n, s, record, body_q):
        self._refusals(n, s, record)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and s.is_global(n.id):
            if s.deferred:
                self.follow_name(n.id, record, n, after=body_q, body_q=body_q, scope=s)
            else:
                self.follow_name(n.id, record, n, at=record.pos, body_q=body_q, scope=s)
        if not (self.timed and s.deferred):
            return
        if isinstance(n, _LOOP_NODES) and not _constant_iteration(n):
            self._find("loop", record, n, s)
        if isinstance(n, ast.Call):
            if any(path in _HIDDEN_LOOPS for path in self._call_paths(n.func, s, body_q)):
                self._find("loop", record, n, s)
            if s.function is not None:
                for callee in self._call_targets(n.func, s, body_q):
                    self._edges.append((s.function, n, callee, record))

    def _call_paths(self, function, s, body_q):
        """Dotted paths a call's func may name in a library or the builtins: ``builtins.map``, ``functools.reduce``."""
        if isinstance(function, ast.Attribute):
            return self.program.paths_of(function, s)
        if not isinstance(function, ast.Name):
            return []
        if not s.is_global(function.id):  # imported inside the function: ``from functools import reduce``
            return self.program.local_paths(function.id, s)
        paths = list(self.program.library_of.get(function.id, ()))
        bindings, maybe_builtin = self.program.visible(function.id, after=body_q)
        paths += [f"{b.value}.{function.id}" for b in bindings if b.kind == "star"]
        return paths + ([f"builtins.{function.id}"] if maybe_builtin else [])

    def follow_name(self, name, record, node, at=None, after=None, body_q=_LATER, scope=None):
        bindings, maybe_builtin = self.program.visible(name, at=at, after=after)
        if maybe_builtin:
            if name in _REFUSED_BUILTINS and node is not None:
                self._find("refused", record, node, scope, _REFUSED_BUILTINS[name])
            self.follow_library("builtins")
        for binding in bindings:
            self._outside(name, binding, record, node, scope)
            self._follow_binding(binding, body_q)
        self.follow_sites(name)

    def _outside(self, name, binding, record, node, scope):
        """A finding when ``name``, as ``binding`` binds it, is code the check cannot read: a module outside the
        submission (by an import, or perhaps by ``import *``), or a part of a trusted one that makes code."""
        if binding.kind == "import":
            if _refused_path(binding.value):
                return  # refused where it is imported, more precisely
            reason = self.program.outside_reason(binding.value)
            if reason and name != binding.value.split(".")[0]:
                reason = reason.replace("uses ", f"uses {name}, from ", 1)
        elif binding.kind == "star":
            if binding.record.pos in self._stars_reported:
                return
            module = binding.value
            reason = None if self.program.trusts(module) else (
                f"uses {name}, which may come from {module or 'a relative package'} (`from {module} import *`), "
                f"a module outside your submission")
            if reason is None:  # a trusted library's: refused for the names of it that make or load code
                reason = _refused_path(f"{module}.{name}")
            if reason:
                self._stars_reported.add(binding.record.pos)
        else:
            return
        if not reason:
            return
        if node is None:  # the timed name itself: the finding points at the statement that binds it
            record, node, scope = binding.record, binding.record.node, None
        self._find("refused", record, node, scope, reason, advice=_ADVICE_OUTSIDE)

    def _follow_binding(self, binding, use):
        record, value = binding.record, binding.value
        if binding.kind == "def":
            self.push(record, [value], use if self._library_only(value.decorator_list, record) else
                      min(use, record.pos))
        elif binding.kind == "class":
            outside = value.decorator_list + value.bases + [k.value for k in value.keywords]
            self.push(record, [value], use if self._library_only(outside, record) else min(use, record.pos))
        elif binding.kind == "expr" and value is not None:
            nodes = list(value) if isinstance(value, tuple) else [value]
            self.push(record, nodes, min(use, record.pos) if _has_call(nodes) else use)
        elif binding.kind == "import" or binding.kind == "star" and self.program.trusts(value):
            self.follow_library(value.split(".")[0])
        elif binding.kind == "global":
            # Set inside a function: the function, and every call of it (its arguments may be the value).
            self.push(record, record.full, record.pos)
            for caller in self.program.calls.get(getattr(value, "name", None), []):
                self.push(caller, caller.full, caller.pos)

    def follow_sites(self, name):
        """Every place that may change the object ``name`` is bound to, or a part of it (through its aliases)."""
        names = [name]
        while names:
            name = names.pop()
            if name in self._sites:
                continue
            self._sites.add(name)
            for record in self.program.sites.get(name, []):
                self.push(record, record.full, record.pos)
            names.extend(sorted(self.program.aliases.get(name, ())))
            library = self.program.is_library(name) or name.startswith("<library")
            for call, s, record in self.program.passes.get(name, []):
                if self.program.may_change(call, s, library):
                    self.push(record, record.full, record.pos)

    def follow_library(self, top):
        """A library is not read, but every change the source makes to it is."""
        if top in self._libraries:
            return
        self._libraries.add(top)
        for name, paths in self.program.library_of.items():
            if any(path.split(".")[0] == top for path in paths):
                self.follow_sites(name)
        self.follow_sites(f"<library {top}>")

    def _library_only(self, nodes, record):
        """Whether ``nodes`` (decorators, bases) use only imported names and builtins: no code of the source."""
        for node in nodes:
            for n, s in _scoped(node, self.program.module):
                if isinstance(n, ast.Lambda):
                    return False
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and s.is_global(n.id):
                    bindings, _ = self.program.visible(n.id, at=record.pos)
                    if any(b.kind != "import" and not (b.kind == "star" and self.program.trusts(b.value))
                           for b in bindings):
                        return False
        return True

    # -- recursion

    def _call_targets(self, function, s, body_q):
        """The functions a call of ``function`` (a call's func) may run, as far as names tell."""
        if isinstance(function, ast.Name):
            if s.is_global(function.id):
                bindings, _ = self.program.visible(function.id, after=body_q)
                return set().union(*(self._binding_targets(b) for b in bindings))
            cls = s.method_class() if s.function is not None and _parameters(s.function)[:1] == [function.id] \
                else None
            return {m for m in cls.body if isinstance(m, _DEFS) and m.name in _CALLED_ON_CALL} if cls else set()
        root, attributes = _chain(function)
        if not isinstance(root, ast.Name) or not attributes and not isinstance(function, ast.Subscript):
            return set()
        if not s.is_global(root.id):
            owner = s
            while owner is not None and owner.kind == "comprehension":
                owner = owner.parent
            cls = owner.method_class() if owner is not None and owner.function is not None and _parameters(
                owner.function)[:1] == [root.id] else None
            if cls is None or len(attributes) != 1:
                return set()
            return {m for m in cls.body if isinstance(m, _DEFS) and m.name == attributes[0]}
        bindings, _ = self.program.visible(root.id, after=body_q)
        return set().union(*(self._binding_targets(b, everything=True) for b in bindings))

    def _binding_targets(self, binding, everything=False):
        key = (id(binding), everything)
        if key in self._targets:
            return self._targets[key]
        self._targets[key] = set()  # a cycle of bindings ends here
        found = set()
        if binding.kind == "def":
            found = {binding.value}
        elif binding.kind == "class":
            found = {m for m in binding.value.body if isinstance(m, _DEFS)
                     and (everything or m.name in _CALLED_ON_CALL)}
        elif binding.kind == "expr" and binding.value is not None:
            nodes = list(binding.value) if isinstance(binding.value, tuple) else [binding.value]
            for node in nodes:
                for n, s in _scoped(node, self.program.module):
                    if isinstance(n, ast.Lambda) and not s.deferred:
                        found.add(n)
                    elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and not s.deferred \
                            and s.is_global(n.id):
                        for inner in self.program.visible(n.id, at=binding.record.pos)[0]:
                            targets = self._binding_targets(inner, everything=True)
                            found |= targets
                            # What a factory returns: the functions made in it, and the names it returns.
                            for factory in [t for t in targets if isinstance(t, _DEFS)]:
                                found |= {f for f in ast.walk(factory) if isinstance(f, _FUNCTIONS)
                                          and f is not factory}
        self._targets[key] = found
        return found

    def report_recursion(self):
        graph = {}
        for caller, call, callee, record in self._edges:
            graph.setdefault(id(caller), []).append((callee, call, record, caller))
        reported = set()
        for caller, call, callee, record in sorted(self._edges, key=lambda e: (e[3].pos, e[1].lineno,
                                                                                 e[1].col_offset)):
            path = self._path(graph, callee, caller)
            if path is None:
                continue
            cycle = frozenset(id(node) for node in [caller, *path])
            if cycle in reported:
                continue
            reported.add(cycle)
            names = [self._name_of(node) for node in [caller, *path]]
            chain = names[0] if len(path) == 1 else " → ".join(names)
            self._find("recursion", record, call, None, f"recursion in {chain}", function=caller)

    @staticmethod
    def _path(graph, start, goal):
        """Functions from ``start`` to ``goal`` along calls, ``goal`` included; None when there is no way."""
        paths, seen = [[start]], {id(start)}
        while paths:
            path = paths.pop(0)
            if path[-1] is goal:
                return path
            for callee, _, _, _ in graph.get(id(path[-1]), []):
                if id(callee) not in seen or callee is goal:
                    seen.add(id(callee))
                    paths.append(path + [callee])
        return None

    # -- findings

    def _refusals(self, n, s, record):
        program = self.program
        if isinstance(n, ast.Name):
            if n.id == "__builtins__":
                self._find("refused", record, n, s, "reaches the builtins through __builtins__")
            elif isinstance(n.ctx, ast.Store) and n.id in _REFUSED_MODULE_NAMES and program._binds_module(s):
                self._find("refused", record, n, s, f"replaces the module's {n.id}")
        elif isinstance(n, ast.Attribute):
            reason = _REFUSED_ATTRIBUTES.get(n.attr)
            if reason is None and isinstance(n.ctx, (ast.Store, ast.Del)) and n.attr in _REFUSED_STORES:
                reason = f"assigns {n.attr}"
            advice = None
            if reason is None:
                paths = program.paths_of(n, s)
                reason = next(filter(None, map(_refused_path, paths)), None)
                if reason is None:  # a private part of a trusted library (torch._C): code it does not vouch for
                    trusted = [path for path in paths if program.trusts(path)]
                    reason = next(filter(None, map(program.outside_reason, trusted)), None)
                    advice = _ADVICE_OUTSIDE
            if reason:
                self._find("refused", record, n, s, reason, advice=advice)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for alias in n.names:
                advice = None
                if isinstance(n, ast.ImportFrom) and n.level:
                    reason = "imports from a relative package"
                else:
                    module = n.module + "." if isinstance(n, ast.ImportFrom) else ""
                    reason = _refused_path(module + alias.name)
                    if reason is None and s.kind != "module":
                        # Inside a function or a class, the names it binds are not followed: refused here.
                        reason = self.program.outside_reason(module + alias.name, verb="imports")
                        advice = _ADVICE_OUTSIDE
                if reason:
                    self._find("refused", record, n, s, reason, advice=advice)
        elif isinstance(n, (*_DEFS, ast.ClassDef)) and n.name in _REFUSED_MODULE_NAMES and s.kind == "module":
            self._find("refused", record, n, s, f"replaces the module's {n.name}")
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (
                "setattr", "delattr", "getattr", "hasattr") and s.is_global(n.func.id) and len(n.args) >= 2 \
                and n.func.id not in program.bindings:
            attribute = n.args[1]
            if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
                if attribute.value in _REFUSED_ATTRIBUTES or (n.func.id != "getattr" and attribute.value in
                                                              _REFUSED_STORES):
                    self._find("refused", record, n, s, f"uses {attribute.value} through {n.func.id}(...)")
            elif n.func.id == "setattr":
                root, _ = _chain(n.args[0])
                of_library = isinstance(root, ast.Name) and s.is_global(root.id) and program.is_library(root.id)
                owner = s
                while owner is not None and owner.kind == "comprehension":
                    owner = owner.parent
                of_self = (isinstance(root, ast.Name) and owner is not None and owner.function is not None
                           and owner.method_class() is not None and _parameters(owner.function)[:1] == [root.id])
                if not (of_library or of_self):
                    self._find("refused", record, n, s, "sets an attribute whose name is computed, with setattr(...)")
        if isinstance(n, ast.Call):
            self._called_with(n, s, record)
        elif isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load) and id(n) not in self._called:
            paths = self._library_paths(n, s)
            if "builtins.getattr" in paths:
                self._find("refused", record, n, s, "passes getattr on, so that it may fetch an attribute whose "
                                                    "name is not written out")
            for path in sorted(set(paths) & set(_TEXT_OR_CODE)):
                self._find("refused", record, n, s, f"passes {path} on, so that it may run text as code")

    def _library_paths(self, node, s):
        """Dotted paths in a library or the builtins that a name or an attribute chain may be bound to."""
        if isinstance(node, ast.Name):
            return self.program.name_paths(node.id) if s.is_global(node.id) else self.program.local_paths(node.id, s)
        return self.program.paths_of(node, s) if isinstance(node, ast.Attribute) else []

    def _called_with(self, call, s, record):
        """A call of getattr, or of a function that takes text or code (timeit), checked for what it is called
        with: an attribute name not written out, or text, is refused."""
        paths = self._library_paths(call.func, s)
        if "builtins.getattr" in paths:
            self._called.add(id(call.func))
            name = call.args[1] if len(call.args) >= 2 and not any(
                isinstance(a, ast.Starred) for a in call.args[:2]) else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                self._find("refused", record, call, s, "fetches an attribute whose name is computed, with getattr(...)")
            else:  # a name written out: what it fetches from a library is checked as ``owner.name`` would be
                owner = call.args[0]
                for path in (f"{path}.{name.value}" for path in self._library_paths(owner, s)):
                    reason = _refused_path(path) or (
                        self.program.outside_reason(path) if self.program.trusts(path) else None)
                    if reason:
                        self._find("refused", record, call, s, f"{reason}, through getattr(...)")
                        break
        for path in sorted(set(paths) & set(_TEXT_OR_CODE)):
            self._called.add(id(call.func))
            keywords = _TEXT_OR_CODE[path]
            given = list(call.args[:len(keywords)]) + [k.value for k in call.keywords if k.arg in keywords or
                                                        k.arg is None]
            if any(not self._code_not_text(value) for value in given):
                self._find("refused", record, call, s, f"runs text as code with {path.split('.')[-1]}(...)")

    def _code_not_text(self, node):
        """Whether ``node`` is certainly a function, not text: a lambda, or a name bound only by def."""
        if isinstance(node, ast.Lambda):
            return True
        program = self.program
        return (isinstance(node, ast.Name) and not program.stars and node.id not in program.anytime
                and bool(program.bindings.get(node.id)) and all(b.kind == "def" for b in program.bindings[node.id]))

    def _name_of(self, node):
        return self.program.display.get(id(node), getattr(node, "name", "lambda"))

    def _find(self, kind, record, node, scope, reason=None, function=None, advice=None):
        named = function
        if named is None and scope is not None:
            inner = scope
            while inner is not None and inner.kind != "module" and (
                    inner.node is None or isinstance(inner.node, _COMPREHENSIONS)):
                inner = inner.parent
            named = inner.node if inner is not None and inner.kind != "module" else None
        lineno = getattr(node, "lineno", record.node.lineno)
        if named is not None:
            name, line = self._name_of(named), lineno - named.lineno + 1
        else:
            name = record.binds[0] if record.binds else (self.first_name or "the module")
            line = lineno
        text = record.lines[lineno - 1].strip() if lineno <= len(record.lines) else ""
        where = f" ({record.label})" if record.label else ""
        if kind == "loop":
            message = f"{name}, line {line}: {text}{where}"
        elif kind == "recursion":
            message = f"{name}, line {line}: {text} ({reason}){where}"
        else:
            message = (f"{name}, line {line}: {text}{where}: {reason}, which the loop check cannot follow; "
                       f"{advice or _ADVICE}")
        if message not in self._keys:
            self._keys.add(message)
            self.findings.append((record.pos, kind, message))

