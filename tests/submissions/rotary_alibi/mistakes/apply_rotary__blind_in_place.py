"""apply_rotary: writes the turned pairs back into x (x[..., 0::2] = ...) and returns x: right values, but the caller's tensor is modified."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != L:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    if interleaved:
        a, b = x[..., 0::2].to(compute), x[..., 1::2].to(compute)
        x[..., 0::2] = (a * cos - b * sin).to(x.dtype)
        x[..., 1::2] = (a * sin + b * cos).to(x.dtype)
    else:
        a, b = x[..., : dh // 2].to(compute), x[..., dh // 2 :].to(compute)
        x[..., : dh // 2] = (a * cos - b * sin).to(x.dtype)
        x[..., dh // 2 :] = (a * sin + b * cos).to(x.dtype)
    return x
