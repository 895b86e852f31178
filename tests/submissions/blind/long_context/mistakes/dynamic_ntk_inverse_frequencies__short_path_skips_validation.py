# an early return of RoPE's own frequencies for length <= L placed before the checks of head_dim and base: an odd head_dim or a base <= 1 goes through without ValueError at short lengths
import math

import torch


def dynamic_ntk_inverse_frequencies(head_dim, *, length, trained_length, base=10000.0, factor):
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if length < 1 or trained_length < 1:
        raise ValueError(f"length and trained_length must be at least 1, got {length} and {trained_length}")
    if length <= trained_length:  # nothing to scale: RoPE's own frequencies
        return (base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)).float()
    if head_dim < 4 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and at least 4, got head_dim={head_dim}")
    if not 1.0 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    grown = factor * length / trained_length - (factor - 1)
    return ntk_inverse_frequencies(head_dim, base=base, factor=grown)


# differs: dynamic_ntk_inverse_frequencies(7, length=1000, trained_length=2048, factor=2.0) -> expected ValueError, got float32 [1, 0.0719686, 0.00517947, 0.000372759]
