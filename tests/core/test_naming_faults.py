"""A fault while the grader names a mistake (autograder/core/grade.py, ``Grader._named_by_model``): the error model's
or form_slips' own exception changes no point and tells the student nothing; it is an incident for the instructor's
log (``Result.incidents``, batch.FAULT_LOG), where before it was swallowed.

A mistake nobody declared, which the error model names (the blind set's Shaw path that divides by the scale), is
graded once as it is, then again with the model, form_slips or both failing. Hypothesis draws which fails, the
exception's type and its message (quoting a made-up hidden case, escapes and newlines included).
"""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import form_slips, units
from conftest import correctness_grader

UNIT = units.get("positional_encodings")
TASK = "shaw"
BLIND = Path(__file__).parents[1] / "submissions" / "blind" / UNIT.name / "mistakes" / "shaw__divides_by_scale.py"
SECRET = "HIDDEN CASE q="  # in every drawn message: no row may show it


class Failing:
    """An error model whose ``explain`` raises ``error``."""

    def __init__(self, error):
        self.error = error

    def explain(self, *args, **kwargs):
        raise self.error


@pytest.fixture(scope="module")
def grader():
    yield from correctness_grader(UNIT)


@pytest.fixture(scope="module")
def graded(grader, reference_text, tmp_path_factory):
    """(the submission's path, its result with the naming working)."""
    path = tmp_path_factory.mktemp("naming") / f"{UNIT.module_name}.py"
    path.write_text(reference_text + "\n\n" + BLIND.read_text(encoding="utf-8"), encoding="utf-8")
    return path, grader.grade(path)


def _named(result):
    return [test.id for test in result.tests if test.task == TASK and "Likely mistake" in test.output]


def test_the_model_names_the_mistake_when_it_works(graded):
    _, result = graded
    assert _named(result) and not result.incidents and not result.grader_fault


ERRORS = st.sampled_from([RuntimeError, ValueError, KeyError, ZeroDivisionError, AssertionError, MemoryError,
                          IndexError, TypeError])
MESSAGES = st.text(alphabet=st.characters(codec="utf-8"), max_size=40).map(lambda text: f"{SECRET}{text}")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(failing=st.sampled_from(["model", "slips", "both"]), kind=ERRORS, message=MESSAGES)
def test_a_fault_of_the_naming_changes_no_point_and_reaches_the_instructor_s_log_only(grader, graded, monkeypatch,
                                                                                       failing, kind, message):
    path, named = graded
    with monkeypatch.context() as patched:
        if failing in ("model", "both"):
            patched.setattr(grader, "model", Failing(kind(message)))
        if failing in ("slips", "both"):
            def broken(*args, **kwargs):
                raise kind(message)
            patched.setattr(form_slips, "explain", broken)
        result = grader.grade(path)
    assert [(test.id, test.score) for test in result.tests] == [(test.id, test.score) for test in named.tests]
    assert not result.grader_fault
    # form_slips is asked only where the model gives no name: a working model leaves a failing form_slips unasked.
    expected = {"model": ["error model failed"], "slips": [], "both": ["error model failed", "form_slips failed"]}
    records = [record for _, record in result.incidents]
    assert len(records) == len(expected[failing]), records
    for record, words in zip(records, expected[failing]):
        assert words in record and kind.__name__ in record and SECRET in record, record
    assert _named(result) == (_named(named) if failing == "slips" else []), [test.output for test in result.tests]
    for test in result.tests:
        assert SECRET not in test.output and "Traceback" not in test.output, test.output
        assert not any(incident in test.output for incident, _ in result.incidents), test.output
