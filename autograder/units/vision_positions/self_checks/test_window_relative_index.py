"""Self-checks for task window_relative_index: window_relative_index. Run: pytest -k window_relative_index"""

import pytest
import torch

from checks import assert_close, assert_raises
from vision_positions import window_relative_index

AXES = ("query", "key")
FORMULA = ("index[n1, n2] = (r1 - r2 + Wh - 1) * (2Ww - 1) + (c1 - c2 + Ww - 1), with patch n at row n // Ww and "
           "column n % Ww: the query's patch minus the key's, shifted to count from 0, rows of offsets before columns.")


def _expected(window_h, window_w):
    """The index written out, pair of patches by pair of patches."""
    places = [(r, c) for r in range(window_h) for c in range(window_w)]  # patch n = r * Ww + c
    return torch.tensor([[(r1 - r2 + window_h - 1) * (2 * window_w - 1) + (c1 - c2 + window_w - 1)
                          for (r2, c2) in places] for (r1, c1) in places], dtype=torch.int64)


def _index(window_h, window_w):
    got = window_relative_index(window_h, window_w)
    n = window_h * window_w
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (n, n) and got.dtype == torch.int64, \
        (f"expected an int64 tensor of shape (N, N) = ({n}, {n}), got {getattr(got, 'dtype', type(got).__name__)} "
         f"{tuple(getattr(got, 'shape', ()))}")
    return got


def test_window_relative_index_is_n_by_n_int64():
    _index(2, 3)


def test_window_relative_index_matches_the_worked_example():
    assert_close(window_relative_index(1, 2), torch.tensor([[1, 0], [2, 1]]), what="window_relative_index(1, 2)",
                 axes=AXES, hint="patch 0 to itself: offset (0, 0) -> 1; to patch 1: (0, -1) -> 0; patch 1 to "
                                 "patch 0: (0, +1) -> 2.")


@pytest.mark.parametrize("window_h, window_w", [(3, 3), (2, 4), (4, 3)], ids=["square", "wide", "tall"])
def test_window_relative_index_follows_swins_formula(window_h, window_w):
    assert_close(window_relative_index(window_h, window_w), _expected(window_h, window_w),
                 what=f"window_relative_index({window_h}, {window_w})", axes=AXES, hint=FORMULA)


@pytest.mark.parametrize("window_h, window_w", [(1, 4), (3, 1), (1, 1)], ids=["one row", "one column", "one patch"])
def test_window_relative_index_handles_a_window_of_one_row_or_column(window_h, window_w):
    assert_close(window_relative_index(window_h, window_w), _expected(window_h, window_w),
                 what=f"window_relative_index({window_h}, {window_w})", axes=AXES,
                 hint="a side of 1 is a window like any other ([[0]] for one patch, of shape (1, 1)): look for a "
                      "squeeze(), or a range that comes out empty. " + FORMULA)


def test_window_relative_index_puts_a_patch_and_itself_at_the_middle_of_the_table():
    got = _index(3, 4)
    middle = (3 - 1) * (2 * 4 - 1) + 4 - 1  # offset (0, 0): row Wh - 1, column Ww - 1 of the table
    assert torch.equal(got.diagonal(), torch.full((12,), middle)), \
        (f"the diagonal (a patch and itself, offset (0, 0)) should be the table's middle entry, "
         f"(Wh - 1)(2Ww - 1) + Ww - 1 = {middle}, got {got.diagonal().tolist()}: each offset is shifted by W - 1, so "
         "that -(W - 1) .. W - 1 counts from 0")


def test_window_relative_index_uses_every_entry_of_the_table_once_per_offset():
    got = _index(3, 4)
    offsets = (2 * 3 - 1) * (2 * 4 - 1)
    assert int(got.min()) >= 0 and int(got.max()) < offsets, \
        (f"the index runs from {int(got.min())} to {int(got.max())}: every entry must lie in 0 .. "
         f"(2Wh - 1)(2Ww - 1) - 1 = {offsets - 1}, the rows of the bias table")
    assert sorted(got.unique().tolist()) == list(range(offsets)), \
        (f"a 3 x 4 window has (2Wh - 1)(2Ww - 1) = {offsets} offsets, each its own entry of the table, and its index "
         f"uses {got.unique().numel()} distinct entries: two offsets share an entry (or one is missing), so the "
         "rows and columns of the offsets are not combined one to one")


def test_window_relative_index_gives_the_same_entry_to_the_same_offset():
    # Patches (0, 0) -> (1, 2) and (1, 1) -> (2, 3) are one offset apart, in a 3 x 4 window.
    got = _index(3, 4)
    assert int(got[0 * 4 + 0, 1 * 4 + 2]) == int(got[1 * 4 + 1, 2 * 4 + 3]), \
        ("query (0, 0) with key (1, 2) and query (1, 1) with key (2, 3) have the same offset (-1, -2), and so one "
         f"entry, got {int(got[0, 6])} and {int(got[5, 11])}: patch n is at row n // Ww and column n % Ww")
    swapped = got.T + got  # index[n1, n2] + index[n2, n1]: the offset and its opposite
    middle = (3 - 1) * (2 * 4 - 1) + 4 - 1
    assert torch.equal(swapped, torch.full_like(swapped, 2 * middle)), \
        ("index[n1, n2] + index[n2, n1] should be twice the middle entry: an offset and its opposite lie on either "
         "side of the middle of the table when each offset is shifted by W - 1 and the row's multiplied by 2Ww - 1, "
         f"got {swapped.unique().tolist()}")


@pytest.mark.parametrize("device", ["cpu", torch.device("meta")], ids=["'cpu'", "meta"])
def test_window_relative_index_is_made_on_the_device_asked_for(device):
    got = window_relative_index(2, 3, device=device)
    assert isinstance(got, torch.Tensor) and got.device.type == torch.device(device).type \
        and tuple(got.shape) == (6, 6) and got.dtype == torch.int64, \
        (f"expected a (6, 6) int64 index on {device}, got {getattr(got, 'dtype', type(got).__name__)} "
         f"{tuple(getattr(got, 'shape', ()))} on {getattr(got, 'device', None)}: make every tensor with device=device")


@pytest.mark.parametrize("window_h, window_w", [(0, 3), (4, 0), (-1, 2)])
def test_window_relative_index_rejects_a_side_below_1(window_h, window_w):
    assert_raises(ValueError, window_relative_index, window_h, window_w,
                  hint="a window needs at least one row and one column")
