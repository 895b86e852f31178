"""rotary_angles: validates head_dim with assert, so an odd head_dim raises AssertionError instead of ValueError."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    assert head_dim > 0 and head_dim % 2 == 0, "head_dim must be even"
    theta = base ** (-torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64) / head_dim)
    angle = positions.to(torch.float64)[..., None] * theta
    return angle.cos().to(dtype), angle.sin().to(dtype)
