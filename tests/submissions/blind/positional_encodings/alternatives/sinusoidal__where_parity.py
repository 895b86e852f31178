"""sinusoidal: angles for each column via repeat_interleave, then torch.where picks sin on even and cos on odd columns (float64)."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model % 2 != 0 or d_model < 1:
        raise ValueError(f"d_model has to be even and > 0 (got {d_model})")
    if num_positions < 0:
        raise ValueError(f"num_positions has to be >= 0 (got {num_positions})")
    inv_freq = 1.0 / (base ** (torch.arange(0, d_model, 2, device=device).double() / d_model))  # (d/2,)
    inv_freq = inv_freq.repeat_interleave(2)  # (d,)
    angle = torch.arange(num_positions, device=device).double()[:, None] * inv_freq  # (T, d)
    even = (torch.arange(d_model, device=device) % 2 == 0)
    return torch.where(even, angle.sin(), angle.cos()).to(dtype)
