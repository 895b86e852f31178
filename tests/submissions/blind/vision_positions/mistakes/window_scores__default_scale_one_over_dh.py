# the default scale is 1 / dh instead of 1 / sqrt(dh)
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
        scale = 1.0 / q.shape[-1]
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(device=q.device, dtype=q.dtype)[index].permute(2, 0, 1)
    return torch.matmul(q, k.transpose(-2, -1)) * scale + bias


# differs: window_scores(torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4), torch.zeros(3, 1), 1, 2)[0, 0].tolist() -> expected [[2.0, 2.0], [2.0, 2.0]], got [[1.0, 1.0], [1.0, 1.0]]
