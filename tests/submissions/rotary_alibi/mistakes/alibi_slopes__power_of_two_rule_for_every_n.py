"""alibi_slopes: 2 ** (-8 (h+1) / n) for every n, the power-of-two rule used also when n is not a power of two."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be positive")
    h = torch.arange(num_heads, dtype=torch.float64, device=device)
    return (2.0 ** (-8.0 * (h + 1) / num_heads)).to(torch.float32)
