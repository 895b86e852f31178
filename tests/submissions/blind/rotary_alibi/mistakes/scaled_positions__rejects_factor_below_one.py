"""scaled_positions: raises ValueError for factor < 1 (thinking only of growth), although any positive factor is valid."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 1 <= factor < math.inf:
        raise ValueError("factor must be at least 1")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float64) / factor).to(dtype)
