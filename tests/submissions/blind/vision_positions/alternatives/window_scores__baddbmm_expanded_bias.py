# window scores in one baddbmm pass: the (H, N, N) bias expanded over windows into the output buffer, then out.baddbmm_(q, k^T, alpha=scale) with q, k flattened to (B*nW*H, N, dh)
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    nw, heads, n, dh = q.shape
    if n != window_h * window_w:
        raise ValueError("q's patches must be window_h * window_w")
    if bias_table.dim() != 2 or bias_table.shape[0] != (2 * window_h - 1) * (2 * window_w - 1) \
            or bias_table.shape[1] != heads:
        raise ValueError("bias_table must be ((2Wh - 1)(2Ww - 1), H)")
    alpha = 1.0 / math.sqrt(dh) if scale is None else scale
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(device=q.device, dtype=q.dtype).t()[:, index]  # (H, N, N)
    out = bias.unsqueeze(0).expand(nw, heads, n, n).reshape(nw * heads, n, n).clone()
    out.baddbmm_(q.reshape(nw * heads, n, dh), k.reshape(nw * heads, n, dh).transpose(1, 2), alpha=alpha)
    return out.view(nw, heads, n, n)
