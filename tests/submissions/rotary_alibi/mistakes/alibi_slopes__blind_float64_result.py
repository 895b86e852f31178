"""alibi_slopes: the right numbers, but computed and returned in float64 (torch.tensor of Python floats with dtype=torch.float64) instead of float32."""
import math

import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be >= 1")
    c = 2 ** int(math.log2(num_heads))
    exps = [8.0 * (h + 1) / c for h in range(c)] + [4.0 * (2 * h + 1) / c for h in range(num_heads - c)]
    return torch.tensor([2.0 ** -e for e in exps], dtype=torch.float64, device=device)
