"""rope_scores: the default query positions are the last Lq key positions, arange(Lk - Lq, Lk), instead of arange(Lq): wrong whenever Lq != Lk and positions_q is not passed."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    lq, lk = q.shape[-2], k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if positions_q is None:
        positions_q = torch.arange(lk - lq, lk, device=q.device)
    if positions_k is None:
        positions_k = torch.arange(lk, device=k.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)
    return (q_turned * scale) @ k_turned.transpose(-2, -1)
