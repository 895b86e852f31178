"""rotary_angles: the angles repeated to dh entries, as LLaMA's cos/sin tables are, instead of one per pair (dh/2)."""
import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError("head_dim must be even and positive")
    two_i = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64)
    angle = positions.to(torch.float64)[..., None] * base ** (-two_i / head_dim)
    angle = torch.cat((angle, angle), dim=-1)
    return angle.cos().to(dtype), angle.sin().to(dtype)
