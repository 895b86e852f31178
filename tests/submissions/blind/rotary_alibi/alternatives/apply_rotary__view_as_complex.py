"""apply_rotary: pairs as complex numbers (view_as_complex / torch.complex) multiplied by polar(1, angle)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2], x.shape[-1]
    if dh % 2:
        raise ValueError("dh must be even")
    if positions.ndim == 0 or positions.shape[-1] != L:
        raise ValueError("positions must end in L entries")
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=real)
    rot = torch.complex(cos, sin)
    xw = x.to(real)
    if interleaved:
        z = torch.view_as_complex(xw.reshape(*x.shape[:-1], dh // 2, 2).contiguous())
        out = torch.view_as_real(z * rot).flatten(-2)
    else:
        a, b = xw[..., : dh // 2], xw[..., dh // 2:]
        z = torch.complex(a.contiguous(), b.contiguous()) * rot
        out = torch.cat((z.real, z.imag), dim=-1)
    return out.to(x.dtype)
