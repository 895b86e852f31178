"""apply_rotary: the rotate-half layout handled by permuting the coordinates into neighbouring pairs (index_select), turning neighbours, and permuting back."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    n_rows, dh = x.shape[-2], x.shape[-1]
    if dh % 2:
        raise ValueError("dh must be even")
    if positions.ndim == 0 or positions.shape[-1] != n_rows:
        raise ValueError("positions must end in L entries")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(positions, dh, base, dtype=compute)
    xc = x.to(compute)
    half = dh // 2
    idx = torch.arange(half, device=x.device)
    perm = torch.stack((idx, idx + half), dim=-1).reshape(-1)  # 0, h, 1, h+1, ...
    if not interleaved:
        xc = xc.index_select(-1, perm)
    even, odd = xc[..., 0::2], xc[..., 1::2]
    out = torch.empty(torch.broadcast_shapes(xc.shape, cos.shape[:-1] + (dh,)), dtype=compute, device=x.device)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    if not interleaved:
        out = out.index_select(-1, torch.argsort(perm))
    return out.to(x.dtype)
