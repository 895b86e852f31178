"""alibi_bias: the causal mask baked in, -inf at the future keys (j > i) where the bias should be 0 and carry no mask."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    bias = slopes[:, None, None] * (-(i - j).abs()).to(slopes.dtype)
    if causal:
        bias = bias.masked_fill(j > i, float("-inf"))
    return bias.unsqueeze(0)
