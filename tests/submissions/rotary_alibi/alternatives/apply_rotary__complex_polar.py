"""apply_rotary: each pair as a complex number, multiplied by torch.polar(1, angle); view_as_complex for neighbours."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length, dim = x.shape[-2], x.shape[-1]
    if dim <= 0 or dim % 2:
        raise ValueError(f"head_dim={dim} must be even")
    if positions.ndim == 0 or positions.shape[-1] != length:
        raise ValueError(f"need one position per row: {length} rows, positions {tuple(positions.shape)}")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float64, device=x.device) / dim)
    angle = (positions.double()[..., None] * inv).to(work)  # (..., L, dh/2)
    turn = torch.polar(torch.ones_like(angle), angle)  # e^{i angle}
    xw = x.to(work)
    if interleaved:
        z = torch.view_as_complex(xw.reshape(*x.shape[:-1], dim // 2, 2).contiguous())
        return torch.view_as_real(z * turn).flatten(-2).to(x.dtype)
    first, second = xw.chunk(2, dim=-1)
    z = torch.complex(first, second) * turn
    return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)
