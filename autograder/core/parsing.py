"""Python's parser, one parse at a time in this process: every syntax tree the grader makes goes through here.

CPython (3.11 and 3.12) keeps the depth count of the code that turns a parse into ``ast`` objects in one place
for the whole interpreter, not one per thread, and a parse sets it afresh when it starts. When a garbage
collection in the middle of one parse runs Python code (a finalizer) and the interpreter switches threads there,
a parse in the other thread resets the count, and the first one ends with ``SystemError: AST constructor
recursion depth mismatch`` (gh-106905 and its kin). The grader grades several submissions at once in threads
(core/threads.py), and builds the error model's mutants in whichever thread first needs them: a parse that failed
so made a whole submission a grader fault, now and then.

So each parse here holds one lock, with the collector off: no finalizer runs in the middle of it, and nothing
else can switch threads there either (turning a parse into objects runs no Python code of its own). A parse the
grader cannot route here (the ``traceback`` module underlines the failing part of a line by parsing it) is made
``alone()`` too. ``tests/core/test_parsing.py`` checks that no other module of the kit calls ``ast.parse``.
"""

import ast
import gc
import threading
from contextlib import contextmanager

_PARSING = threading.RLock()


@contextmanager
def alone():
    """Hold the parser for the block: no other parse of the grader's, and no garbage collection, until it ends."""
    with _PARSING:
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if collecting:
                gc.enable()


def parse(source, mode="exec"):
    """``ast.parse(source, mode=mode)``, alone (see the module's docstring)."""
    with alone():
        return ast.parse(source, mode=mode)


def check_compiles(tree, filename, flags=0):
    """Compile a syntax tree (``ast`` objects back into the parser's own form, which keeps the same count), alone;
    SyntaxError where it does not compile."""
    with alone():
        compile(tree, filename, "exec", flags, dont_inherit=True)
