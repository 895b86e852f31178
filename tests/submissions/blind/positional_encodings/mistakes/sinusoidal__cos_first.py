"""sinusoidal: pairs interleaved as (cos, sin) instead of (sin, cos)."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got d_model={d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be 0 or more, got num_positions={num_positions}")
    position = torch.arange(num_positions, device=device, dtype=torch.float64)
    two_k = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)
    angle = position[:, None] * base ** (-two_k / d_model)
    pe = torch.zeros(num_positions, d_model, device=device, dtype=torch.float64)
    pe[:, 0::2] = torch.cos(angle)
    pe[:, 1::2] = torch.sin(angle)
    return pe.to(dtype)
