"""apply_rotary: always LLaMA's rotate-half layout (i, i + dh/2), whatever interleaved asks for."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
        raise ValueError("one position per row of x")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=work)
    a, b = x.to(work).chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1).to(x.dtype)
