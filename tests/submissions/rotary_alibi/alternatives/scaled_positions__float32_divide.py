"""scaled_positions: a true division done in the output dtype, torch.true_divide(positions.float(), factor)."""
import math

import torch


def scaled_positions(positions, *, factor):
    if math.isnan(factor) or math.isinf(factor) or factor <= 0:
        raise ValueError("factor has to be a positive finite number")
    if positions.dtype == torch.float64:
        return positions / factor
    return torch.true_divide(positions.float(), factor)
