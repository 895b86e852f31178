"""alibi_bias: query and key index grids, distance i - j, torch.where(j <= i, distance, 0) when causal, abs otherwise; slopes broadcast as (1, H, 1, 1)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.ndim != 1:
        raise ValueError("slopes must have shape (H,)")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    dist = i - j
    if causal:
        dist = torch.where(j <= i, dist, torch.zeros_like(dist))
    else:
        dist = dist.abs()
    return -(slopes.view(1, -1, 1, 1) * dist.to(slopes.dtype))
