"""scaled_positions: uses floor division (positions // factor), so the fractions are lost: 1/4 becomes 0, 8191/4 becomes 2047."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions // factor).to(dtype)
