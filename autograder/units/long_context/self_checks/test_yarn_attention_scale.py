"""Self-checks for task yarn_attention_scale: yarn_attention_scale. Run: pytest -k yarn_attention_scale"""

import math

import pytest

from long_context import yarn_attention_scale


def test_yarn_attention_scale_is_a_python_float():
    got = yarn_attention_scale(4.0)
    assert isinstance(got, float), f"expected a Python float (the factor on the scores), got {type(got).__name__}"


@pytest.mark.parametrize("factor, mscale, expected", [(4.0, 1.0, 1.2964770), (16.0, 1.0, 1.6313902), (1.0, 1.0, 1.0),
                                                      (40.0, 0.707, (0.0707 * math.log(40.0) + 1) ** 2),
                                                      # any finite mscale, zero and below included
                                                      (4.0, 0.0, 1.0), (4.0, -1.0, (1 - 0.1 * math.log(4.0)) ** 2)])
def test_yarn_attention_scale_matches_the_worked_examples(factor, mscale, expected):
    got = yarn_attention_scale(factor, mscale=mscale)
    assert abs(got - expected) <= 1e-6 * expected, (
        f"yarn_attention_scale({factor}, mscale={mscale}): expected {expected:.7f}, got {got!r}. The scale on the "
        "scores is 1/t = (0.1 * mscale * ln(factor) + 1) ** 2: the square of the paper's sqrt(1/t).")


@pytest.mark.parametrize("factor, mscale", [(0.5, 1.0), (math.inf, 1.0), (math.nan, 1.0), (4.0, math.nan),
                                            (4.0, math.inf), (4.0, -math.inf)])
def test_yarn_attention_scale_rejects_what_the_docstring_calls_invalid(factor, mscale):
    with pytest.raises(ValueError):
        yarn_attention_scale(factor, mscale=mscale)
