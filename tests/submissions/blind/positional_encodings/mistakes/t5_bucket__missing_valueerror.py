"""t5_bucket: no ValueError checks; too few buckets crash with ZeroDivisionError and max_distance <= max_exact silently returns buckets."""
import math

import torch


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    max_exact = n // 2
    if bidirectional:
        offset = (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        offset = torch.zeros_like(relative_position, dtype=torch.long)
        distance = (-relative_position).clamp(min=0)
    log_bucket = (torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)).long()
    far = (max_exact + log_bucket).clamp(max=n - 1)
    return offset + torch.where(distance < max_exact, distance.long(), far)
