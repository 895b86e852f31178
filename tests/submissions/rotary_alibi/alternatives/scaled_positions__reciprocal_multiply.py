"""scaled_positions: multiply by the reciprocal 1 / factor, in float32 (float64 for float64 positions)."""
import torch


def scaled_positions(positions, *, factor):
    if not (factor > 0) or factor == float("inf"):
        raise ValueError(f"factor must be > 0 and finite, got {factor}")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return positions.to(dtype) * (1.0 / factor)
