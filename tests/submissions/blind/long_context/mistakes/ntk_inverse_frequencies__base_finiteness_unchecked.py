# base only checked against 1 (base <= 1): an infinite or NaN base is not rejected with ValueError
import math

import torch


def ntk_inverse_frequencies(head_dim, *, base=10000.0, factor):
    if head_dim < 4 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and at least 4, got head_dim={head_dim}")
    if base <= 1:
        raise ValueError(f"base must be above 1, got base={base}")
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    raised = float(base) * float(factor) ** (head_dim / (head_dim - 2))
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float64)
    return (raised ** (-two_i / head_dim)).float()


# differs: ntk_inverse_frequencies(8, base=math.inf, factor=2.0) -> expected ValueError, got float32 [1, 0, 0, 0]
