"""apply_rotary: always computes in float32 (x.float()), so float64 input loses precision before being cast back."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length = x.shape[-2]
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError("positions must end in L entries")
    cos, sin = rotary_angles(positions, x.shape[-1], base)
    wide = x.float()
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]
        out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    else:
        a, b = wide.chunk(2, dim=-1)
        out = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    return out.to(x.dtype)
