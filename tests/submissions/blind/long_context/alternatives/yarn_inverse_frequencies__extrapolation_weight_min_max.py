# YaRN as theta * (1 - ramp * (1 - 1/factor)): the ramp clamped with torch.minimum/torch.maximum, bounds with math.floor/math.ceil and min/max builtins
import math

import torch


def yarn_inverse_frequencies(head_dim, *, base=10000.0, factor, trained_length, beta_fast=32.0, beta_slow=1.0,
                             truncate=True):
    if head_dim % 2 != 0 or head_dim <= 0:
        raise ValueError(f"head_dim={head_dim}: must be even and positive")
    if math.isnan(base) or math.isinf(base) or base <= 1:
        raise ValueError(f"base={base}: must be a finite number above 1")
    if math.isnan(factor) or math.isinf(factor) or factor < 1:
        raise ValueError(f"factor={factor}: must be finite and at least 1")
    if trained_length < 1:
        raise ValueError(f"trained_length={trained_length}: must be positive")
    finite = math.isfinite(beta_fast) and math.isfinite(beta_slow)
    if not finite or beta_slow <= 0 or beta_fast <= 0 or beta_slow > beta_fast:
        raise ValueError(f"beta_fast={beta_fast}, beta_slow={beta_slow}: need 0 < beta_slow <= beta_fast, finite")
    log_base = math.log(base)
    pair_fast = head_dim * math.log(trained_length / (2 * math.pi * beta_fast)) / (2 * log_base)
    pair_slow = head_dim * math.log(trained_length / (2 * math.pi * beta_slow)) / (2 * log_base)
    low = max(math.floor(pair_fast) if truncate else pair_fast, 0)
    high = min(math.ceil(pair_slow) if truncate else pair_slow, head_dim - 1)
    span = (high - low) if high != low else 0.001
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    ramp = torch.minimum(torch.maximum((i - low) / span, torch.zeros(())), torch.ones(()))
    theta = torch.exp(-(2 * i / head_dim) * log_base)
    return (theta * (1 - ramp * (1 - 1 / factor))).float()
