"""apply_rotary: the layouts swapped: halves (i, i + dh/2) when interleaved=True asks for neighbours (2i, 2i+1), and back."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
        raise ValueError("one position per row of x")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=work)
    w = x.to(work)
    if not interleaved:
        a, b = w[..., 0::2], w[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    a, b = w.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1).to(x.dtype)
