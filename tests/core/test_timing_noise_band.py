"""No timing verdict the machine's noise can flip (issue 38, point 2), decided on injected timings.

A median ratio within a limit's noise band (limit / TIMING_NOISE to limit * TIMING_NOISE) is measured again with
TIMING_NEAR_PAIRS more pairs; where it is still there, the student gets the better verdict, and the feedback says
so. Everything here runs ``timing.timed_ratios`` and ``timing.band_verdict`` on timings handed to them: no clock is read.
"""

import itertools
import random

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core.timing import band_verdict, fraction_for, near_limit, timed_ratios
from autograder.sandbox import limits

NOISE, EXTRA, MOST = limits.TIMING_NOISE, limits.TIMING_NEAR_PAIRS, limits.TIMING_REPEATS
LIMITS = [limit for limit, _ in limits.TIMING_BANDS]


def _in_a_band(ratio):
    return any(limit / NOISE < ratio <= limit * NOISE for limit in LIMITS)


@given(st.floats(min_value=0.01, max_value=1000, allow_nan=False))
def test_the_verdict_is_the_band_s_outside_every_noise_band_and_the_better_one_inside(ratio):
    fraction, words = band_verdict(ratio)
    below = max((limit for limit in LIMITS if limit < ratio <= limit * NOISE), default=None)
    if below is None:  # not above a limit within its noise: the band of the ratio, nothing said
        assert (fraction, words) == (fraction_for(ratio), "")
    else:  # above a limit, within its noise: the limit's own side, said with both verdicts
        assert fraction == fraction_for(below) > fraction_for(ratio)
        assert f"{below:g}x limit" in words and "better verdict" in words
    assert near_limit(ratio) == next((limit for limit in LIMITS if limit / NOISE < ratio <= limit * NOISE), None)


@given(st.floats(min_value=0.01, max_value=1000), st.floats(min_value=0.01, max_value=1000))
def test_a_slower_path_never_gets_a_better_verdict(one, two):
    slow, fast = max(one, two), min(one, two)
    assert band_verdict(slow)[0] <= band_verdict(fast)[0]
    assert band_verdict(slow)[0] >= fraction_for(slow)  # the noise band only ever gives, never takes


def _pairs(ratios):
    """A timed_pair that hands out ``ratios`` (the reference's call 2 ms) and records how many pairs it gave."""
    given_out = []
    source = iter(ratios)

    def timed_pair(number):
        assert number == len(given_out)  # pairs are numbered in order, from 0
        given_out.append(number)
        return next(source) * 0.002, 0.002

    return timed_pair, given_out


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.3, max_value=80), st.floats(min_value=0.0, max_value=0.3), st.integers(0, 2**32))
def test_a_median_in_a_noise_band_gets_more_pairs_and_one_outside_does_not(true_ratio, spread, seed):
    rng = random.Random(seed)
    drawn = [true_ratio * (1 + rng.uniform(-spread, spread)) for _ in range(MOST + EXTRA)]
    timed_pair, given_out = _pairs(drawn)
    ratios = timed_ratios(timed_pair)
    assert ratios == pytest.approx(drawn[:len(ratios)])  # each pair's ratio, in order, none dropped or made up
    # The first round, as it always was: until every ratio lies on one side of every limit (after the minimum
    # number of pairs), or the median is far past the last band (after three), or the most pairs.
    first = next((count for count in range(1, MOST + 1)
                  if (count >= limits.TIMING_MIN_PAIRS
                      and all(min(drawn[:count]) > limit or max(drawn[:count]) <= limit for limit in LIMITS))
                  or (count >= 3 and _median(drawn[:count]) > 3 * LIMITS[-1])), MOST)
    if _in_a_band(_median(drawn[:first])):
        assert len(ratios) == first + EXTRA
    else:
        assert len(ratios) == first


def _median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def test_a_path_that_sits_at_the_full_points_limit_gets_full_points_every_time():
    """The materialised Shaw path read 3.80x and 3.99x on one machine and 4.7x on another: a path whose pairs
    straddle the 4x limit is measured again, and what stays within the noise of the limit gets full points, the
    same verdict whichever side of 4x the median falls."""
    fractions = set()
    for seed in range(200):
        rng = random.Random(seed)
        timed_pair, _ = _pairs([4.0 * rng.uniform(0.85, 1.2) for _ in range(MOST + EXTRA)])
        ratios = timed_ratios(timed_pair)
        assert len(ratios) > MOST  # always measured again: the median is near 4x
        fractions.add(band_verdict(_median(ratios), len(ratios))[0])
    assert fractions == {1.0}


def test_a_path_well_past_a_limit_keeps_its_band_and_is_not_measured_again():
    for true_ratio, fraction in ((1.1, 1.0), (9.0, 0.5), (60.0, 0.0)):
        timed_pair, _ = _pairs(itertools.repeat(true_ratio))
        ratios = timed_ratios(timed_pair)
        assert len(ratios) == limits.TIMING_MIN_PAIRS  # every ratio on one side of every limit: settled at once
        assert band_verdict(_median(ratios), len(ratios)) == (fraction, "")
