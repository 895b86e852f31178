"""t5_bucket: a faithful re-statement of Hugging Face's T5Attention._relative_position_bucket (torch.min clamp, torch.where)."""
import math

import torch


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    total_buckets = num_buckets
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
    max_exact = num_buckets // 2
    if max_exact == 0:
        raise ValueError(f"num_buckets={total_buckets} too small: max_exact would be 0")
    if max_distance <= max_exact:
        raise ValueError(f"max_distance={max_distance} must exceed max_exact={max_exact}")
    if bidirectional:
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets
