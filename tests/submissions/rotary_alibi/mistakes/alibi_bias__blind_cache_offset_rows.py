"""alibi_bias: places query i at key position i + Lk - Lq (the KV-cache alignment) instead of counting both from 0: same as the reference when Lq == Lk, wrong when they differ."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    i = torch.arange(length_k - length_q, length_k, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = (i - j).clamp(min=0) if causal else (i - j).abs()
    return (-slopes[:, None, None] * distance.to(slopes.dtype)).unsqueeze(0)
