"""alibi_bias: BLOOM's key-position form slope * j, minus each row's constant slope * i, future keys set to 0 when causal."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes: one per head, 1-D")
    s = slopes[:, None, None]
    key = torch.arange(length_k, device=slopes.device, dtype=slopes.dtype)[None, None, :]
    query = torch.arange(length_q, device=slopes.device, dtype=slopes.dtype)[None, :, None]
    bias = s * key - s * query  # BLOOM's bias, then the row constant removed
    future = key > query
    bias = torch.where(future, torch.zeros_like(bias) if causal else -bias, bias)
    return bias.unsqueeze(0)
