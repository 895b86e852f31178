"""alibi_bias: uses -slope * |i - j| whatever causal says, so the future keys of a causal bias are penalised instead of 0."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = (i - j).abs()
    return (-slopes[:, None, None] * distance.to(slopes.dtype)).unsqueeze(0)
