"""sinusoidal: the PyTorch-tutorial form, exp(-log(base) * 2k / d) frequencies written into even/odd column slices, in float64."""
import math

import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 == 1:
        raise ValueError(f"d_model must be positive and even, got {d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must be >= 0, got {num_positions}")
    position = torch.arange(num_positions, dtype=torch.float64, device=device).unsqueeze(1)  # (T, 1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64, device=device) * (-math.log(base) / d_model))
    pe = torch.zeros(num_positions, d_model, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.to(dtype)
