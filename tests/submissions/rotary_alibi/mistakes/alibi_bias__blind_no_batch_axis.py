"""alibi_bias: returns shape (H, Lq, Lk), without the leading batch axis of size 1."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = (i - j).clamp(min=0) if causal else (i - j).abs()
    return -slopes[:, None, None] * distance.to(slopes.dtype)
