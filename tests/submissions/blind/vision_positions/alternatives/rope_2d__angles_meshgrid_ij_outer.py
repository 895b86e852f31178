# 2D RoPE angles: meshgrid(indexing="ij") of rows and columns flattened, torch.outer with theta in float64, row block then column block concatenated, cos/sin rounded to float32 once
import torch


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError(f"head_dim must be a positive multiple of 4, got {head_dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError(f"grid sides must be >= 1, got {grid_h} x {grid_w}")
    f64 = dict(dtype=torch.float64, device=device)
    theta = float(base) ** (torch.arange(head_dim // 4, **f64) * (-4.0 / head_dim))
    rows, cols = torch.meshgrid(torch.arange(grid_h, **f64), torch.arange(grid_w, **f64), indexing="ij")
    angle = torch.cat((torch.outer(rows.flatten(), theta), torch.outer(cols.flatten(), theta)), dim=1)
    return torch.cos(angle).to(torch.float32), torch.sin(angle).to(torch.float32)
