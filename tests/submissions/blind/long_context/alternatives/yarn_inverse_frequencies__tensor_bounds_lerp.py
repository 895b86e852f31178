# YaRN bounds computed on float64 tensors (torch.log, torch.floor/ceil, clamp_min/clamp_max), the blend done with torch.lerp(theta, theta / factor, ramp)
import math

import torch


def yarn_inverse_frequencies(head_dim, *, base=10000.0, factor, trained_length, beta_fast=32.0, beta_slow=1.0,
                             truncate=True):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError("head_dim must be even and positive")
    if not (base > 1 and math.isfinite(base)):
        raise ValueError("base must be a finite number above 1")
    if not (factor >= 1 and math.isfinite(factor)):
        raise ValueError("factor must be finite and at least 1")
    if trained_length < 1:
        raise ValueError("trained_length must be at least 1")
    if not (math.isfinite(beta_fast) and math.isfinite(beta_slow) and beta_slow > 0 and beta_fast > 0
            and beta_slow <= beta_fast):
        raise ValueError("betas must be finite, above 0, with beta_slow <= beta_fast")
    f64 = torch.float64
    betas = torch.tensor([beta_fast, beta_slow], dtype=f64)
    at = head_dim * torch.log(trained_length / (2 * math.pi * betas)) / (2 * torch.log(torch.tensor(base, dtype=f64)))
    low, high = at[0], at[1]
    if truncate:
        low, high = torch.floor(low), torch.ceil(high)
    low = low.clamp_min(0.0)
    high = high.clamp_max(head_dim - 1.0)
    if bool(high == low):
        high = high + 0.001
    index = torch.arange(head_dim // 2, dtype=f64)
    ramp = torch.clamp((index - low) / (high - low), 0.0, 1.0)
    theta = torch.tensor(base, dtype=f64) ** (-2.0 * index / head_dim)
    return torch.lerp(theta, theta / factor, ramp).to(torch.float32)
