# q is scaled in place (q *= scale) before the product, so the caller's q is changed
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    n = window_h * window_w
    heads = q.shape[1]
    if q.shape[-2] != n:
        raise ValueError("q must have window_h * window_w patches")
    if tuple(bias_table.shape) != ((2 * window_h - 1) * (2 * window_w - 1), heads):
        raise ValueError("bias_table must be ((2Wh - 1)(2Ww - 1), H)")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    q *= scale
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(device=q.device, dtype=q.dtype)[index].permute(2, 0, 1)
    return torch.matmul(q, k.transpose(-2, -1)) + bias


# differs: (lambda q: (window_scores(q, torch.ones(1, 1, 2, 4), torch.zeros(3, 1), 1, 2), q[0, 0, 0].tolist())[1])(torch.ones(1, 1, 2, 4)) -> expected [1.0, 1.0, 1.0, 1.0], got [0.5, 0.5, 0.5, 0.5]
