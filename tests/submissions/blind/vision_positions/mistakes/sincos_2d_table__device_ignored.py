# the device argument is ignored: the table is always built and returned on the CPU
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4 != 0:
        raise ValueError("dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    w = float(base) ** (-4.0 * torch.arange(dim // 4, dtype=torch.float64) / dim)
    n = torch.arange(grid_h * grid_w)
    r = (n // grid_w).double()[:, None] * w
    c = (n % grid_w).double()[:, None] * w
    table = torch.cat((r.sin(), r.cos(), c.sin(), c.cos()), dim=1)
    return torch.cat((torch.zeros(prefix_tokens, dim, dtype=torch.float64), table)).to(dtype)


# differs: sincos_2d_table(2, 2, 4, device='meta').device -> expected meta, got cpu
