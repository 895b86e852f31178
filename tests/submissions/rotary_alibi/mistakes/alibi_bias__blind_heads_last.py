"""alibi_bias: puts the heads last, shape (1, Lq, Lk, H) (slopes broadcast on the trailing axis), instead of (1, H, Lq, Lk)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = (i - j).clamp(min=0) if causal else (i - j).abs()
    return (-distance.to(slopes.dtype)[..., None] * slopes)[None]
