"""apply_rotary: mixes GPT-J and NeoX code: rotate-half pairs but cos/sin widened with repeat_interleave, so pair i gets theta_{i//2}."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length, dh = x.shape[-2], x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)  # (..., L, dh)
    wide = x.to(compute)
    if interleaved:
        rotated = torch.stack((-wide[..., 1::2], wide[..., 0::2]), dim=-1).flatten(-2)
    else:
        rotated = torch.cat((-wide[..., dh // 2:], wide[..., : dh // 2]), dim=-1)
    return (wide * cos + rotated * sin).to(x.dtype)
