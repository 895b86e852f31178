"""rope_scores: only the queries rotated, the keys left as they are: the score then depends on the query's absolute position."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    return (q_turned * scale) @ k.transpose(-2, -1)
