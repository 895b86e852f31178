"""alibi_bias: relative position j - i (key minus query), clamped at 0 from above when causal, minus its absolute value otherwise, times the slopes via einsum."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("expected one slope per head")
    rel = torch.arange(length_k, device=slopes.device)[None, :] - torch.arange(length_q, device=slopes.device)[:, None]
    rel = rel.clamp(max=0) if causal else -rel.abs()
    return torch.einsum("h,qk->hqk", slopes, rel.to(slopes.dtype))[None]
