"""Diagnosis: a known mistake is named only when it explains the whole difference (issue 12).

Never when the only difference is the dtype (the values are right), and never on a case where the known
mistake's output equals the right one (on a table of one sin/cos pair, the halves layout is the interleaved
one): the submissions below are the reference with only the dtype of one function's output changed.
"""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core.cases import tensor_check

WRONG_DTYPE = {
    # function: (the task's tests, a wrapper that returns the reference's values in another dtype)
    "sinusoidal_table": ("sinusoidal", "double()"),
    "clipped_relative_positions": ("relative_positions", "to(torch.int32)"),
    "t5_relative_position_bucket": ("t5_bucket", "to(torch.int32)"),
}


def _wrapped(reference_text, function, cast):
    return (reference_text + f"\n\n_right_{function} = {function}\n\n\n"
            f"def {function}(*args, **kwargs):\n    return _right_{function}(*args, **kwargs).{cast}\n")


@pytest.mark.parametrize("function", list(WRONG_DTYPE))
def test_right_values_in_another_dtype_are_told_so_and_no_declared_mistake_is_named(grader, tmp_path, reference_text,
                                                                             function):
    task, cast = WRONG_DTYPE[function]
    path = tmp_path / f"{function}_dtype.py"
    path.write_text(_wrapped(reference_text, function, cast))
    result = grader.grade(path)
    failed = [test for test in result.tests if test.task == task and not test.passed]
    assert failed, "a wrong dtype must cost the dtype's points"
    for test in failed:
        # No declared mistake is named; the error model may say the cast it sees (core/mutants.py), nothing else.
        for line in (line for line in test.output.splitlines() if line.startswith("Likely mistake")):
            assert "your output equals the reference's with the result cast to" in line, test.output
        if "dtype" in test.output:
            assert "only the dtype differs" in test.output, test.output
    assert any("only the dtype differs" in test.output for test in failed)


def test_right_values_in_another_shape_are_told_so_and_no_mistake_is_named(grader, tmp_path, reference_text):
    path = tmp_path / "bias_unsqueezed.py"
    path.write_text(_wrapped(reference_text, "t5_bias", "unsqueeze(0)"))
    result = grader.grade(path)
    failed = [test for test in result.tests if test.task == "t5_bias" and not test.passed]
    assert failed
    for test in failed:
        assert "Likely mistake" not in test.output and "only the shape differs" in test.output, test.output


# A right result of a coarser dtype than asked for: its values are right only to its own precision, so they are
# compared at that precision, and the feedback says the dtype is what is wrong, not where the values go wrong.
COARSER = {torch.float64: (torch.float32, torch.float16, torch.bfloat16), torch.float32: (torch.float16, torch.bfloat16)}


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([(asked, got) for asked, coarser in COARSER.items() for got in coarser]),
       st.lists(st.floats(-3000, 3000, width=32).filter(lambda value: value == 0 or abs(value) >= 1e-4),  # no underflow
                min_size=1, max_size=40), st.booleans())
def test_right_values_of_a_coarser_dtype_are_told_to_be_right_to_its_precision(dtypes, values, negate):
    asked, got_dtype = dtypes
    expected = torch.tensor(values, dtype=torch.float64).to(asked)
    got = expected.to(got_dtype)  # the right values, rounded once to the coarser dtype
    check = tensor_check("f(x)", expected, atol=0.0, rtol=0.0)  # the coarser dtype's own precision alone
    said = check({"value": {"tensor": got}}).message
    assert f"right to {str(got_dtype).replace('torch.', '')}'s precision: only the dtype differs" in said, said
    assert "How it goes wrong" not in said, said
    wrong = (-got if negate else got * 2).to(got_dtype)  # and a wrong result of that dtype is not called right
    if not torch.allclose(wrong.to(asked), expected, atol=4 * torch.finfo(got_dtype).eps * float(expected.abs().max()),
                          rtol=4 * torch.finfo(got_dtype).eps):
        assert "only the dtype differs" not in check({"value": {"tensor": wrong}}).message


def test_a_mistake_shared_by_every_failing_case_is_named_even_where_another_explains_one_case_too(grader, tmp_path,
                                                                                                    reference_text):
    """On a case whose queries sit at position 0 a rotation of both q and k the wrong way and of k alone the wrong
    way give the same scores: the test names the mistake that its other failing cases show (k alone)."""
    from autograder.core import units
    from autograder.course.build import strip_markers
    from autograder.core.grade import Grader

    unit = units.get("rotary_alibi")
    path = tmp_path / "keys_backwards.py"
    path.write_text(strip_markers(unit.reference_path.read_text()) + '''

def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    positions_q = torch.arange(q.shape[-2]) if positions_q is None else positions_q
    positions_k = torch.arange(k.shape[-2]) if positions_k is None else positions_k
    turned_q = apply_rotary(q, positions_q, base, interleaved=interleaved)
    turned_k = apply_rotary(k, -positions_k, base, interleaved=interleaved)
    return (turned_q * scale) @ turned_k.transpose(-2, -1)
''')
    unit_grader = Grader(unit, sandbox="auto", timing_mode="give")
    try:
        result = unit_grader.grade(path)
    finally:
        unit_grader.close()
    values = next(test for test in result.tests if test.id == "rope_scores_values")
    assert not values.passed and "the keys turn the other way" in values.output, values.output


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4).filter(lambda value: value == 0 or abs(value) >= 1e-3), min_size=1, max_size=40),
       st.floats(1.01, 3.0))
def test_a_float64_result_right_to_float32_precision_only_is_told_so(values, factor):
    """float64 in, float64 out, but a float32 step on the way: the feedback says so, not where values go wrong."""
    expected = torch.tensor(values, dtype=torch.float64)
    check = tensor_check("f(x)", expected, atol=1e-12, rtol=1e-12)
    through_float32 = expected.float().double()
    verdict = check({"value": {"tensor": through_float32}})
    if not verdict.passed:  # (values float32 holds to within the check's tolerance pass)
        assert "right to float32's precision only" in verdict.message, verdict.message
        assert "How it goes wrong" not in verdict.message, verdict.message
    scaled = expected * factor  # really wrong values are not called right
    if not torch.allclose(scaled, expected, rtol=1e-6, atol=1e-6 * float(expected.abs().max())):
        assert "float32's precision only" not in check({"value": {"tensor": scaled}}).message
