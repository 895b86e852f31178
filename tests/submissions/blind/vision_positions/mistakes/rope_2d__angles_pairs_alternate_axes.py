# pairs alternate between the axes (pair 2i turns with the row, pair 2i + 1 with the column, both at theta_i) instead of the first dh/4 pairs for the row and the last dh/4 for the column
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError("head_dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    theta = float(base) ** (-4.0 * torch.arange(head_dim // 4, dtype=torch.float64, device=device) / head_dim)
    n = torch.arange(grid_h * grid_w, device=device)
    r = (n // grid_w).double()[:, None] * theta
    c = (n % grid_w).double()[:, None] * theta
    angle = torch.stack((r, c), dim=-1).flatten(1)  # r0, c0, r1, c1, ...
    return angle.cos().float(), angle.sin().float()


# differs: rope_2d_angles(1, 2, 8)[1][1].tolist() -> expected [0.0, 0.0, 0.8414709568, 0.09983341396], got [0.0, 0.8414709568, 0.0, 0.09983341396]
