"""alibi_slopes: for n not a power of two, takes the first n slopes of the next power of two above n, instead of the c slopes below plus every other slope of 2c."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be >= 1")
    upper = 1 << (num_heads - 1).bit_length()  # smallest power of two >= n
    ratio = torch.full((), 2.0 ** (-8.0 / upper), device=device, dtype=torch.float32)
    return torch.pow(ratio, torch.arange(1, num_heads + 1, device=device, dtype=torch.int32))
