"""alibi_bias: flattens slopes with view(-1) instead of raising ValueError for a slopes tensor that is not 1-D."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    slopes = slopes.reshape(-1)
    d = torch.arange(length_q, device=slopes.device)[:, None] - torch.arange(length_k, device=slopes.device)[None, :]
    d = d.clamp(min=0) if causal else d.abs()
    return (-slopes[:, None, None] * d.to(slopes.dtype)).unsqueeze(0)
