"""biased_scores: flattens the bias with reshape(-1, Lq, Lk) without expanding it to (B, H, Lq, Lk) first; as baddbmm input it breaks for (1, H, Lq, Lk) biases once B > 1 and H > 1."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    B, H, Lq, dh = q.shape
    Lk = k.shape[-2]
    flat_bias = bias.reshape(-1, Lq, Lk)  # (H, Lq, Lk) for a t5_bias output
    out = torch.baddbmm(flat_bias, q.reshape(B * H, Lq, dh), k.reshape(B * H, Lk, dh).transpose(1, 2), alpha=scale)
    return out.view(B, H, Lq, Lk)
