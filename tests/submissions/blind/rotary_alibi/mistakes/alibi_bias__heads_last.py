"""alibi_bias: broadcasts the slopes on the last axis (distance[..., None] * slopes), returning (1, Lq, Lk, H)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    d = torch.arange(length_q, device=slopes.device)[:, None] - torch.arange(length_k, device=slopes.device)[None, :]
    d = d.clamp(min=0) if causal else d.abs()
    return (-d.to(slopes.dtype)[..., None] * slopes).unsqueeze(0)
