# the four quarters in timm's build_sincos2d_pos_embed order [sin(row), sin(column), cos(row), cos(column)] instead of [sin(row), cos(row), sin(column), cos(column)]
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4 != 0:
        raise ValueError("dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    omega = float(base) ** (-torch.arange(dim // 4, dtype=torch.float64, device=device) * 4 / dim)
    rr, cc = torch.meshgrid(torch.arange(grid_h, dtype=torch.float64, device=device),
                            torch.arange(grid_w, dtype=torch.float64, device=device), indexing="ij")
    ar = rr.flatten()[:, None] * omega
    ac = cc.flatten()[:, None] * omega
    table = torch.cat((ar.sin(), ac.sin(), ar.cos(), ac.cos()), dim=1)
    out = torch.zeros(prefix_tokens + grid_h * grid_w, dim, dtype=torch.float64, device=device)
    out[prefix_tokens:] = table
    return out.to(dtype)


# differs: sincos_2d_table(1, 2, 4)[1].tolist() -> expected [0.0, 1.0, 0.8414709568, 0.5403022766], got [0.0, 0.8414709568, 1.0, 0.5403022766]
