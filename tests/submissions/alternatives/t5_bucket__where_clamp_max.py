"""t5_bucket: sign handling with torch.where, log argument kept >= 1, clamp_max for the last bucket (same float32 op order as T5)."""
import math

import torch


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    max_exact = n // 2
    if max_exact < 1:
        raise ValueError(f"num_buckets={num_buckets} leaves no exact buckets")
    if not max_distance > max_exact:
        raise ValueError(f"max_distance={max_distance} must be greater than max_exact={max_exact}")
    rel = relative_position.to(torch.long)
    if bidirectional:
        offset = torch.where(rel > 0, n, 0)
        dist = torch.where(rel < 0, -rel, rel)
    else:
        offset = torch.zeros_like(rel)
        dist = torch.where(rel < 0, -rel, torch.zeros_like(rel))
    # log of a value >= 1 only: the small distances take the other branch anyway
    scaled = torch.log(dist.clamp_min(max_exact).float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
    large = (max_exact + scaled.to(torch.long)).clamp_max(n - 1)
    return offset + torch.where(dist < max_exact, dist, large)
