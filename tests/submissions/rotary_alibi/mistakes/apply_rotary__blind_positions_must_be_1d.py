"""apply_rotary: raises ValueError unless positions is one-dimensional (L,), rejecting valid batched positions such as (B, 1, L)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if positions.dim() != 1 or positions.shape[0] != L:
        raise ValueError(f"positions must have shape ({L},), got {tuple(positions.shape)}")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    wide = x.to(compute)
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    else:
        a, b = wide.chunk(2, dim=-1)
        out = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    return out.to(x.dtype)
