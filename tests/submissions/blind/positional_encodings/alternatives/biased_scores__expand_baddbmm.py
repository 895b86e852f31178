"""biased_scores: bias expanded to (B, H, Lq, Lk) and flattened to (B*H, Lq, Lk) as the input of torch.baddbmm, alpha=scale on q @ k^T only."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    B, H, Lq, dh = q.shape
    Lk = k.shape[-2]
    base = bias.expand(B, H, Lq, Lk).reshape(B * H, Lq, Lk).to(q.dtype)
    out = torch.baddbmm(base, q.reshape(B * H, Lq, dh), k.reshape(B * H, Lk, dh).transpose(1, 2), alpha=scale)
    return out.view(B, H, Lq, Lk)
