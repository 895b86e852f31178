"""rope_scores: the queries placed at the last Lq key positions by default (a KV-cache habit), not at 0 .. Lq-1."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    length_q, length_k = q.shape[-2], k.shape[-2]
    if positions_q is None:
        positions_q = torch.arange(length_k - length_q, length_k, device=q.device)
    if positions_k is None:
        positions_k = torch.arange(length_k, device=k.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)
    return (q_turned * scale) @ k_turned.transpose(-2, -1)
