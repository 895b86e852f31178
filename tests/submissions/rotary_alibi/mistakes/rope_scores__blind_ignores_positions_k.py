"""rope_scores: always turns the keys by arange(Lk), ignoring positions_k when it is given (positions_q is used)."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    keys_at = torch.arange(k.shape[-2], device=k.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, keys_at, base, interleaved=interleaved)
    return (q_turned * scale) @ k_turned.transpose(-2, -1)
