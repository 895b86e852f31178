"""Every timed call has inputs of its own: lengths drawn by the grader for the call, and (ALiBi) slopes scaled
anew, so that a path that keeps what it made for an earlier call gains nothing, whatever it keys its cache on.

The real tier, on both units: a slow path that caches its result earns the timing points only if the calls repeat.
"""

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import units
from autograder.core.grade import Grader

SECOND = units.get("rotary_alibi")
FIRST = units.get("positional_encodings")

# A slow ALiBi bias (a pause stands for work) kept for the next call, keyed as a student might key it.
CACHED_ALIBI = """

import time as _time
_alibi_bias_once = alibi_bias
_kept = {{}}


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    key = {key}
    if key not in _kept:
        _time.sleep(0.3)
        _kept.clear()
        _kept[key] = _alibi_bias_once(length_q, length_k, slopes, causal=causal)
    return _kept[key]
"""
# The same for the first unit's T5 path: the buckets kept by the lengths.
CACHED_T5 = """

import time as _time
_t5_bias_once = t5_bias
_kept = {{}}


def t5_bias(length_q, length_k, bias_table, **options):
    key = {key}
    if key not in _kept:
        _time.sleep(0.3)
        _kept.clear()
        _kept[key] = _t5_bias_once(length_q, length_k, bias_table, **options)
    return _kept[key]
"""
ALIBI_KEYS = ["(length_q, length_k)", "(length_q, length_k, tuple(slopes.tolist()))",
              "(length_q, length_k, slopes.data_ptr())", "(length_q, length_k, causal)"]
T5_KEYS = ["(length_q, length_k)", "(length_q, length_k, bias_table.data_ptr())",
           "(length_q, length_k, float(bias_table.sum()))"]


@pytest.fixture(scope="module")
def graders():
    made = {unit.name: Grader(unit, sandbox="auto") for unit in (FIRST, SECOND)}
    yield made
    for grader in made.values():
        grader.close()


def _speed(grader, tmp_path, unit, text, test):
    path = tmp_path / f"{unit.module_name}.py"
    path.write_text(text)
    return next(result for result in grader.grade(path).tests if result.id == test)


def test_an_alibi_bias_cached_by_its_lengths_and_slopes_gets_no_timing_points(graders, tmp_path):
    """On the code before fresh inputs, the slopes were the same every call: this kept the whole tier."""
    speed = _speed(graders[SECOND.name], tmp_path, SECOND, SECOND.finished_reference
                   + CACHED_ALIBI.format(key="(length_q, length_k, tuple(slopes.tolist()))"), "alibi_speed")
    assert speed.score < speed.max_score, speed.output


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(["alibi", "t5"]), which=st.integers(0, 3))
def test_no_cache_key_earns_the_tier_for_a_slow_path(graders, tmp_path_factory, path, which):
    unit, template, keys, test = ((SECOND, CACHED_ALIBI, ALIBI_KEYS, "alibi_speed") if path == "alibi" else
                                  (FIRST, CACHED_T5, T5_KEYS, "t5_speed"))
    text = unit.finished_reference + template.format(key=keys[which % len(keys)])
    speed = _speed(graders[unit.name], tmp_path_factory.mktemp("cache"), unit, text, test)
    # either its calls missed the cache and were slow, or a hit returned another call's bias: never full points
    assert speed.score < speed.max_score, speed.output


def test_the_references_keep_the_tier_with_lengths_drawn_per_call(graders, tmp_path):
    for unit in (FIRST, SECOND):
        path = tmp_path / f"{unit.module_name}.py"
        path.write_text(unit.finished_reference)
        result = graders[unit.name].grade(path)
        assert result.score == result.max_score, [test.output for test in result.tests if not test.passed]
