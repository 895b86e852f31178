"""rotary_angles: inverse frequencies via exp(-log(base) * 2i/d) in float64 and torch.outer on flattened positions."""
import math

import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if not isinstance(head_dim, int) or head_dim < 2 or head_dim % 2 == 1:
        raise ValueError(f"head_dim must be even and positive, got {head_dim}")
    half = head_dim // 2
    exponent = torch.arange(half, dtype=torch.float64, device=positions.device) * (2.0 / head_dim)
    inv_freq = torch.exp(-math.log(base) * exponent)
    flat = positions.reshape(-1).to(torch.float64)
    angle = torch.outer(flat, inv_freq).reshape(*positions.shape, half)
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)
