# sincos table: a nested 1D helper builds [sin, cos] for rows and columns, expanded to (gh, gw, dim/2) each, concatenated and flattened; written into a zero-filled float64 buffer after the prefix rows
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim % 4 != 0 or dim < 4:
        raise ValueError("dim: expected a positive multiple of 4")
    if grid_h < 1:
        raise ValueError("grid_h must be >= 1")
    if grid_w < 1:
        raise ValueError("grid_w must be >= 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")

    def half_table(positions, dim_half, base):  # the 1D table of dim_half channels: sines, then cosines
        freqs = base ** (-torch.arange(dim_half // 2, dtype=torch.float64, device=positions.device) / (dim_half / 2))
        angle = positions[:, None] * freqs[None, :]
        return torch.cat([torch.sin(angle), torch.cos(angle)], dim=-1)

    half = dim // 2
    row = half_table(torch.arange(grid_h, device=device).double(), half, float(base))  # (gh, dim/2)
    col = half_table(torch.arange(grid_w, device=device).double(), half, float(base))  # (gw, dim/2)
    grid = torch.cat((row[:, None, :].expand(grid_h, grid_w, half),
                      col[None, :, :].expand(grid_h, grid_w, half)), dim=-1)  # (gh, gw, dim)
    out = torch.zeros(prefix_tokens + grid_h * grid_w, dim, dtype=torch.float64, device=device)
    out[prefix_tokens:] = grid.reshape(-1, dim)
    return out.to(dtype)
