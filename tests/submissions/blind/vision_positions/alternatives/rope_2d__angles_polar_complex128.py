# 2D RoPE angles as unit complex numbers: torch.polar(1, angle) in complex128 with angle = [r * theta, c * theta] built by broadcasting; cos = real part, sin = imaginary part, cast to float32
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4:
        raise ValueError("head_dim must be a positive multiple of 4 (two axes of pairs)")
    if grid_h <= 0 or grid_w <= 0:
        raise ValueError("the grid needs at least one row and one column")
    quarter = head_dim // 4
    exponent = torch.arange(quarter, dtype=torch.float64, device=device) * 4 / head_dim
    theta = torch.tensor(float(base), dtype=torch.float64, device=device).pow(-exponent)  # (dh/4,)
    r = torch.arange(grid_h, dtype=torch.float64, device=device)[:, None, None] * theta  # (gh, 1, dh/4)
    c = torch.arange(grid_w, dtype=torch.float64, device=device)[None, :, None] * theta  # (1, gw, dh/4)
    angle = torch.cat(torch.broadcast_tensors(r, c), dim=-1).reshape(grid_h * grid_w, 2 * quarter)
    z = torch.polar(torch.ones_like(angle), angle)
    return z.real.float(), z.imag.float()
