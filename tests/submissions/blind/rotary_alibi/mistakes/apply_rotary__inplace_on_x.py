"""apply_rotary: writes the rotated pairs back into x's slices (in place) and returns x, so the caller's tensor changes."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length = x.shape[-2]
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=compute)
    half = x.shape[-1] // 2
    if interleaved:
        a, b = x[..., 0::2].to(compute), x[..., 1::2].to(compute)
        x[..., 0::2] = (a * cos - b * sin).to(x.dtype)
        x[..., 1::2] = (a * sin + b * cos).to(x.dtype)
    else:
        a, b = x[..., :half].to(compute), x[..., half:].to(compute)
        x[..., :half] = (a * cos - b * sin).to(x.dtype)
        x[..., half:] = (a * sin + b * cos).to(x.dtype)
    return x
