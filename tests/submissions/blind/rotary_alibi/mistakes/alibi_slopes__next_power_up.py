"""alibi_slopes: rounds n up to the next power of two and keeps the first n of its slopes (the steepest ones)."""
import math

import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be 1 or more")
    c = 2 ** math.ceil(math.log2(num_heads))
    ratio = torch.full((), 2.0 ** (-8.0 / c), device=device, dtype=torch.float32)
    return torch.pow(ratio, torch.arange(1, c + 1, device=device, dtype=torch.int32))[:num_heads]
