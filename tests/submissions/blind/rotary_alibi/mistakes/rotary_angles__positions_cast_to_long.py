"""rotary_angles: casts positions to long (thinking of them as indices), truncating fractional positions from scaled_positions."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError("head_dim must be a positive even number")
    positions = positions.long()
    theta = base ** (-torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64) / head_dim)
    angle = positions.to(torch.float64)[..., None] * theta
    return angle.cos().to(dtype), angle.sin().to(dtype)
