# MAE's grid: torch.meshgrid(cols, rows) with the default "xy" indexing and its first array (the column) encoded in the first half, so the halves are [half(c), half(r)] instead of [half(r), half(c)]
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4 != 0:
        raise ValueError(f"dim must be a positive multiple of 4, got {dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    grid_w_pos = torch.arange(grid_w, dtype=torch.float64, device=device)
    grid_h_pos = torch.arange(grid_h, dtype=torch.float64, device=device)
    grid = torch.meshgrid(grid_w_pos, grid_h_pos, indexing="xy")  # as MAE's np.meshgrid(grid_w, grid_h): (gh, gw) each
    omega = torch.arange(dim // 4, dtype=torch.float64, device=device) / (dim / 4)
    omega = 1.0 / float(base) ** omega

    def one_axis(pos):
        out = pos.reshape(-1)[:, None] * omega[None, :]
        return torch.cat((torch.sin(out), torch.cos(out)), dim=1)

    emb = torch.cat((one_axis(grid[0]), one_axis(grid[1])), dim=1)  # grid[0] is the column
    emb = torch.cat((torch.zeros(prefix_tokens, dim, dtype=torch.float64, device=device), emb), dim=0)
    return emb.to(dtype)


# differs: sincos_2d_table(1, 2, 4)[1].tolist() -> expected [0.0, 1.0, 0.8414709568, 0.5403022766], got [0.8414709568, 0.5403022766, 0.0, 1.0]
