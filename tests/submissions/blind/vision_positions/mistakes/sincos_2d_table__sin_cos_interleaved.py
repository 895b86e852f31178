# each half laid out as interleaved pairs [sin(p w_0), cos(p w_0), sin(p w_1), cos(p w_1), ...] (the first unit's layout) instead of all the sines then all the cosines
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4 != 0:
        raise ValueError("dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    w = float(base) ** (-4.0 * torch.arange(dim // 4, dtype=torch.float64, device=device) / dim)
    n = torch.arange(grid_h * grid_w, device=device)
    r = (n // grid_w).double()[:, None] * w
    c = (n % grid_w).double()[:, None] * w
    half_r = torch.stack((r.sin(), r.cos()), dim=-1).flatten(1)  # sin, cos, sin, cos, ...
    half_c = torch.stack((c.sin(), c.cos()), dim=-1).flatten(1)
    table = torch.cat((half_r, half_c), dim=1)
    table = torch.cat((table.new_zeros(prefix_tokens, dim), table))
    return table.to(dtype)


# differs: sincos_2d_table(2, 1, 8)[1].tolist() -> expected [0.8414709568, 0.00999983307, 0.5403022766, 0.9999499917, 0.0, 0.0, 1.0, 1.0], got [0.8414709568, 0.5403022766, 0.00999983307, 0.9999499917, 0.0, 1.0, 0.0, 1.0]
