# sincos table from two torch.outer products (rows x freqs, columns x freqs) in float64, gathered per patch with r = n // grid_w, c = n % grid_w, prefix zeros via F.pad
import torch
import torch.nn.functional as F


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if not (dim > 0 and dim % 4 == 0):
        raise ValueError(f"dim must be a positive multiple of 4, got {dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError(f"grid must be at least 1 x 1, got {grid_h} x {grid_w}")
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens must not be negative, got {prefix_tokens}")
    f64 = torch.float64
    freqs = torch.pow(torch.tensor(float(base), dtype=f64, device=device),
                      -torch.arange(0, dim, 4, dtype=f64, device=device) / dim)  # 4k/dim, k = 0 .. dim/4 - 1
    row_angles = torch.outer(torch.arange(grid_h, dtype=f64, device=device), freqs)  # (gh, dim/4)
    col_angles = torch.outer(torch.arange(grid_w, dtype=f64, device=device), freqs)  # (gw, dim/4)
    row_half = torch.cat((row_angles.sin(), row_angles.cos()), dim=1)  # (gh, dim/2)
    col_half = torch.cat((col_angles.sin(), col_angles.cos()), dim=1)  # (gw, dim/2)
    n = torch.arange(grid_h * grid_w, device=device)
    table = torch.cat((row_half[n // grid_w], col_half[n % grid_w]), dim=1)  # (gh*gw, dim)
    table = F.pad(table, (0, 0, prefix_tokens, 0))  # zeros before the patches
    return table.to(dtype)
