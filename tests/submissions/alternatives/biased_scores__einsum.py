"""biased_scores: einsum 'bhid,bhjd->bhij', scaled, plus the bias."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    return torch.einsum("bhid,bhjd->bhij", q, k) * scale + bias
