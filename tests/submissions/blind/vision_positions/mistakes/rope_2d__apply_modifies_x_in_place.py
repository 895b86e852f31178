# the turned halves are written back into x (x[..., prefix:, :dh/2] = ...) and x itself is returned, so the caller's tensor is modified in place
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
    patches[..., :half] = apply_rotary(patches[..., :half], r, base)
    patches[..., half:] = apply_rotary(patches[..., half:], c, base)
    return x


# differs: (lambda x: (apply_rope_2d(x, 1, 2), x[1].tolist())[1])(torch.tensor([[0., 0, 0, 0], [1., 0, 1, 0]])) -> expected [1.0, 0.0, 1.0, 0.0], got [1.0, 0.0, 0.5403022766, 0.8414709568]
