# dynamic NTK with an explicit branch: RoPE's own frequencies up to L, else ntk_inverse_frequencies at s = factor * (length / L - 1) + 1
import math

import torch


def dynamic_ntk_inverse_frequencies(head_dim, *, length, trained_length, base=10000.0, factor):
    if not math.isfinite(factor) or factor < 1:
        raise ValueError(f"factor must be finite and at least 1, got {factor}")
    if length < 1 or trained_length < 1:
        raise ValueError("length and trained_length must be positive")
    if head_dim < 4 or head_dim % 2:
        raise ValueError("head_dim must be even and at least 4")
    if not 1 < base < math.inf:
        raise ValueError("base must be a finite number above 1")
    if length <= trained_length:  # short text: read as in training
        half = torch.arange(head_dim // 2, dtype=torch.float64)
        return torch.pow(float(base), -2.0 * half / head_dim).float()
    s = factor * (length / trained_length - 1.0) + 1.0
    return ntk_inverse_frequencies(head_dim, base=base, factor=s)
