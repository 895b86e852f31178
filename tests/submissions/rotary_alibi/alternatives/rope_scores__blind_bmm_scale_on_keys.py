"""rope_scores: rotate, fold the scale into the keys, flatten batch and heads and use torch.bmm."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = q.shape[-1] ** -0.5
    lq, lk = q.shape[-2], k.shape[-2]
    if positions_q is None:
        positions_q = torch.arange(lq, device=q.device)
    if positions_k is None:
        positions_k = torch.arange(lk, device=k.device)
    qr = apply_rotary(q, positions_q, base, interleaved=interleaved)
    kr = apply_rotary(k, positions_k, base, interleaved=interleaved) * scale
    b, h = qr.shape[0], qr.shape[1]
    out = torch.bmm(qr.reshape(b * h, lq, -1), kr.reshape(b * h, lk, -1).transpose(1, 2))
    return out.reshape(b, h, lq, lk)
