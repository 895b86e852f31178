"""rotary_angles: theta_i = base ** (-i / head_dim) with i = 0 .. dh/2 - 1 (the factor 2 of the exponent dropped)."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError("head_dim must be a positive even number")
    i = torch.arange(head_dim // 2, device=positions.device, dtype=torch.float64)
    theta = base ** (-i / head_dim)
    angle = positions.to(torch.float64)[..., None] * theta
    return angle.cos().to(dtype), angle.sin().to(dtype)
