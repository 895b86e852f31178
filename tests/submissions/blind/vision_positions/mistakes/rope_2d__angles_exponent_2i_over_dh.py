# frequencies of the full head, theta_i = base ** (-2i / dh), instead of base ** (-4i / dh) (each half is a rotation of dh/2 channels)
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError("head_dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    i = torch.arange(head_dim // 4, dtype=torch.float64, device=device)
    theta = float(base) ** (-2.0 * i / head_dim)
    rows, cols = torch.meshgrid(torch.arange(grid_h, dtype=torch.float64, device=device),
                                torch.arange(grid_w, dtype=torch.float64, device=device), indexing="ij")
    angle = torch.cat((rows.reshape(-1, 1) * theta, cols.reshape(-1, 1) * theta), dim=1)
    return angle.cos().float(), angle.sin().float()


# differs: rope_2d_angles(2, 1, 8)[0][1].tolist() -> expected [0.5403022766, 0.9950041771, 1.0, 1.0], got [0.5403022766, 0.9504152536, 1.0, 1.0]
