# the default is taken with 'scale or 1 / sqrt(dh)', so an explicit scale=0.0 is replaced by 1 / sqrt(dh) instead of giving the bias alone
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    n = window_h * window_w
    heads = q.shape[1]
    if q.shape[-2] != n:
        raise ValueError("q must have window_h * window_w patches")
    if tuple(bias_table.shape) != ((2 * window_h - 1) * (2 * window_w - 1), heads):
        raise ValueError("bias_table must be ((2Wh - 1)(2Ww - 1), H)")
    scale = scale or 1.0 / math.sqrt(q.shape[-1])
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(device=q.device, dtype=q.dtype)[index].permute(2, 0, 1)
    return torch.matmul(q, k.transpose(-2, -1)) * scale + bias


# differs: window_scores(torch.tensor([[[[1.], [2.]]]]), torch.tensor([[[[1.], [1.]]]]), torch.tensor([[0.0], [0.5], [1.0]]), 1, 2, scale=0.0)[0, 0].tolist() -> expected [[0.5, 0.0], [1.0, 0.5]], got [[1.5, 1.0], [3.0, 2.5]]
