"""Self-checks for task t5_bucket: t5_relative_position_bucket. Run: pytest -k t5_bucket"""

import pytest
import torch

from checks import assert_close
from positional_encodings import t5_relative_position_bucket


def test_t5_bucket_matches_the_worked_example():
    relative = torch.tensor([-200, -20, -3, 0, 3, 20])
    expected = torch.tensor([15, 10, 3, 0, 19, 26])
    flipped = torch.tensor([31, 26, 19, 0, 3, 10])
    assert_close(t5_relative_position_bucket(relative), expected,
                 what="t5_relative_position_bucket([-200, -20, -3, 0, 3, 20])",
                 causes=[(flipped, "the direction is flipped: keys after the query (relative_position > 0) use "
                                   "the upper half.")],
                 hint="the worked example of the lesson: 16 buckets a direction, 8 of them exact.")


def test_t5_bucket_causal_sends_every_future_key_to_bucket_0():
    got = t5_relative_position_bucket(torch.arange(1, 50), bidirectional=False)
    assert_close(got, torch.zeros(49, dtype=torch.int64), what="causal buckets of relative positions 1..49",
                 hint="bidirectional=False: distance = max(-relative_position, 0).")


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_bucket_is_monotone_in_distance(bidirectional):
    distance = torch.arange(0, 1000)
    for sign in ([1, -1] if bidirectional else [-1]):
        buckets = t5_relative_position_bucket(sign * distance, bidirectional=bidirectional)
        steps = buckets[1:] - buckets[:-1]
        assert (steps >= 0).all(), f"buckets must not decrease as |distance| grows (sign {sign}); they do at {int((steps < 0).nonzero()[0]) + 1}"


def test_t5_bucket_far_distances_share_the_last_bucket():
    got = t5_relative_position_bucket(torch.tensor([-128, -5000, 128, 5000]))
    assert_close(got, torch.tensor([15, 15, 31, 31]), what="buckets of far distances",
                 hint="every distance from max_distance on takes the last bucket of its half, n - 1 (n = buckets "
                      "per direction).")


def test_t5_bucket_rejects_settings_without_exact_buckets():
    with pytest.raises(ValueError):
        t5_relative_position_bucket(torch.arange(-5, 5), num_buckets=2)  # 1 per direction: max_exact = 0
    with pytest.raises(ValueError):
        t5_relative_position_bucket(torch.arange(-5, 5), max_distance=8)  # max_distance <= max_exact = 8


RELATIVE = [-50, -30, -13, -9, -4, -3, 0, 2, 3, 7, 11, 15, 39, 40]


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance, expected", [
    (True, 12, 40, [5, 5, 4, 4, 3, 3, 0, 8, 9, 9, 10, 10, 11, 11]),  # n = 6 a direction, 3 exact
    (False, 20, 70, [18, 15, 11, 9, 4, 3, 0, 0, 0, 0, 0, 0, 0, 0]),  # n = 20, 10 exact
])
def test_t5_bucket_follows_its_settings(bidirectional, num_buckets, max_distance, expected):
    got = t5_relative_position_bucket(torch.tensor(RELATIVE), bidirectional, num_buckets, max_distance)
    assert_close(got, torch.tensor(expected), what=f"t5_relative_position_bucket({RELATIVE}, {bidirectional}, "
                 f"{num_buckets}, {max_distance})",
                 hint="n = num_buckets (halved when bidirectional), max_exact = n // 2, then max_exact + "
                      "int(log(d / max_exact) / log(max_distance / max_exact) * (n - max_exact)) in float32 "
                      "(a true division d / max_exact, one log base), clamped to n - 1.")


def test_t5_bucket_gives_int64_buckets_for_int32_positions():
    got = t5_relative_position_bucket(torch.tensor([-20, 0, 3, 300], dtype=torch.int32))
    assert got.dtype == torch.int64, f"the buckets are int64 whatever the input's integer dtype, got {got.dtype}"
    assert_close(got, torch.tensor([10, 0, 19, 31]), what="t5_relative_position_bucket(int32 [-20, 0, 3, 300])")
