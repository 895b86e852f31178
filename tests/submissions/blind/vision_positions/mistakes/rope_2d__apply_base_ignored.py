# base not passed on to apply_rotary, which then uses its own default 10000 instead of the given base (100 by default)
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    dh = x.shape[-1]
    if dh <= 0 or dh % 4 != 0:
        raise ValueError("the last axis of x must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("grid sides must be >= 1 and prefix_tokens >= 0")
    if x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError("x.shape[-2] must be prefix_tokens + grid_h * grid_w")
    n = torch.arange(grid_h * grid_w, device=x.device)
    r, c = n // grid_w, n % grid_w
    patches = x[..., prefix_tokens:, :]
    half = dh // 2
    rows = apply_rotary(patches[..., :half], r)
    cols = apply_rotary(patches[..., half:], c)
    return torch.cat((x[..., :prefix_tokens, :], torch.cat((rows, cols), dim=-1)), dim=-2)


# differs: apply_rope_2d(torch.tensor([[0., 0, 0, 0, 0, 0, 0, 0], [1., 0, 1, 0, 1, 0, 1, 0]]), 1, 2)[1].tolist() -> expected [1.0, 0.0, 1.0, 0.0, 0.5403022766, 0.8414709568, 0.9950041771, 0.09983341396], got [1.0, 0.0, 1.0, 0.0, 0.5403022766, 0.8414709568, 0.9999499917, 0.00999983307]
