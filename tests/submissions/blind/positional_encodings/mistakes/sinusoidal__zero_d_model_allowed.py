"""sinusoidal: checks only that d_model is even, so d_model = 0 returns an empty (T, 0) table instead of raising ValueError."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got d_model={d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be 0 or more, got num_positions={num_positions}")
    position = torch.arange(num_positions, device=device, dtype=torch.float64)
    two_k = torch.arange(0, max(d_model, 0), 2, device=device, dtype=torch.float64)
    angle = position[:, None] * base ** (-two_k / max(d_model, 1))
    return torch.stack((angle.sin(), angle.cos()), dim=-1).reshape(num_positions, max(d_model, 0)).to(dtype)
