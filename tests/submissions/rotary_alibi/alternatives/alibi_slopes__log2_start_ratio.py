"""alibi_slopes: the paper's start = ratio = 2^(-2^-(log2 n - 3)) from math.log2, as float32, raised by the ** operator."""
import math

import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be positive")

    def powers_of_two(n, count, step):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = torch.tensor(start, dtype=torch.float32, device=device)
        return ratio ** torch.arange(1, 1 + step * count, step, device=device)

    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = powers_of_two(closest, closest, 1)
    if closest < num_heads:
        slopes = torch.cat((slopes, powers_of_two(2 * closest, num_heads - closest, 2)))
    return slopes
