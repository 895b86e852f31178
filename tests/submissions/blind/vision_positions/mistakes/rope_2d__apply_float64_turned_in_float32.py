# the arithmetic is always in float32 (x.float()), so a float64 x is turned at float32's precision and rounded, instead of in float64
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    dh = x.shape[-1]
    if dh <= 0 or dh % 4 != 0:
        raise ValueError("the last axis of x must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("grid sides must be >= 1 and prefix_tokens >= 0")
    if x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError("x.shape[-2] must be prefix_tokens + grid_h * grid_w")
    theta = float(base) ** (-4.0 * torch.arange(dh // 4, dtype=torch.float64, device=x.device) / dh)
    n = torch.arange(grid_h * grid_w, device=x.device)
    angle = torch.cat(((n // grid_w).double()[:, None] * theta, (n % grid_w).double()[:, None] * theta), -1)
    cos, sin = angle.cos().float(), angle.sin().float()
    p = x[..., prefix_tokens:, :].float()
    a, b = p[..., 0::2], p[..., 1::2]
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    return torch.cat((x[..., :prefix_tokens, :], turned.to(x.dtype)), dim=-2)


# differs: apply_rope_2d(torch.tensor([[0.1] * 4, [0.1] * 4], dtype=torch.float64), 1, 2)[1, 2].item() -> expected -0.03011686789, got -0.03011686727
