# each half rotated with apply_rotary(..., interleaved=False) (rotate-half pairs (i, i + dh/4)) instead of the interleaved pairs (2i, 2i + 1) of the second unit's default
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
    rows = apply_rotary(patches[..., :half], r, base, interleaved=False)
    cols = apply_rotary(patches[..., half:], c, base, interleaved=False)
    return torch.cat((x[..., :prefix_tokens, :], torch.cat((rows, cols), dim=-1)), dim=-2)


# differs: apply_rope_2d(torch.tensor([[0.] * 8, [1., 2, 3, 4, 5, 6, 7, 8]]), 1, 2)[1].tolist() -> expected [1.0, 2.0, 3.0, 4.0, -2.347314358, 7.449168205, 6.166361809, 8.658866882], got [1.0, 2.0, 3.0, 4.0, -3.188785553, 5.171357632, 7.989470482, 8.559034348]
