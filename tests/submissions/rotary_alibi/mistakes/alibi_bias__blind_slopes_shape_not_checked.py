"""alibi_bias: no ValueError for slopes that are not one-dimensional: slopes.view(-1, 1, 1) flattens a (H, 1) or scalar slopes tensor and carries on."""
import torch


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    i = torch.arange(length_q, device=slopes.device)[:, None]
    j = torch.arange(length_k, device=slopes.device)[None, :]
    distance = (i - j).clamp(min=0) if causal else (i - j).abs()
    return (-slopes.reshape(-1, 1, 1) * distance.to(slopes.dtype)).unsqueeze(0)
