"""alibi_bias: heads on the last axis, (1, Lq, Lk, H), instead of before the positions, (1, H, Lq, Lk)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    d = (i - j).clamp(min=0) if causal else (i - j).abs()
    return (-d.to(slopes.dtype))[None, :, :, None] * slopes
