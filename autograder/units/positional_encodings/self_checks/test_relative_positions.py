"""Self-checks for task relative_positions: clipped_relative_positions. Run: pytest -k relative_positions"""

import torch

from checks import assert_close
from positional_encodings import clipped_relative_positions


def test_relative_positions_match_the_worked_example():
    expected = torch.tensor([[1, 2, 2, 2], [0, 1, 2, 2], [0, 0, 1, 2]])
    causes = [(2 - expected, "the distance is i - j; it is j - i (key minus query)."),
              (expected - 1, "the + k shift is missing: values must lie in [0, 2k].")]
    assert_close(clipped_relative_positions(3, 4, 1), expected, what="clipped_relative_positions(3, 4, 1)",
                 causes=causes, hint="entry [i, j] is clip(j - i, -k, k) + k.")


def test_relative_positions_lie_between_0_and_2k():
    got = clipped_relative_positions(9, 12, 3)
    assert got.dtype == torch.int64, f"indices should be int64 (a LongTensor), got {got.dtype}"
    assert got.min() >= 0 and got.max() <= 6, f"values should lie in [0, 2k] = [0, 6], got [{got.min()}, {got.max()}]"


def test_relative_positions_depend_only_on_the_offset():
    got = clipped_relative_positions(8, 8, 2)
    assert torch.equal(got[1:, 1:], got[:-1, :-1]), "moving query and key by one position must not change the entry"


def test_relative_positions_with_more_queries_than_keys():
    expected = torch.tensor([[2, 3, 4], [1, 2, 3], [0, 1, 2], [0, 0, 1], [0, 0, 0]])
    assert_close(clipped_relative_positions(5, 3, 2), expected, what="clipped_relative_positions(5, 3, 2)",
                 hint="(Lq, Lk): query i along the rows, key j along the columns, entry clip(j - i, -k, k) + k.")
