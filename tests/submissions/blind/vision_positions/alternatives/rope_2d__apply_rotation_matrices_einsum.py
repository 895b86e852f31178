# 2D RoPE by explicit 2x2 rotation matrices: R[n, j] = [[cos, -sin], [sin, cos]] for each patch and pair (rows' angles on the first dh/4 pairs, columns' on the rest), applied with einsum to the interleaved pairs; prefix tokens copied
import torch


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    if x.dim() < 2:
        raise ValueError("x must have a token axis and a head axis")
    *lead, n_tok, dh = x.shape
    if dh % 4 != 0 or dh <= 0:
        raise ValueError(f"last axis {dh} is not a positive multiple of 4")
    if grid_h < 1 or grid_w < 1 or prefix_tokens < 0:
        raise ValueError("bad grid or prefix_tokens")
    if n_tok != prefix_tokens + grid_h * grid_w:
        raise ValueError(f"second to last axis {n_tok} != {prefix_tokens} + {grid_h}*{grid_w}")
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rope_2d_angles(grid_h, grid_w, dh, base, device=x.device)  # float32 (N, dh/2)
    if work == torch.float64:  # float64 input: recompute at float64's precision
        idx = torch.arange(dh // 4, dtype=torch.float64, device=x.device)
        theta = float(base) ** (-4.0 * idx / dh)
        n = torch.arange(grid_h * grid_w, device=x.device)
        ang = torch.cat(((n // grid_w).double()[:, None] * theta, (n % grid_w).double()[:, None] * theta), -1)
        cos, sin = ang.cos(), ang.sin()
    rot = torch.stack((torch.stack((cos, -sin), -1), torch.stack((sin, cos), -1)), -2)  # (N, dh/2, 2, 2)
    pairs = x[..., prefix_tokens:, :].to(work).unflatten(-1, (dh // 2, 2))  # (..., N, dh/2, 2)
    turned = torch.einsum("njab,...njb->...nja", rot, pairs).flatten(-2)
    return torch.cat((x[..., :prefix_tokens, :], turned.to(x.dtype)), dim=-2)
