"""alibi_bias: key-minus-query offsets by broadcasting two aranges, torch.where for the causal half, slopes as (1, H, 1, 1)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.ndim != 1:
        raise ValueError("slopes must be (H,)")
    i = torch.arange(length_q, device=slopes.device).view(-1, 1)
    j = torch.arange(length_k, device=slopes.device).view(1, -1)
    offset = (j - i).to(slopes.dtype)  # <= 0 for past keys
    if causal:
        offset = torch.where(j <= i, offset, torch.zeros_like(offset))
    else:
        offset = -offset.abs()
    return slopes.view(1, -1, 1, 1) * offset
