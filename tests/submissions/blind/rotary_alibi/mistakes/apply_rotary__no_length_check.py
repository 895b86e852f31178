"""apply_rotary: never checks that positions has L entries: one position broadcasts silently, other mismatches raise RuntimeError."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=compute)
    wide = x.to(compute)
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    else:
        a, b = wide.chunk(2, dim=-1)
        out = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    return out.to(x.dtype)
