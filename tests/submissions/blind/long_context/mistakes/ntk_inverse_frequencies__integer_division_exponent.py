# the exponent dh / (dh - 2) written with integer division, head_dim // (head_dim - 2), which is 1 for every dh above 4
import math

import torch


def ntk_inverse_frequencies(head_dim, *, base=10000.0, factor):
    if head_dim < 4 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and at least 4, got head_dim={head_dim}")
    if not 1.0 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    raised = float(base) * float(factor) ** (head_dim // (head_dim - 2))
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float64)
    return (raised ** (-two_i / head_dim)).float()


# differs: ntk_inverse_frequencies(8, factor=4.0) -> expected float32 [1, 0.0629961, 0.0039685, 0.00025], got float32 [1, 0.0707107, 0.005, 0.000353553]
