"""rotary_angles: returns (sin, cos) instead of (cos, sin)."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError("head_dim must be positive and even")
    two_i = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64)
    angle = positions.to(torch.float64)[..., None] * base ** (-two_i / head_dim)
    return angle.sin().to(dtype), angle.cos().to(dtype)
