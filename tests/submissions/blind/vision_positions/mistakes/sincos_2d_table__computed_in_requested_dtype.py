# positions, frequencies and angles computed directly in the requested dtype (bfloat16 or float16 when asked for) instead of in float64 and rounded once at the end
import torch


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    if dim <= 0 or dim % 4 != 0:
        raise ValueError("dim must be a positive multiple of 4")
    if grid_h < 1 or grid_w < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    k = torch.arange(dim // 4, dtype=dtype, device=device)
    w = float(base) ** (-4.0 * k / dim)
    n = torch.arange(grid_h * grid_w, device=device)
    r = (n // grid_w).to(dtype)[:, None] * w
    c = (n % grid_w).to(dtype)[:, None] * w
    table = torch.cat((r.sin(), r.cos(), c.sin(), c.cos()), dim=1)
    return torch.cat((torch.zeros(prefix_tokens, dim, dtype=dtype, device=device), table))


# differs: sincos_2d_table(14, 14, 768, dtype=torch.bfloat16)[12, 584].item() -> expected -0.31640625, got -0.267578125
