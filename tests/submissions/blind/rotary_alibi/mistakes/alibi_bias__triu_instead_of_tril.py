"""alibi_bias: keeps the upper triangle (future keys) with torch.triu and zeroes the past: the causal penalty sits on the wrong side."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    d = (torch.arange(length_q, device=slopes.device)[:, None] - torch.arange(length_k, device=slopes.device)[None, :]).abs()
    if causal:
        d = torch.triu(d)
    return (-slopes[:, None, None] * d.to(slopes.dtype)).unsqueeze(0)
