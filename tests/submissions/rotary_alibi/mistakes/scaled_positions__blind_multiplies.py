"""scaled_positions: multiplies the positions by the factor (stretching them) instead of dividing."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float64) * factor).to(dtype)
