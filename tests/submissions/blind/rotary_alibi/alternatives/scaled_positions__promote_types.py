"""scaled_positions: float64 division by a 0-dim float64 tensor, output dtype from torch.promote_types(positions.dtype, float32)."""
import math

import torch


def scaled_positions(positions, *, factor):
    factor = float(factor)
    if math.isnan(factor) or math.isinf(factor) or factor <= 0:
        raise ValueError(f"bad factor {factor}")
    out_dtype = torch.promote_types(positions.dtype, torch.float32)
    f = torch.tensor(factor, dtype=torch.float64, device=positions.device)
    return torch.div(positions.to(torch.float64), f).to(out_dtype)
