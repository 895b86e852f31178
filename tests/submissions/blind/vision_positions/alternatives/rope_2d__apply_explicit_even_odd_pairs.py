# 2D RoPE written out without apply_rotary: even channels a, odd channels b of the whole head, pair j < dh/4 turned by r*theta_j and pair dh/4 + j by c*theta_j (rope_2d_angles' layout, recomputed in float64), a' = a cos - b sin, b' = a sin + b cos
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    if x.ndim < 2:
        raise ValueError("x needs a token axis and a channel axis")
    dh = x.shape[-1]
    if dh == 0 or dh % 4:
        raise ValueError("dh must be a positive multiple of 4")
    if min(grid_h, grid_w) < 1:
        raise ValueError("grid sides must be >= 1")
    if prefix_tokens < 0 or x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError("x.shape[-2] must equal prefix_tokens + grid_h * grid_w")
    compute = torch.float64 if x.dtype is torch.float64 else torch.float32
    dev = x.device
    i = torch.arange(dh // 4, dtype=torch.float64, device=dev)
    theta = torch.pow(float(base), -4.0 * i / dh)
    rows = torch.arange(grid_h, dtype=torch.float64, device=dev).repeat_interleave(grid_w)  # r of each patch
    cols = torch.arange(grid_w, dtype=torch.float64, device=dev).repeat(grid_h)  # c of each patch
    angle = torch.cat((rows[:, None] * theta, cols[:, None] * theta), dim=1)  # (N, dh/2)
    cos, sin = angle.cos().to(compute), angle.sin().to(compute)
    p = x[..., prefix_tokens:, :].to(compute)
    a, b = p[..., 0::2], p[..., 1::2]
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    out = torch.empty_like(x)
    out[..., :prefix_tokens, :] = x[..., :prefix_tokens, :]
    out[..., prefix_tokens:, :] = turned.to(x.dtype)
    return out
