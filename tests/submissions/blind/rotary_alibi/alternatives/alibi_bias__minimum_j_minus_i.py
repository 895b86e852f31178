"""alibi_bias: slope * min(j - i, 0) (causal) or slope * -|j - i|, via view(1, H, 1, 1) broadcasting."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if len(slopes.shape) != 1:
        raise ValueError("slopes must be one-dimensional")
    rel = torch.arange(length_k, device=slopes.device).view(1, -1) - torch.arange(length_q, device=slopes.device).view(-1, 1)
    rel = torch.minimum(rel, torch.zeros_like(rel)) if causal else -rel.abs()
    return slopes.view(1, -1, 1, 1) * rel.to(slopes.dtype).expand(1, 1, length_q, length_k)
