"""scaled_positions: checks `factor <= 0 or factor == inf`, which lets NaN through (every comparison with NaN is False): NaN positions come back instead of a ValueError."""
import math

import torch


def scaled_positions(positions, *, factor):
    if factor <= 0 or factor == math.inf:
        raise ValueError("factor must be positive and finite")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float64) / factor).to(dtype)
