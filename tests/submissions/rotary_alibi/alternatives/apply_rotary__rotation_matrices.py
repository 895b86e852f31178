"""apply_rotary: the paper's block-diagonal rotation matrix for every position, built whole and applied by einsum."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    d = x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
        raise ValueError("positions: one per row")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, d, base, dtype=work)  # (..., L, dh/2)
    if interleaved:
        a, b = torch.arange(0, d, 2), torch.arange(1, d, 2)
    else:
        a, b = torch.arange(d // 2), torch.arange(d // 2, d)
    rotation = torch.zeros(*cos.shape[:-1], d, d, dtype=work, device=x.device)  # (..., L, dh, dh)
    rotation[..., a, a] = cos
    rotation[..., a, b] = -sin
    rotation[..., b, a] = sin
    rotation[..., b, b] = cos
    return torch.einsum("...ij,...j->...i", rotation, x.to(work)).to(x.dtype)
