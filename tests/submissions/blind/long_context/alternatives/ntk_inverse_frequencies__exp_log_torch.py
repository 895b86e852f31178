# NTK frequencies as exp(-(2i/dh) * (ln base + dh/(dh-2) * ln factor)) on a float64 tensor, cast to float32 at the end
import math

import torch


def ntk_inverse_frequencies(head_dim, *, base=10000.0, factor):
    if head_dim % 2 == 1 or head_dim < 4:
        raise ValueError(f"head_dim must be an even integer of at least 4, got {head_dim!r}")
    if not (math.isfinite(base) and base > 1):
        raise ValueError(f"base must be finite and above 1, got {base!r}")
    if not (math.isfinite(factor) and factor >= 1):
        raise ValueError(f"factor must be finite and at least 1, got {factor!r}")
    log_base = torch.tensor(base, dtype=torch.float64).log() \
        + head_dim / (head_dim - 2) * torch.tensor(factor, dtype=torch.float64).log()  # ln base'
    exponent = torch.arange(head_dim // 2, dtype=torch.float64) * 2 / head_dim  # 2i / dh
    return torch.exp(-exponent * log_base).to(torch.float32)
