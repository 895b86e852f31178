"""rope_scores: the queries rotated by the keys' positions (positions_k used for both; wrong when they differ)."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)
    positions_q = positions_k[..., : q.shape[-2]]
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)
    return (q_turned * scale) @ k_turned.transpose(-2, -1)
