# the "high + 0.001 where high == low" guard left out: when the bounds meet on a whole pair (both clamped to 0 for a short L, say), that pair gets 0/0 = NaN
import math

import torch


def yarn_inverse_frequencies(head_dim, *, base=10000.0, factor, trained_length, beta_fast=32.0, beta_slow=1.0,
                             truncate=True):
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and positive, got head_dim={head_dim}")
    if not 1.0 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if trained_length < 1:
        raise ValueError(f"trained_length must be at least 1, got {trained_length}")
    if not 0.0 < beta_slow <= beta_fast < math.inf:
        raise ValueError(f"need finite betas with 0 < beta_slow <= beta_fast, got {beta_fast}, {beta_slow}")

    def pair(beta):
        return head_dim * math.log(trained_length / (2 * math.pi * beta)) / (2 * math.log(base))

    low, high = pair(beta_fast), pair(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    theta = base ** (-2 * i / head_dim)
    ramp = ((i - low) / (high - low)).clamp(0.0, 1.0)
    return ((1 - ramp) * theta + ramp * theta / factor).float()


# differs: yarn_inverse_frequencies(8, factor=4.0, trained_length=6) -> expected float32 [1, 0.025, 0.0025, 0.00025], got float32 [nan, 0.025, 0.0025, 0.00025]
