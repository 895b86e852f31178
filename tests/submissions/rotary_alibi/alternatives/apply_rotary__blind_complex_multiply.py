"""apply_rotary: each pair as a complex number a + ib multiplied by cos + i sin (view_as_complex / view_as_real, complex64 or complex128)."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    L, dh = x.shape[-2:]
    if dh % 2 != 0:
        raise ValueError("odd head size")
    if positions.dim() < 1 or positions.size(-1) != L:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    turn = torch.complex(cos, sin)  # (..., L, dh/2)
    xc = x.to(compute)
    if interleaved:
        pairs = xc.reshape(*xc.shape[:-1], dh // 2, 2)
    else:
        pairs = torch.stack((xc[..., : dh // 2], xc[..., dh // 2 :]), dim=-1)
    z = torch.view_as_complex(pairs.contiguous()) * turn
    out = torch.view_as_real(z)  # (..., L, dh/2, 2)
    if interleaved:
        out = out.flatten(-2)
    else:
        out = torch.cat((out[..., 0], out[..., 1]), dim=-1)
    return out.to(x.dtype)
