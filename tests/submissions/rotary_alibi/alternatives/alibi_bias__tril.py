"""alibi_bias: the (Lq, Lk) matrix of i - j, kept below the diagonal with torch.tril when causal, |i - j| otherwise."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError(f"expected 1-D slopes, got {slopes.dim()}-D")
    rows = torch.arange(length_q, dtype=slopes.dtype, device=slopes.device)
    cols = torch.arange(length_k, dtype=slopes.dtype, device=slopes.device)
    back = rows[:, None] - cols[None, :]
    back = torch.tril(back) if causal else back.abs()
    return (-slopes[None, :, None, None]) * back[None, None]
