"""sinusoidal: torch.outer of positions and frequencies, all computed directly in the requested dtype."""
import math

import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    if d_model % 2 != 0 or d_model < 1:
        raise ValueError("d_model must be an even number greater than zero, got %r" % (d_model,))
    if num_positions < 0:
        raise ValueError("num_positions must be >= 0, got %r" % (num_positions,))
    positions = torch.arange(num_positions, device=device, dtype=dtype)
    freqs = torch.exp(torch.arange(0, d_model, 2, device=device, dtype=dtype) * (-math.log(base) / d_model))
    angles = torch.outer(positions, freqs)  # (T, d/2)
    out = torch.empty(num_positions, d_model, device=device, dtype=dtype)
    out[:, 0::2] = angles.sin()
    out[:, 1::2] = angles.cos()
    return out
