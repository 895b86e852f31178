# prefix tokens counted as patches: rows and columns taken from arange(N) over all prefix_tokens + grid_h * grid_w tokens, so the prefix tokens are rotated and every patch gets the place of the patch prefix_tokens before it
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    dh = x.shape[-1]
    if dh <= 0 or dh % 4 != 0:
        raise ValueError("the last axis of x must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("grid sides must be >= 1 and prefix_tokens >= 0")
    if x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError("x.shape[-2] must be prefix_tokens + grid_h * grid_w")
    n = torch.arange(x.shape[-2], device=x.device)
    r, c = n // grid_w, n % grid_w
    half = dh // 2
    return torch.cat((apply_rotary(x[..., :half], r, base), apply_rotary(x[..., half:], c, base)), dim=-1)


# differs: apply_rope_2d(torch.tensor([[1., 0, 1, 0], [1., 0, 1, 0], [1., 0, 1, 0]]), 1, 2, prefix_tokens=1).tolist() -> expected [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.5403022766, 0.8414709568]], got [[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.5403022766, 0.8414709568], [0.5403022766, 0.8414709568, 1.0, 0.0]]
