"""alibi_bias: BLOOM's slope * j (the key's own position) for both causal and causal=False."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    j = torch.arange(length_k, device=slopes.device, dtype=slopes.dtype)
    bias = slopes[:, None, None] * j[None, None, :]  # (H, 1, Lk)
    return bias.expand(-1, length_q, -1).unsqueeze(0).contiguous()
