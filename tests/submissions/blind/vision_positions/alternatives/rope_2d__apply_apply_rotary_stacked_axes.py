# 2D RoPE in one apply_rotary call: the two halves of the head stacked on a new axis (..., 2, N_all, dh/2) with positions (2, N_all) = [rows; columns], prefix tokens given position 0 (a zero rotation leaves them as they are)
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    if x.dim() < 2:
        raise ValueError("x must be (..., N, dh)")
    dh = x.shape[-1]
    if dh <= 0 or dh % 4 != 0:
        raise ValueError("x's last axis must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("grid sides must be >= 1, prefix_tokens >= 0")
    if x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError("x's second to last axis must be prefix_tokens + grid_h * grid_w")
    n = torch.arange(grid_h * grid_w, device=x.device)
    pos = torch.stack((n // grid_w, n % grid_w))  # (2, N): rows, columns
    pos = torch.cat((pos.new_zeros(2, prefix_tokens), pos), dim=1)  # prefix at (0, 0)
    halves = x.unflatten(-1, (2, dh // 2)).transpose(-3, -2)  # (..., 2, N_all, dh/2)
    turned = apply_rotary(halves, pos, base)  # interleaved pairs inside each half
    return turned.transpose(-3, -2).flatten(-2)
