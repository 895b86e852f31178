"""rotary_angles: the angles by einsum '...,k->...k' in float64, frequencies from exp(-log(base) * 2i / dh)."""
import math

import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim has to be even and > 0 (got {head_dim})")
    two_i = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64)
    theta = torch.exp(-math.log(base) * two_i / head_dim)
    angle = torch.einsum("...,k->...k", positions.double(), theta)
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)
