"""biased_scores: q.mul(scale) @ k.transpose(-1, -2) + bias (q scaled before the product)."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    return q.mul(s) @ k.transpose(-1, -2) + bias
