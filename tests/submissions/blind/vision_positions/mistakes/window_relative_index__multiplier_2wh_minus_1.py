# the row offset multiplied by 2Wh - 1 instead of 2Ww - 1 (the table's rows and columns mixed up): wrong, with entries repeated or out of range, for every window of more than one row that is not square (Wh > 1, Wh != Ww)
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h < 1 or window_w < 1:
        raise ValueError("window sides must be at least 1")
    n = torch.arange(window_h * window_w, device=device)
    r, c = n // window_w, n % window_w
    return (r[:, None] - r[None, :] + window_h - 1) * (2 * window_h - 1) + (c[:, None] - c[None, :] + window_w - 1)


# differs: window_relative_index(2, 1).tolist() -> expected [[1, 0], [2, 1]], got [[3, 0], [6, 3]]
