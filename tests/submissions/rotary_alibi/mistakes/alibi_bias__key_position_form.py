"""alibi_bias: BLOOM's slope * j (the key's position) instead of -slope * (i - j): the same softmax, not the same bias."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    j = torch.arange(length_k, device=slopes.device, dtype=slopes.dtype)
    bias = slopes[:, None, None] * j[None, None, :]
    return bias.expand(len(slopes), length_q, length_k).unsqueeze(0)
