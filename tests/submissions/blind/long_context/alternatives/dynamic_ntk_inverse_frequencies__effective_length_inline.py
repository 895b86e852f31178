# dynamic NTK written out Hugging Face style: length taken as max(length, L), base' = base * (f*n/L - f + 1) ** (dh/(dh-2)), no call to ntk_inverse_frequencies
import math

import torch


def dynamic_ntk_inverse_frequencies(head_dim, *, length, trained_length, base=10000.0, factor):
    if head_dim % 2 != 0 or head_dim < 4:
        raise ValueError(f"head_dim must be even and >= 4, got {head_dim}")
    if not (1 < base and math.isfinite(base)):
        raise ValueError(f"base must be a finite number above 1, got {base}")
    if not (factor >= 1 and math.isfinite(factor)):
        raise ValueError(f"factor must be finite and >= 1, got {factor}")
    if length < 1:
        raise ValueError(f"length must be at least 1, got {length}")
    if trained_length < 1:
        raise ValueError(f"trained_length must be at least 1, got {trained_length}")
    seen = max(length, trained_length)  # never below L
    scale = factor * seen / trained_length - (factor - 1)  # 1 at L, factor at factor * L
    new_base = base * scale ** (head_dim / (head_dim - 2))
    two_i = torch.arange(0, head_dim, 2).to(torch.float64)
    return (1.0 / new_base ** (two_i / head_dim)).to(torch.float32)
