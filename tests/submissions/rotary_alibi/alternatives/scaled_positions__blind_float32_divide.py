"""scaled_positions: divide in float32 (float64 only for float64 input), the way most codebases write it; integer positions above 2**24 lose their last bits, otherwise at most one float32 ulp from the reference."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not factor > 0 or factor == math.inf:
        raise ValueError(f"bad interpolation factor {factor}")
    if positions.dtype == torch.float64:
        return positions / factor
    return positions.to(torch.float32) / factor
