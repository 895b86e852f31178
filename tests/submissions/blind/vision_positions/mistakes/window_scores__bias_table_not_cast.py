# the bias table is added without casting to q's dtype, so a float32 table with bfloat16 or float16 q gives float32 scores (and float64 with a float64 table and float32 q)
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
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(q.device)[index].permute(2, 0, 1)
    return torch.matmul(q, k.transpose(-2, -1)) * scale + bias


# differs: window_scores(torch.ones(1, 1, 2, 1, dtype=torch.bfloat16), torch.ones(1, 1, 2, 1, dtype=torch.bfloat16), torch.zeros(3, 1), 1, 2).dtype -> expected torch.bfloat16, got torch.float32
