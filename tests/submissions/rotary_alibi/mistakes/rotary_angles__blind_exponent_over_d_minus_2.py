"""rotary_angles: theta_i = base ** (-2i / (dh - 2)), so that the last pair turns at exactly 1/base (a normalisation the convention does not use)."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError("head_dim must be positive and even")
    two_i = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64)
    theta = base ** (-two_i / (head_dim - 2))
    angle = positions.to(torch.float64)[..., None] * theta
    return angle.cos().to(dtype), angle.sin().to(dtype)
