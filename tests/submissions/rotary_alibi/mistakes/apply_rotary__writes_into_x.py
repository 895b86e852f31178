"""apply_rotary: the right values, but written into x itself (x changed in place: the caller's queries are lost)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
        raise ValueError("one position per row of x")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=work)
    if interleaved:
        a, b = x[..., 0::2].to(work), x[..., 1::2].to(work)
        x[..., 0::2], x[..., 1::2] = (a * cos - b * sin).to(x.dtype), (a * sin + b * cos).to(x.dtype)
    else:
        half = x.shape[-1] // 2
        a, b = x[..., :half].to(work), x[..., half:].to(work)
        x[..., :half], x[..., half:] = (a * cos - b * sin).to(x.dtype), (a * sin + b * cos).to(x.dtype)
    return x
