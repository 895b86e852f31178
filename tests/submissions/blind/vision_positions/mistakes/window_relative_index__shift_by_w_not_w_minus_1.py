# offsets shifted by Wh and Ww instead of Wh - 1 and Ww - 1 (off by one): the diagonal is not the middle entry and the largest entries run past the (2Wh - 1)(2Ww - 1) table
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h < 1 or window_w < 1:
        raise ValueError("window sides must be at least 1")
    n = torch.arange(window_h * window_w, device=device)
    r, c = n // window_w, n % window_w
    return (r[:, None] - r[None, :] + window_h) * (2 * window_w - 1) + (c[:, None] - c[None, :] + window_w)


# differs: window_relative_index(1, 2).tolist() -> expected [[1, 0], [2, 1]], got [[5, 4], [6, 5]]
