# offsets not shifted to count from 0: (r1 - r2) * (2Ww - 1) + (c1 - c2), which is negative below the diagonal and 0 on it
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h < 1 or window_w < 1:
        raise ValueError("window sides must be at least 1")
    n = torch.arange(window_h * window_w, device=device)
    r, c = n // window_w, n % window_w
    return (r[:, None] - r[None, :]) * (2 * window_w - 1) + (c[:, None] - c[None, :])


# differs: window_relative_index(1, 2).tolist() -> expected [[1, 0], [2, 1]], got [[0, -1], [1, 0]]
