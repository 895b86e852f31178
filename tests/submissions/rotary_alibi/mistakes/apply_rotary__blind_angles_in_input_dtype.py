"""apply_rotary: computes theta and the angles in x's own dtype, so float16/bfloat16 input gets half-precision angles: off by hundredths of a radian at positions in the hundreds, and far more past 2048, where float16 cannot even hold the position (float32/float64 input is acceptable)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if dh % 2 or positions.dim() == 0 or positions.shape[-1] != L:
        raise ValueError("dh must be even and positions must end in L entries")
    theta = base ** (-torch.arange(0, dh, 2, device=x.device).to(x.dtype) / dh)
    angle = positions.to(x.dtype)[..., None] * theta
    cos, sin = angle.cos(), angle.sin()
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
