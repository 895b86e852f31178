"""rope_scores: defaults positions_q to the last Lq of Lk positions (KV-cache assumption) instead of arange(Lq) from 0."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    lq, lk = q.shape[-2], k.shape[-2]
    if positions_k is None:
        positions_k = torch.arange(lk, device=k.device)
    if positions_q is None:
        positions_q = torch.arange(lk - lq, lk, device=q.device) if lk >= lq else torch.arange(lq, device=q.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)
    return (q_turned * scale) @ k_turned.transpose(-2, -1)
