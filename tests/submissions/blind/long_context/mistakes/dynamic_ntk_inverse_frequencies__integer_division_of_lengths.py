# length / L taken with integer division (length // trained_length), so s only changes at whole multiples of L
import math

import torch


def dynamic_ntk_inverse_frequencies(head_dim, *, length, trained_length, base=10000.0, factor):
    if head_dim < 4 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and at least 4, got head_dim={head_dim}")
    if not 1.0 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if length < 1 or trained_length < 1:
        raise ValueError(f"length and trained_length must be at least 1, got {length} and {trained_length}")
    grown = max(1.0, factor * (length // trained_length) - (factor - 1))
    return ntk_inverse_frequencies(head_dim, base=base, factor=grown)


# differs: dynamic_ntk_inverse_frequencies(4, length=3072, trained_length=2048, factor=2.0) -> expected float32 [1, 0.005], got float32 [1, 0.01]
