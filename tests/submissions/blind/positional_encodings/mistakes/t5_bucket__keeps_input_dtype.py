"""t5_bucket: accumulates into torch.zeros_like(relative_position), so an int32 input gives int32 buckets instead of int64."""
import math

import torch


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    max_exact = n // 2
    if max_exact == 0:
        raise ValueError(f"num_buckets={num_buckets} is too small: it leaves max_exact = 0")
    if max_distance <= max_exact:
        raise ValueError(f"max_distance={max_distance} must be larger than max_exact={max_exact}")
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        buckets += (relative_position > 0).to(buckets.dtype) * n
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)
    log_bucket = (torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)).long()
    far = (max_exact + log_bucket).clamp(max=n - 1)
    buckets += torch.where(distance < max_exact, distance.long(), far).to(buckets.dtype)
    return buckets
