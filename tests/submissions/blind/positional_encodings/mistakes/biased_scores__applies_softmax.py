"""biased_scores: returns softmax over the keys of the biased scores (attention weights) instead of the raw scores."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return torch.softmax(scale * (q @ k.transpose(-2, -1)) + bias, dim=-1)
