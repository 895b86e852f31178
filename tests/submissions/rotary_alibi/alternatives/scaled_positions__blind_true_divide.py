"""scaled_positions: math.isfinite check, torch.true_divide in float64, cast to float64/float32."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"factor must be positive and finite, got {factor}")
    out_dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return torch.true_divide(positions.double(), factor).to(out_dtype)
