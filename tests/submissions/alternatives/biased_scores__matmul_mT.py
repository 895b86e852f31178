"""biased_scores: torch.matmul(q, k.mT) * scale + bias."""
import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = q.size(-1) ** -0.5
    return torch.matmul(q, k.mT) * scale + bias
