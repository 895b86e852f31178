"""apply_rotary: x * cos + rotate(x) * sin, rotate_half by torch.cat for halves, by stack/flatten for neighbours."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
        raise ValueError("positions must end in L = x.shape[-2] entries")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=work)
    xw = x.to(work)
    if interleaved:
        cos = torch.stack((cos, cos), dim=-1).flatten(-2)  # c0 c0 c1 c1 ...
        sin = torch.stack((sin, sin), dim=-1).flatten(-2)
        rotated = torch.stack((-xw[..., 1::2], xw[..., 0::2]), dim=-1).flatten(-2)  # (-b0, a0, -b1, a1, ...)
    else:
        cos = torch.cat((cos, cos), dim=-1)
        sin = torch.cat((sin, sin), dim=-1)
        half = xw.shape[-1] // 2
        rotated = torch.cat((-xw[..., half:], xw[..., :half]), dim=-1)
    return (xw * cos + rotated * sin).to(x.dtype)
