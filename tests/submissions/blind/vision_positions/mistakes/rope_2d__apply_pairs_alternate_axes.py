# the pairs alternate between the axes (pair 2i turned by the row, pair 2i + 1 by the column, both at theta_i) instead of the first half of the head for the row and the second half for the column
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    dh = x.shape[-1]
    if dh <= 0 or dh % 4 != 0:
        raise ValueError("the last axis of x must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("grid sides must be >= 1 and prefix_tokens >= 0")
    if x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError("x.shape[-2] must be prefix_tokens + grid_h * grid_w")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    theta = float(base) ** (-4.0 * torch.arange(dh // 4, dtype=torch.float64, device=x.device) / dh)
    n = torch.arange(grid_h * grid_w, device=x.device)
    r = (n // grid_w).double()[:, None] * theta
    c = (n % grid_w).double()[:, None] * theta
    angle = torch.stack((r, c), dim=-1).flatten(1)  # pair 2i: row, pair 2i + 1: column
    cos, sin = angle.cos().to(compute), angle.sin().to(compute)
    p = x[..., prefix_tokens:, :].to(compute)
    a, b = p[..., 0::2], p[..., 1::2]
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)
    return torch.cat((x[..., :prefix_tokens, :], turned), dim=-2)


# differs: apply_rope_2d(torch.tensor([[0.] * 8, [1., 0] * 4]), 1, 2)[1].tolist() -> expected [1.0, 0.0, 1.0, 0.0, 0.5403022766, 0.8414709568, 0.9950041771, 0.09983341396], got [1.0, 0.0, 0.5403022766, 0.8414709568, 1.0, 0.0, 0.9950041771, 0.09983341396]
