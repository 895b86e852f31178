# frequencies w_k = base ** (-2k / dim) (the 1D table's exponent over the full width) instead of base ** (-4k / dim) = base ** (-k / (D/2)) for each half of D = dim/2 channels
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4 != 0:
        raise ValueError("dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    k = torch.arange(dim // 4, dtype=torch.float64, device=device)
    w = float(base) ** (-2.0 * k / dim)
    rows = torch.outer(torch.arange(grid_h, dtype=torch.float64, device=device), w)
    cols = torch.outer(torch.arange(grid_w, dtype=torch.float64, device=device), w)
    row_half = torch.cat((rows.sin(), rows.cos()), 1)[:, None, :].expand(grid_h, grid_w, dim // 2)
    col_half = torch.cat((cols.sin(), cols.cos()), 1)[None, :, :].expand(grid_h, grid_w, dim // 2)
    table = torch.cat((row_half, col_half), -1).reshape(grid_h * grid_w, dim)
    return torch.cat((torch.zeros(prefix_tokens, dim, dtype=torch.float64, device=device), table)).to(dtype)


# differs: sincos_2d_table(2, 1, 8)[1].tolist() -> expected [0.8414709568, 0.00999983307, 0.5403022766, 0.9999499917, 0.0, 0.0, 1.0, 1.0], got [0.8414709568, 0.09983341396, 0.5403022766, 0.9950041771, 0.0, 0.0, 1.0, 1.0]
