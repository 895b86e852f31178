"""alibi_bias: distance taken as j - i (key minus query) before the causal clamp: future keys penalised, past keys free."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be one-dimensional")
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    d = (j - i).clamp(min=0) if causal else (j - i).abs()
    return (slopes[:, None, None] * (-d).to(slopes.dtype)).unsqueeze(0)
