"""scaled_positions: positions * factor instead of / factor: the long context stretched further out, not squeezed in."""
import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < float("inf"):
        raise ValueError("factor must be positive and finite")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return positions.to(dtype) * factor
