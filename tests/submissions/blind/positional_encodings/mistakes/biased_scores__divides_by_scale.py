"""biased_scores: treats scale as the divisor (default sqrt(dh), q @ k^T / scale), so an explicit scale such as 0.5 divides instead of multiplying."""
import math

import torch


def biased_scores(q, k, bias, *, scale=None):
    if scale is None:
        scale = math.sqrt(q.shape[-1])
    return q @ k.transpose(-2, -1) / scale + bias
