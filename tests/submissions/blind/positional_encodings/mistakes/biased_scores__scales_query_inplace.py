"""biased_scores: pre-scales the query with q.mul_(scale), overwriting the caller's q (and failing on a q that requires grad)."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    q.mul_(scale)
    return q @ k.transpose(-2, -1) + bias
