"""rotary_angles: only checks head_dim > 0, so an odd head_dim is accepted (arange(0, dh, 2) silently gives (dh+1)/2 pairs) instead of raising ValueError."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0:
        raise ValueError("head_dim must be positive")
    two_i = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64)
    angle = positions.to(torch.float64)[..., None] * base ** (-two_i / head_dim)
    return angle.cos().to(dtype), angle.sin().to(dtype)
