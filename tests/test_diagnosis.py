"""Diagnosis: a known mistake is named only when it explains the whole difference (issue 12).

Never when the only difference is the dtype (the values are right), and never on a case where the known
mistake's output equals the right one (on a table of one sin/cos pair, the halves layout is the interleaved
one): the submissions below are the reference with only the dtype of one function's output changed.
"""

import pytest

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
def test_right_values_in_another_dtype_are_told_so_and_no_mistake_is_named(grader, tmp_path, reference_text,
                                                                             function):
    task, cast = WRONG_DTYPE[function]
    path = tmp_path / f"{function}_dtype.py"
    path.write_text(_wrapped(reference_text, function, cast))
    result = grader.grade(path)
    failed = [test for test in result.tests if test.task == task and not test.passed]
    assert failed, "a wrong dtype must cost the dtype's points"
    for test in failed:
        assert "Likely mistake" not in test.output, test.output
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
