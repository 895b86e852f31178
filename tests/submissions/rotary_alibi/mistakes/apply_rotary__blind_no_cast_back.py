"""apply_rotary: computes in float32 (x.float()) and forgets to cast back: float16, bfloat16 and float64 input all come back as float32."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != L:
        raise ValueError("positions must end in L entries")
    cos, sin = rotary_angles(positions, dh, base)
    xf = x.float()
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = xf.chunk(2, dim=-1)
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
