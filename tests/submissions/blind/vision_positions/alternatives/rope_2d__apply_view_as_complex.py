# 2D RoPE with complex numbers: each interleaved pair (2i, 2i+1) of the patches viewed as complex and multiplied by polar(1, angle), angle = [r*theta | c*theta] over the dh/2 pairs (float64 angles, float32 or float64 arithmetic); prefix copied
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    if x.dim() < 2:
        raise ValueError("x must be (..., N, dh)")
    n_tok, dh = x.shape[-2], x.shape[-1]
    if dh < 4 or dh % 4 != 0:
        raise ValueError(f"the last axis must be a positive multiple of 4, got {dh}")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("grid sides must be >= 1 and prefix_tokens >= 0")
    if n_tok != prefix_tokens + grid_h * grid_w:
        raise ValueError(f"x has {n_tok} tokens, expected {prefix_tokens} + {grid_h} * {grid_w}")
    real = torch.float64 if x.dtype == torch.float64 else torch.float32
    theta = base ** (-torch.arange(0, dh // 2, 2, dtype=torch.float64, device=x.device) / (dh // 2))  # (dh/4,)
    n = torch.arange(grid_h * grid_w, device=x.device, dtype=torch.float64)
    r, c = torch.floor(n / grid_w), torch.remainder(n, grid_w)
    angle = torch.cat((r[:, None] * theta, c[:, None] * theta), dim=-1)  # (N, dh/2): pair j of the whole head
    rot = torch.polar(torch.ones_like(angle), angle).to(torch.complex128 if real == torch.float64 else torch.complex64)
    patches = x[..., prefix_tokens:, :].to(real).reshape(*x.shape[:-2], grid_h * grid_w, dh // 2, 2).contiguous()
    turned = torch.view_as_real(torch.view_as_complex(patches) * rot).flatten(-2)  # (..., N, dh)
    return torch.cat((x[..., :prefix_tokens, :], turned.to(x.dtype)), dim=-2)
