"""sinusoidal: one angle per column (pair index repeated), cosine columns written as sin(x + pi/2), all in float64."""
import math

import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if not (d_model > 0 and d_model % 2 == 0):
        raise ValueError(f"d_model={d_model} must be a positive even integer")
    if num_positions < 0:
        raise ValueError(f"num_positions={num_positions} must be non-negative")
    column = torch.arange(d_model, device=device)
    pair = torch.div(column, 2, rounding_mode="floor").to(torch.float64)  # 0, 0, 1, 1, 2, 2, ...
    frequency = torch.pow(torch.tensor(float(base), dtype=torch.float64, device=device), -2.0 * pair / d_model)
    phase = (column % 2).to(torch.float64) * (math.pi / 2)  # cos(x) = sin(x + pi / 2)
    t = torch.arange(num_positions, device=device, dtype=torch.float64)
    return torch.sin(torch.outer(t, frequency) + phase).to(dtype=dtype)
