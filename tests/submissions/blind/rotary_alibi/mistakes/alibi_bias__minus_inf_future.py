"""alibi_bias: folds the causal mask into the bias: -inf for future keys (j > i) instead of 0."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = (i - j).abs().to(slopes.dtype)
    bias = -slopes[:, None, None] * distance
    if causal:
        bias = bias.masked_fill(j > i, float("-inf"))
    return bias.unsqueeze(0)
