# relative index by lookup: a (2Wh - 1, 2Ww - 1) table of its own row-major numbers, indexed with the shifted row and column offsets of every (query, key) pair
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h <= 0 or window_w <= 0:
        raise ValueError("each side of the window must be at least 1")
    table = torch.arange((2 * window_h - 1) * (2 * window_w - 1), device=device).view(2 * window_h - 1, 2 * window_w - 1)
    rows = torch.arange(window_h, device=device).repeat_interleave(window_w)  # (N,)
    cols = torch.arange(window_w, device=device).repeat(window_h)  # (N,)
    d_row = rows[:, None] - rows[None, :] + (window_h - 1)  # (N, N) in 0 .. 2Wh - 2
    d_col = cols[:, None] - cols[None, :] + (window_w - 1)  # (N, N) in 0 .. 2Ww - 2
    return table[d_row, d_col]
