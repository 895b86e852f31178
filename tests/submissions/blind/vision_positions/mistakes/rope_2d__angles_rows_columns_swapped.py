# rows and columns swapped (RoPE-ViT's compute_axial_cis order): the first dh/4 pairs turn with the column and the last dh/4 with the row
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError("head_dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    theta = float(base) ** (-4.0 * torch.arange(head_dim // 4, dtype=torch.float64, device=device) / head_dim)
    n = torch.arange(grid_h * grid_w, device=device)
    t_x = (n % grid_w).double()  # x: the column
    t_y = (n // grid_w).double()  # y: the row
    angle = torch.cat((t_x[:, None] * theta, t_y[:, None] * theta), dim=-1)
    return angle.cos().float(), angle.sin().float()


# differs: rope_2d_angles(2, 2, 4)[1][1].tolist() -> expected [0.0, 0.8414709568], got [0.8414709568, 0.0]
