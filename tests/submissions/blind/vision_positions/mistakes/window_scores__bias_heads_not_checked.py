# only the bias table's row count is checked, not its heads: a table with one column is broadcast over all H heads (and a (T, H') table with another H' fails with a RuntimeError, not ValueError)
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    n = window_h * window_w
    if q.shape[-2] != n:
        raise ValueError("q must have window_h * window_w patches")
    if bias_table.dim() != 2 or bias_table.shape[0] != (2 * window_h - 1) * (2 * window_w - 1):
        raise ValueError("bias_table must have (2Wh - 1)(2Ww - 1) rows")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(device=q.device, dtype=q.dtype)[index].permute(2, 0, 1)
    return torch.matmul(q, k.transpose(-2, -1)) * scale + bias


# differs: window_scores(torch.zeros(1, 2, 2, 1), torch.zeros(1, 2, 2, 1), torch.zeros(3, 1), 1, 2).shape -> expected ValueError (bias_table shape), got torch.Size([1, 2, 2, 2])
