"""alibi_slopes: the first n slopes of the next power of two, instead of c slopes then every other one of 2c."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be positive")
    upper = 1 << (num_heads - 1).bit_length()  # the smallest power of two >= num_heads
    ratio = torch.full((), 2.0 ** (-8.0 / upper), dtype=torch.float32, device=device)
    return torch.pow(ratio, torch.arange(1, upper + 1, dtype=torch.int32, device=device))[:num_heads]
