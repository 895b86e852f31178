"""scaled_positions: floor division positions // factor: neighbours share one whole-number position, fractions lost."""
import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < float("inf"):
        raise ValueError("factor must be positive and finite")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions // factor).to(dtype)
