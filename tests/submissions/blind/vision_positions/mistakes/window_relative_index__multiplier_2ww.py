# the row offset multiplied by 2Ww instead of 2Ww - 1, so for any window of more than one row the index leaves gaps and runs past the last of the (2Wh - 1)(2Ww - 1) offsets
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h < 1 or window_w < 1:
        raise ValueError("window sides must be at least 1")
    n = torch.arange(window_h * window_w, device=device)
    r, c = n // window_w, n % window_w
    return (r[:, None] - r[None, :] + window_h - 1) * (2 * window_w) + (c[:, None] - c[None, :] + window_w - 1)


# differs: window_relative_index(2, 2).tolist() -> expected [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]], got [[5, 4, 1, 0], [6, 5, 2, 1], [9, 8, 5, 4], [10, 9, 6, 5]]
