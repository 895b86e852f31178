"""apply_rotary: cos/sin widened with repeat_interleave (or repeat), and the quarter turn of each pair as a matrix."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    d = x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
        raise ValueError("one position per row of x expected")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, d, base, dtype=work)
    half = d // 2
    quarter = torch.zeros(d, d, dtype=work, device=x.device)  # row vector @ quarter = (-b, a) for each pair (a, b)
    if interleaved:
        cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
        first, second = torch.arange(0, d, 2), torch.arange(1, d, 2)
    else:
        cos, sin = cos.repeat(*([1] * (cos.dim() - 1)), 2), sin.repeat(*([1] * (sin.dim() - 1)), 2)
        first, second = torch.arange(half), torch.arange(half, d)
    quarter[second, first] = -1.0
    quarter[first, second] = 1.0
    xw = x.to(work)
    return (xw * cos + (xw @ quarter) * sin).to(x.dtype)
