"""alibi_bias: |i - j| as a float matrix, .tril() to zero the future keys when causal, then -slopes[:, None, None] * distance, unsqueezed to (1, H, Lq, Lk)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if len(slopes.shape) != 1:
        raise ValueError(f"slopes must be 1-D, got {tuple(slopes.shape)}")
    rows = torch.arange(length_q, device=slopes.device, dtype=slopes.dtype)
    cols = torch.arange(length_k, device=slopes.device, dtype=slopes.dtype)
    distance = (rows[:, None] - cols[None, :]).abs()
    if causal:
        distance = distance.tril()
    return (-slopes[:, None, None] * distance).unsqueeze(0)
