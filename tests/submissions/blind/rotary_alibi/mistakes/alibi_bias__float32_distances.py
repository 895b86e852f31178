"""alibi_bias: builds the distances with torch.arange(..., dtype=torch.float32) and returns float32 whatever the slopes' dtype."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_q, dtype=torch.float32, device=slopes.device)[:, None]
    j = torch.arange(length_k, dtype=torch.float32, device=slopes.device)[None, :]
    d = (i - j).clamp(min=0) if causal else (i - j).abs()
    return (-slopes.float()[:, None, None] * d).unsqueeze(0)
