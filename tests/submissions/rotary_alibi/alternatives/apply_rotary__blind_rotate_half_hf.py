"""apply_rotary: x * cos + rotate(x) * sin with cos/sin widened to dh (repeat_interleave for neighbours as in GPT-J, cat for halves as in Hugging Face LLaMA's rotate_half)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if dh % 2:
        raise ValueError(f"head size must be even, got {dh}")
    if positions.ndim == 0 or positions.shape[-1] != L:
        raise ValueError(f"positions {tuple(positions.shape)} do not match L={L}")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    xc = x.to(compute)
    if interleaved:
        cos = cos.repeat_interleave(2, dim=-1)
        sin = sin.repeat_interleave(2, dim=-1)
        x1, x2 = xc[..., 0::2], xc[..., 1::2]
        rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    else:
        cos = torch.cat((cos, cos), dim=-1)
        sin = torch.cat((sin, sin), dim=-1)
        x1, x2 = xc[..., : dh // 2], xc[..., dh // 2 :]
        rotated = torch.cat((-x2, x1), dim=-1)
    return (xc * cos + rotated * sin).to(x.dtype)
