"""scaled_positions: multiply by the reciprocal 1 / factor in float64 (within one float64 ulp of a true division)."""
import math

import torch


def scaled_positions(positions, *, factor):
    if math.isnan(factor) or math.isinf(factor) or factor <= 0:
        raise ValueError("factor must be a positive finite number")
    scaled = positions.to(torch.float64) * (1.0 / factor)
    return scaled if positions.dtype == torch.float64 else scaled.float()
