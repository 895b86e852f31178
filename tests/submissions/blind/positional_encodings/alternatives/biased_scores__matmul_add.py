"""biased_scores: the textbook one-liner, torch.matmul(q, k^T) * scale + bias, with k.mT for the transpose."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1 / math.sqrt(q.size(-1))
    return torch.matmul(q, k.mT) * scale + bias
