"""shaw: treats scale as the divisor sqrt(dh) (default scale = sqrt(dh), scores / scale), so an explicit scale is applied inverted."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    B, H, Lq, dh = q.shape
    Lk = k.shape[-2]
    if scale is None:
        scale = math.sqrt(dh)
    index = clipped_relative_positions(Lq, Lk, max_relative_position, device=q.device)  # (Lq, Lk)
    per_distance = q @ rel_k.to(q.dtype).transpose(0, 1)  # (B, H, Lq, 2k+1)
    relative = per_distance.gather(-1, index.expand(B, H, Lq, Lk))
    return (q @ k.transpose(-2, -1) + relative) / scale
