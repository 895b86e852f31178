"""sinusoidal: Annotated-Transformer style, float32 exp(-log(base)/d) div_term written into even/odd columns, cast at the end."""
import math

import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model <= 0 or d_model % 2 == 1:
        raise ValueError(f"d_model must be positive and even, got {d_model}")
    if num_positions < 0:
        raise ValueError(f"num_positions must not be negative, got {num_positions}")
    pe = torch.zeros(num_positions, d_model, device=device, dtype=torch.float32)
    position = torch.arange(0, num_positions, device=device, dtype=torch.float32).unsqueeze(1)  # (T, 1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2, device=device, dtype=torch.float32) * -(math.log(base) / d_model)
    )  # (d/2,)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.to(dtype)
