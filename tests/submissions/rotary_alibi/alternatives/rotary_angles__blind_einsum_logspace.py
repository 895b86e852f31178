"""rotary_angles: theta_i = exp(-2i ln(base) / dh) in float64, angles by einsum over any leading shape, rounded once."""
import math

import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if not (head_dim > 0 and head_dim % 2 == 0):
        raise ValueError("head_dim must be a positive even integer")
    i = torch.arange(head_dim // 2, dtype=torch.float64, device=positions.device)
    theta = torch.exp(i * (-2.0 * math.log(base) / head_dim))
    angle = torch.einsum("...,j->...j", positions.to(torch.float64), theta)
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)
