"""scaled_positions: casts to float32 first and divides in float32 (then to the output dtype), losing float64 positions' precision."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    out_dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float32) / factor).to(out_dtype)
