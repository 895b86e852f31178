"""apply_rotary: an explicit 2x2 rotation matrix [[cos, -sin], [sin, cos]] per position and pair, applied to each pair by a batched matmul."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length, dh = x.shape[-2], x.shape[-1]
    if dh % 2 == 1:
        raise ValueError("dh must be even")
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError("one position per row")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    c, s = rotary_angles(positions, dh, base, dtype=compute)
    rot = torch.stack((torch.stack((c, -s), dim=-1), torch.stack((s, c), dim=-1)), dim=-2)  # (..., L, dh/2, 2, 2)
    xc = x.to(compute)
    if interleaved:
        pairs = xc.unflatten(-1, (dh // 2, 2))
    else:
        pairs = xc.unflatten(-1, (2, dh // 2)).transpose(-1, -2)
    turned = torch.matmul(rot, pairs.unsqueeze(-1)).squeeze(-1)  # (..., L, dh/2, 2)
    if interleaved:
        out = turned.flatten(-2)
    else:
        out = turned.transpose(-1, -2).flatten(-2)
    return out.to(x.dtype)
