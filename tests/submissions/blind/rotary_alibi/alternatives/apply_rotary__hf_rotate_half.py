"""apply_rotary: Hugging Face form x * cos + rotate(x) * sin with cos/sin widened to dh for each layout."""
import torch


def _rotate(x, interleaved):
    if interleaved:
        even, odd = x[..., ::2], x[..., 1::2]
        return torch.stack((-odd, even), dim=-1).flatten(-2)
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    if positions.dim() == 0 or positions.size(-1) != x.size(-2):
        raise ValueError("need one position per row of x")
    if x.size(-1) % 2 == 1:
        raise ValueError("head size must be even")
    work = torch.float64 if x.dtype is torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, x.size(-1), base, dtype=work)
    if interleaved:
        cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    else:
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    xf = x.to(work)
    return (xf * cos + _rotate(xf, interleaved) * sin).to(x.dtype)
