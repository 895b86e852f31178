"""sinusoidal: one exponent per column index i (base ** (-i / d)), so each cosine column gets exponent (2k+1)/d instead of sharing 2k/d with its sine."""
import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got d_model={d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be 0 or more, got num_positions={num_positions}")
    position = torch.arange(num_positions, device=device, dtype=torch.float64)
    i = torch.arange(d_model, device=device, dtype=torch.float64)
    angle = position[:, None] * base ** (-i / d_model)  # (T, d)
    pe = angle.sin()
    pe[:, 1::2] = angle[:, 1::2].cos()
    return pe.to(dtype)
