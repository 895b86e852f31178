"""apply_rotary: rotate-half layout with cos/sin widened by repeat_interleave (the neighbours' widening) instead of cat, so coordinate c of a half uses theta_{c//2}, not theta_c; the interleaved layout is right."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != L:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    xc = x.to(compute)
    if interleaved:
        rotated = torch.stack((-xc[..., 1::2], xc[..., 0::2]), dim=-1).flatten(-2)
    else:
        rotated = torch.cat((-xc[..., dh // 2 :], xc[..., : dh // 2]), dim=-1)
    return (xc * cos + rotated * sin).to(x.dtype)
