"""alibi_slopes: powers counted from 0 (2 ** (-8h/n), h = 0..n-1): the first head's slope is 1, the last above 2 ** -8."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be positive")
    closest = 1 << (num_heads.bit_length() - 1)
    ratio = torch.full((), 2.0 ** (-8.0 / closest), dtype=torch.float32, device=device)
    slopes = torch.pow(ratio, torch.arange(0, closest, dtype=torch.int32, device=device))
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), dtype=torch.float32, device=device)
    odd = torch.arange(0, 2 * (num_heads - closest) - 1, 2, dtype=torch.int32, device=device)
    return torch.cat((slopes, torch.pow(finer, odd)))
