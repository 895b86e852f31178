# relative index from the patch numbers alone: r = n // Ww, c = n % Ww, then (r1 - r2) * (2Ww - 1) + (c1 - c2) by broadcasting, plus the middle entry (Wh - 1)(2Ww - 1) + Ww - 1
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if min(window_h, window_w) < 1:
        raise ValueError("window_h and window_w must be >= 1")
    n = torch.arange(window_h * window_w, dtype=torch.int64, device=device)
    r, c = n.div(window_w, rounding_mode="trunc"), n.remainder(window_w)
    middle = (window_h - 1) * (2 * window_w - 1) + window_w - 1
    return (r.unsqueeze(1) - r.unsqueeze(0)) * (2 * window_w - 1) + (c.unsqueeze(1) - c.unsqueeze(0)) + middle
