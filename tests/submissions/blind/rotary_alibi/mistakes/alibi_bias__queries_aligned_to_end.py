"""alibi_bias: places the queries at the last Lq key positions (i + Lk - Lq) although the contract counts both from 0."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_k - length_q, length_k, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    d = (i - j).clamp(min=0) if causal else (i - j).abs()
    return (-slopes[:, None, None] * d.to(slopes.dtype)).unsqueeze(0)
