# head_dim check rejects odd sizes and dh = 2 only (the division by zero), so dh = 0 or a negative even dh returns an empty tensor instead of ValueError
import math

import torch


def ntk_inverse_frequencies(head_dim, *, base=10000.0, factor):
    if head_dim % 2 != 0 or head_dim == 2:
        raise ValueError(f"head_dim must be even and not 2, got head_dim={head_dim}")
    if not 1.0 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    raised = float(base) * float(factor) ** (head_dim / (head_dim - 2))
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float64)
    return (raised ** (-two_i / head_dim)).float()


# differs: ntk_inverse_frequencies(0, factor=2.0) -> expected ValueError, got float32 []
