# 2D RoPE angles read off the second unit's apply_rotary: float64 unit pairs (1, 0) turned at the rows and at the columns (a head of dh/2 each, so theta_i = base ** (-4i/dh)) give (cos, sin) in their even and odd channels, rounded to float32 once
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError(f"head_dim must be a positive multiple of 4, got {head_dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError(f"grid sides must be at least 1, got {grid_h} x {grid_w}")
    patch = torch.arange(grid_h * grid_w, device=device)
    positions = torch.stack((torch.div(patch, grid_w, rounding_mode="floor"), torch.remainder(patch, grid_w)))  # (2, N)
    unit = torch.zeros(2, grid_h * grid_w, head_dim // 2, dtype=torch.float64, device=device)
    unit[..., 0::2] = 1.0  # every pair (a, b) = (1, 0): turned, it is (cos, sin)
    turned = apply_rotary(unit, positions, base)  # (2, N, dh/2) float64: rows' then columns' pairs
    cos = torch.cat((turned[0, :, 0::2], turned[1, :, 0::2]), dim=-1)
    sin = torch.cat((turned[0, :, 1::2], turned[1, :, 1::2]), dim=-1)
    return cos.to(torch.float32), sin.to(torch.float32)
