"""alibi_bias: the distance matrix i - j from broadcast aranges, clamped (causal) or abs, times slopes[:, None, None]."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.ndim != 1:
        raise ValueError("slopes must have shape (H,)")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    d = i - j
    d = d.clamp_min(0) if causal else d.abs()
    return (-slopes[:, None, None] * d.to(slopes.dtype))[None]
