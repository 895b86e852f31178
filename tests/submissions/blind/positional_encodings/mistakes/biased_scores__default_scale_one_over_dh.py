"""biased_scores: default scale is 1 / dh instead of 1 / sqrt(dh)."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = 1.0 / q.shape[-1]
    return scale * (q @ k.transpose(-2, -1)) + bias
