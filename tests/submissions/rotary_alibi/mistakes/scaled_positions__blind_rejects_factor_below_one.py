"""scaled_positions: raises ValueError for any factor below 1 (e.g. 0.5), although every positive finite factor is valid."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 1 <= factor < math.inf:
        raise ValueError("factor must be at least 1")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float64) / factor).to(dtype)
