# NTK frequencies as RoPE's own theta_i divided by factor ** (2i/(dh-2)), the exponents from torch.linspace(0, 1, dh/2), in float64
import math

import torch


def ntk_inverse_frequencies(head_dim, *, base=10000.0, factor):
    if head_dim % 2 or head_dim < 4:
        raise ValueError("head_dim must be even and at least 4")
    if math.isnan(base) or math.isinf(base) or base <= 1:
        raise ValueError("base must be a finite number above 1")
    if math.isnan(factor) or math.isinf(factor) or factor < 1:
        raise ValueError("factor must be finite and at least 1")
    pairs = head_dim // 2
    plain = torch.pow(torch.tensor(float(base), dtype=torch.float64),
                      -torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)  # theta_i
    share = torch.linspace(0.0, 1.0, pairs, dtype=torch.float64)  # 2i / (dh - 2): 0 for pair 0, 1 for the last
    slowdown = torch.pow(torch.tensor(float(factor), dtype=torch.float64), share)
    return (plain / slowdown).float()
