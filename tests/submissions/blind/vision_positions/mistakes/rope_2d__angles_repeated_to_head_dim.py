# each angle repeated for both members of its pair (Hugging Face style, repeat_interleave(2)), so cos and sin are (N, dh) instead of (N, dh/2)
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError("head_dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    theta = float(base) ** (-4.0 * torch.arange(head_dim // 4, dtype=torch.float64, device=device) / head_dim)
    n = torch.arange(grid_h * grid_w, device=device)
    angle = torch.cat(((n // grid_w).double()[:, None] * theta, (n % grid_w).double()[:, None] * theta), dim=-1)
    angle = angle.repeat_interleave(2, dim=-1)  # one angle per channel
    return angle.cos().float(), angle.sin().float()


# differs: tuple(rope_2d_angles(2, 2, 4)[0].shape) -> expected (4, 2), got (4, 4)
