"""apply_rotary: explicit 2x2 rotation matrices applied by matmul to pairs built with unflatten (and a transpose for rotate-half)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    *lead, L, dh = x.shape
    if dh % 2 != 0:
        raise ValueError(f"odd head size {dh}")
    if positions.ndim < 1 or positions.shape[-1] != L:
        raise ValueError(f"positions {tuple(positions.shape)} do not match L={L}")
    ct = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=ct)          # (..., L, dh/2)
    rot = torch.stack((torch.stack((cos, -sin), -1), torch.stack((sin, cos), -1)), -2)  # (..., L, dh/2, 2, 2)
    if interleaved:
        pairs = x.to(ct).unflatten(-1, (dh // 2, 2))                  # (..., L, dh/2, 2)
    else:
        pairs = x.to(ct).unflatten(-1, (2, dh // 2)).transpose(-1, -2)
    turned = (rot @ pairs.unsqueeze(-1)).squeeze(-1)                # (..., L, dh/2, 2)
    if not interleaved:
        turned = turned.transpose(-1, -2)
    return turned.flatten(-2).to(x.dtype)
