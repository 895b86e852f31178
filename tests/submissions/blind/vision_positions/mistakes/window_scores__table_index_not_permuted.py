# bias_table[index] of shape (N, N, H) reshaped to (H, N, N) with .reshape instead of permute(2, 0, 1), so heads and offsets are mixed up whenever H > 1
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
    bias = bias_table.to(device=q.device, dtype=q.dtype)[index].reshape(heads, n, n)
    return torch.matmul(q, k.transpose(-2, -1)) * scale + bias


# differs: window_scores(torch.zeros(1, 2, 2, 1), torch.zeros(1, 2, 2, 1), torch.tensor([[0., 10.], [1., 11.], [2., 12.]]), 1, 2)[0].tolist() -> expected [[[1.0, 0.0], [2.0, 1.0]], [[11.0, 10.0], [12.0, 11.0]]], got [[[1.0, 11.0], [0.0, 10.0]], [[2.0, 12.0], [1.0, 11.0]]]
