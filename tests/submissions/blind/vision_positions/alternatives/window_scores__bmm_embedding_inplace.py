# window scores via torch.bmm on (B*nW*H, N, dh) views, scale applied with mul_ on the fresh product, bias from F.embedding(index, bias_table) moved to heads-first with movedim and added in place
import math

import torch
import torch.nn.functional as F


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    if q.shape[2] != window_h * window_w:
        raise ValueError("q.shape[2] must be window_h * window_w")
    if bias_table.ndim != 2 or tuple(bias_table.shape) != ((2 * window_h - 1) * (2 * window_w - 1), q.shape[1]):
        raise ValueError("bias_table shape does not match the window and the heads")
    b, h, n, d = q.shape
    factor = d ** -0.5 if scale is None else scale
    index = window_relative_index(window_h, window_w, device=bias_table.device)  # (N, N)
    bias = F.embedding(index, bias_table).movedim(-1, 0)  # (H, N, N)
    scores = torch.bmm(q.reshape(b * h, n, d), k.reshape(b * h, n, d).transpose(1, 2)).view(b, h, n, n)
    scores.mul_(factor)
    scores += bias.to(device=q.device, dtype=q.dtype)
    return scores
