"""scaled_positions: torch.true_divide on a float64 copy; dtype chosen by an explicit conditional; validation via math.isfinite."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError("factor must be positive and finite")
    wide = positions.double()
    out = torch.true_divide(wide, factor)
    return out if positions.dtype == torch.float64 else out.float()
