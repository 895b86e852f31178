"""alibi_slopes: uses 2 ** (-8 (h+1) / n) for every n, also when n is not a power of two (right for 1, 2, 4, 8, ...; wrong for 3, 5, 6, 12, ...)."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be >= 1")
    h = torch.arange(1, num_heads + 1, device=device, dtype=torch.float64)
    return torch.exp2(-8.0 * h / num_heads).to(torch.float32)
