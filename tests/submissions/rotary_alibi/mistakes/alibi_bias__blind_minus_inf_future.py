"""alibi_bias: with causal=True fills the future keys (j > i) with -inf (a built-in mask) instead of 0."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    bias = -slopes[:, None, None] * (i - j).abs().to(slopes.dtype)
    if causal:
        bias = bias.masked_fill(j > i, float("-inf"))
    return bias.unsqueeze(0)
