"""apply_rotary: rotates clockwise (a' = a cos + b sin, b' = -a sin + b cos), the transposed rotation matrix."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length = x.shape[-2]
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=compute)
    wide = x.to(compute)
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]
        out = torch.stack((a * cos + b * sin, -a * sin + b * cos), dim=-1).flatten(-2)
    else:
        a, b = wide.chunk(2, dim=-1)
        out = torch.cat((a * cos + b * sin, -a * sin + b * cos), dim=-1)
    return out.to(x.dtype)
