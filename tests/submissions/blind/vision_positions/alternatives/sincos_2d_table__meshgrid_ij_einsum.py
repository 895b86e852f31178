# sincos table with torch.meshgrid(indexing="ij") for (row, column), angles by einsum against the frequencies, the four blocks stacked then reshaped; prefix rows from torch.zeros
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4:
        raise ValueError("dim must be a positive multiple of 4")
    if min(grid_h, grid_w) < 1:
        raise ValueError("each side of the grid must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    quarter = dim // 4
    k = torch.arange(quarter, dtype=torch.float64, device=device)
    omega = torch.pow(float(base), -4.0 * k / dim)  # (dim/4,) float64
    rows, cols = torch.meshgrid(torch.arange(grid_h, dtype=torch.float64, device=device),
                                torch.arange(grid_w, dtype=torch.float64, device=device), indexing="ij")
    pos = torch.stack((rows.reshape(-1), cols.reshape(-1)))  # (2, N): row then column of each patch
    angles = torch.einsum("an,k->ank", pos, omega)  # (2, N, dim/4)
    blocks = torch.stack((angles.sin(), angles.cos()), dim=1)  # (2 axes, 2 functions, N, dim/4)
    patches = blocks.permute(2, 0, 1, 3).reshape(grid_h * grid_w, dim)  # [sin r, cos r, sin c, cos c]
    zeros = torch.zeros(prefix_tokens, dim, dtype=torch.float64, device=device)
    return torch.cat((zeros, patches)).to(dtype=dtype)
