"""apply_rotary: rotate-half handled by permuting coordinates into neighbour pairs with index_select, rotating, and undoing the permutation."""
import torch


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    length, dh = x.shape[-2], x.shape[-1]
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError("positions must end in L entries")
    if dh % 2:
        raise ValueError("dh must be even")
    work = x.to(torch.float64 if x.dtype == torch.float64 else torch.float32)
    cos, sin = rotary_angles(positions, dh, base, dtype=work.dtype)
    if not interleaved:
        order = torch.arange(dh, device=x.device).view(2, dh // 2).t().reshape(-1)  # 0, h, 1, h+1, ...
        work = work.index_select(-1, order)
    a, b = work[..., 0::2], work[..., 1::2]
    out = torch.empty(torch.broadcast_shapes(work.shape, cos.shape[:-1] + (dh,)), dtype=work.dtype, device=x.device)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    if not interleaved:
        out = out.index_select(-1, order.argsort())
    return out.to(x.dtype)
