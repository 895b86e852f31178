"""biased_scores: adds the bias before scaling, scale * (q @ k^T + bias), so the bias is scaled too."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    return scale * (q @ k.transpose(-2, -1) + bias)
