"""t5_bucket: integer-divides the distance by max_exact before the log (log(d // max_exact)), flooring the ratio and shifting the log buckets."""
import math

import torch


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    max_exact = n // 2
    if max_exact == 0:
        raise ValueError(f"num_buckets={num_buckets} is too small: it leaves max_exact = 0")
    if max_distance <= max_exact:
        raise ValueError(f"max_distance={max_distance} must be larger than max_exact={max_exact}")
    if bidirectional:
        offset = (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        offset = torch.zeros_like(relative_position, dtype=torch.long)
        distance = (-relative_position).clamp(min=0)
    log_bucket = (torch.log((distance // max_exact).float()) / math.log(max_distance / max_exact) * (n - max_exact)).long()
    far = (max_exact + log_bucket).clamp(max=n - 1)
    return offset + torch.where(distance < max_exact, distance.long(), far)
