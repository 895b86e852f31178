"""scaled_positions: validates with `if factor <= 0`, so NaN and infinity pass and give NaN or zero positions."""
import torch


def scaled_positions(positions, *, factor):
    if factor <= 0:
        raise ValueError("factor must be positive")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float64) / factor).to(dtype)
