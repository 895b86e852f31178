"""alibi_bias: distance computed as j - i instead of i - j, so with causal=True the penalties land on the future keys (upper triangle) and the past keys get 0."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = j - i
    distance = distance.clamp(min=0) if causal else distance.abs()
    return (-slopes[:, None, None] * distance.to(slopes.dtype)).unsqueeze(0)
