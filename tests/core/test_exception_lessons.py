"""Every exception from the student's code is told with the student's own line and a sentence that teaches what
that kind of error usually means (issue 24, item 5). Before, a bare `assert` or `raise ValueError` in a function
ended its row in "raised AssertionError" and nothing else.

The errors below are raised for real (torch's own messages, Python's own), not written out here, so a change of
wording in torch that the lessons no longer recognise shows."""

import re

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core.cases import EXCEPTION_LESSONS, failure_of, lesson_of
from autograder.core import voice
from conftest import by_test

LESSONS = [lesson for _, _, lesson in EXCEPTION_LESSONS]
SHAPES, DEVICES, DTYPES = LESSONS[0], LESSONS[1], LESSONS[2]
SIGNATURE = next(lesson for types, pattern, lesson in EXCEPTION_LESSONS if "unexpected keyword" in pattern)


def _error_of(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001  (what the job would send back)
        return {"type": type(error).__name__, "mro": [cls.__name__ for cls in type(error).__mro__],
                "message": str(error), "where": "your file, line 7: return q @ k"}
    raise AssertionError("the call was meant to raise")


def _signature(q, k, *, scale=None):
    return q


REAL = [
    ("matmul of (2, 3) and (4, 5)", lambda: torch.randn(2, 3) @ torch.randn(4, 5), SHAPES),
    ("adding (3,) to (4,)", lambda: torch.ones(3) + torch.ones(4), SHAPES),
    ("a meta tensor meets a CPU one", lambda: torch.ones(3, device="meta") + torch.ones(3), DEVICES),
    ("float32 @ float64", lambda: torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.float64), DTYPES),
    ("an index past an axis", lambda: torch.ones(3)[5], LESSONS[3]),
    ("an unknown keyword", lambda: _signature(1, 2, scaling=3), SIGNATURE),
    ("a keyword-only argument by position", lambda: _signature(1, 2, 3), SIGNATURE),
]


@pytest.mark.parametrize("call, lesson", [(call, lesson) for _, call, lesson in REAL], ids=[name for name, _, _ in REAL])
def test_a_real_error_is_told_with_the_student_s_line_and_the_lesson_of_its_kind(call, lesson):
    error = _error_of(call)
    told = failure_of({"error": error}, "f(x)")
    assert told.startswith(f"f(x) raised {error['type']}")
    assert f"(raised at {voice.quote('your file, line 7: return q @ k')})" in told  # the job's words: quoted
    assert told.endswith("\n" + lesson), told


names = st.sampled_from(["RuntimeError", "TypeError", "ValueError", "IndexError", "KeyError", "AssertionError",
                         "ZeroDivisionError", "AttributeError", "OverflowError", "MyOwnError", "Exception"])


@settings(max_examples=300, deadline=None)
@given(kind=names, message=st.text(max_size=80), where=st.one_of(st.just(""), st.text(min_size=1, max_size=40)))
def test_any_error_ends_in_a_sentence_that_teaches_and_keeps_the_line(kind, message, where):
    error = {"type": kind, "mro": [kind, "Exception", "BaseException", "object"], "message": message, "where": where}
    told = failure_of({"error": error}, "f(x)")
    lesson = lesson_of(error)
    assert lesson in LESSONS and told.endswith("\n" + lesson)
    assert (f"(raised at {voice.quote(where)})" in told) == bool(where)  # the job's text: quoted, on one line
    assert re.fullmatch(r"[A-Z].*\.", lesson, re.DOTALL), "a lesson is a sentence"


BODY = "\n\ndef sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):\n{}\n"


@pytest.mark.parametrize("body, kind, lesson", [
    ("    assert num_positions > 1\n    return _table(num_positions, d_model, base, device=device, dtype=dtype)",
     "AssertionError", LESSONS[-2]),
    ("    if d_model % 4:\n        raise ValueError\n    return _table(num_positions, d_model, base, device=device, "
     "dtype=dtype)", "ValueError", LESSONS[-3]),
], ids=["bare assert", "bare raise ValueError"])
def test_a_bare_exception_in_a_graded_call_says_the_line_and_what_it_means(grader, tmp_path, reference_text, body,
                                                                          kind, lesson):
    path = tmp_path / "bare.py"
    path.write_text(reference_text + "\n_table = sinusoidal_table\n" + BODY.format(body))
    failed = [test for test in by_test(grader.grade(path)).values()
              if test.id.startswith("sinusoidal") and test.score < test.max_score]
    assert failed, "the bare exception cost nothing"
    told = [test for test in failed if f"raised {kind}" in test.output]
    assert told, [test.output for test in failed]  # the tests that need these say so instead
    for test in told:
        assert re.search(r"\(raised at [^)]*line \d+: (assert|raise)", test.output), test.output
        if "should raise ValueError" in test.output:  # the test of invalid arguments: the wrong exception
            assert "Raise ValueError itself, with a message" in test.output, test.output
        else:
            assert lesson in test.output, test.output
