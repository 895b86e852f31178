# window scores with einsum("whnd,whmd->whnm") times the scale, plus bias_table[index] permuted to (H, N, N) and cast to q's dtype, broadcast over windows
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    num_patches = window_h * window_w
    if q.shape[-2] != num_patches:
        raise ValueError(f"q has {q.shape[-2]} patches, a {window_h} x {window_w} window has {num_patches}")
    heads = q.shape[-3]
    expected = ((2 * window_h - 1) * (2 * window_w - 1), heads)
    if tuple(bias_table.shape) != expected:
        raise ValueError(f"bias_table must be {expected}, got {tuple(bias_table.shape)}")
    if scale is None:
        scale = q.shape[-1] ** -0.5
    index = window_relative_index(window_h, window_w, device=bias_table.device)
    bias = bias_table[index.reshape(-1)].reshape(num_patches, num_patches, heads).permute(2, 0, 1)  # (H, N, N)
    scores = torch.einsum("whnd,whmd->whnm", q, k) * scale
    return scores + bias.to(device=q.device, dtype=q.dtype)
