"""A .py file that does not compile is cut at its top-level statements (intake/load.py, ``python_chunks``): the
statement with the error is set apart, the rest runs, and every message still points at the file's own lines.

Files are drawn (hypothesis) from top-level statements that are hard to cut: docstrings and strings holding lines at
column 0 (a ``def`` among them), decorators, a bracket closed at column 0, ``if``/``else`` and ``try``/``except`` at
the top level, comments; one statement is then broken, or none.
"""

import subprocess
import sys
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.intake.load import SPLIT_BYTES, SPLIT_ERRORS, python_chunks


def _def(name, value):
    return f"def {name}():\n    return {value}\n"


# Each makes the statement that defines ``name`` (returning ``value``): valid code, cut-unfriendly.
STATEMENTS = [
    lambda name, value: _def(name, value),
    lambda name, value: f'def {name}():\n    """Its doc.\n\ndef not_a_function():\nat column 0\n    """\n    return {value}\n',
    lambda name, value: f"@staticmethod\n# a comment between\n@(lambda function: function)\n{_def(name, value)}",
    lambda name, value: f"{name} = (\n    lambda: {value}\n)\n",
    lambda name, value: f"if True:\n    {_def(name, value).replace(chr(10), chr(10) + '    ')}\nelse:\n    pass\n",
    lambda name, value: f"try:\n    import math\nexcept ImportError:\n    pass\nfinally:\n    {name} = lambda: {value}\n",
    lambda name, value: f'_text_{name} = """\n{_def("decoy", -1)}"""\n{_def(name, value)}',
    lambda name, value: f"class _{name}:\n    value = {value}\n\n\n{name} = lambda: _{name}.value\n",
]

# Each breaks a statement: (what, the broken text).
BREAKS = [
    lambda text: text.replace("):", ")", 1) if "):" in text else text + "def (:\n",
    lambda text: text.replace("(", "((", 1),
    lambda text: text + "    return )\n",
    lambda text: text.replace("\n", "\n  x = 1\n", 1),
    lambda text: "print 'python 2'\n" + text,
    lambda text: text + "def after(:\n    pass\n",
]


@st.composite
def files(draw):
    count = draw(st.integers(1, 8))
    statements = [draw(st.sampled_from(STATEMENTS))(f"f{index}", index) for index in range(count)]
    broken = draw(st.none() | st.integers(0, count - 1))
    if broken is not None:
        changed = draw(st.sampled_from(BREAKS))(statements[broken])
        try:
            compile(changed, "check", "exec")
            broken = None  # the change happened to compile: the file is whole
        except SyntaxError:
            statements[broken] = changed
    blank = draw(st.sampled_from(["\n", "\n\n", "\n\n\n# a comment\n\n"]))
    return "import torch\n" + blank + blank.join(statements), broken, count


def _run(chunks):
    """Each chunk run on its own, as the job runs them: what they define."""
    namespace = {}
    for chunk in chunks:
        try:
            exec(compile(chunk["source"], chunk["label"], "exec"), namespace)
        except Exception:
            pass
    return namespace


@settings(max_examples=300, deadline=None)
@given(files())
def test_every_statement_but_the_broken_one_runs_and_lines_keep_their_numbers(drawn):
    text, broken, count = drawn
    chunks = python_chunks(text, "answer.py")
    assert all(chunk["label"] == "answer.py" for chunk in chunks)
    lines = text.split("\n")
    # In the file's order, each line once: a chunk is blank lines, then its part of the file at its own lines.
    pieces = [chunk["source"].lstrip("\n") for chunk in chunks]
    starts = [len(chunk["source"]) - len(piece) for chunk, piece in zip(chunks, pieces)]
    assert "\n".join(pieces) == text.lstrip("\n")
    for chunk, start in zip(chunks, starts):
        for number, line in enumerate(chunk["source"].split("\n")):
            assert number < start or line == lines[number]
    namespace = _run(chunks)
    if broken is None:
        assert chunks == [{"label": "answer.py", "source": text}]  # a file that compiles is one chunk, as always
    for index in range(count):
        if index != broken:
            assert namespace[f"f{index}"]() == index, (index, broken, text)


def test_a_file_with_an_error_in_every_statement_is_cut_a_bounded_number_of_times_and_quickly():
    text = "".join(f"def f{index}(:\n    return {index}\n\n" for index in range(4000))
    assert len(text) < SPLIT_BYTES
    started = time.monotonic()
    chunks = python_chunks(text, "answer.py")
    assert time.monotonic() - started < 10
    assert 1 < len(chunks) <= 3 * SPLIT_ERRORS + 1


def test_a_file_too_large_to_cut_stays_whole():
    text = "def f(:\n" + "x = 1\n" * (SPLIT_BYTES // 6 + 1)
    assert python_chunks(text, "answer.py") == [{"label": "answer.py", "source": text}]


def test_the_grader_shows_none_of_compile_s_warnings():
    """compile() warns of dubious code; the warning is the student's code's, shown by the job if anywhere, never
    on the grader's own output (pytest's capture of warnings would hide it here: a fresh Python is asked)."""
    text = "def f(:\n    pass\n\n\nx = 1\nif x is 1:\n    y = (1, 2)(3)\n    z = '\\\\d'\n"
    script = ("from autograder.intake.load import python_chunks\n"
              "from autograder.core.loop_check import loops_in\n"
              f"chunks = python_chunks({text!r}, 'answer.py')\n"
              "assert len(chunks) == 2, chunks\n"
              "loops_in([(chunk['label'], chunk['source']) for chunk in chunks], ['f'])\n")
    done = subprocess.run([sys.executable, "-W", "default", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


# What the loop check reads is what runs: a definition that parses but does not compile runs nowhere, so the check
# must not read it in place of an earlier one that runs (before, a decoy cell after a looping alibi_bias hid its loop).
DECOY_BODIES = ["    nonlocal scale\n    return slopes\n", "    break\n", "    return slopes\n    yield from ()\n    await x\n",
                "    continue\n"]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(DECOY_BODIES), st.sampled_from(["cells", "py"]))
def test_the_loop_check_reads_no_definition_that_does_not_compile(body, form):
    from autograder.core import units
    from autograder.core.timing import static_check

    unit = units.get("rotary_alibi")
    path = next(path for path in unit.rubric.TIMED_PATHS if "alibi_bias" in path.functions)
    looping = ("import torch\n\n\ndef alibi_bias(length_q, length_k, slopes):\n"
               "    rows = [slopes[:, None] * (torch.arange(length_k) - i) for i in range(length_q)]\n"
               "    return torch.stack(rows, dim=1)[None]\n")
    decoy = f"def alibi_bias(length_q, length_k, slopes):\n{body}"
    try:
        compile(decoy, "decoy", "exec")
        raise AssertionError("the decoy compiles")
    except SyntaxError:
        pass
    if form == "cells":
        chunks = [{"label": "cell 1", "source": looping}, {"label": "cell 2", "source": decoy}]
    else:
        chunks = python_chunks(looping + "\n\n" + decoy, "rotary_alibi.py")
    found = static_check(chunks, path, unit)
    assert any(kind == "loop" and "range(length_q)" in text for kind, text in found), found
