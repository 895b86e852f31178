"""alibi_slopes: off by one in the exponent: 2 ** (-8 h / n) for h = 0 .. n-1, so the first head gets slope 1."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be 1 or more")
    closest = 1 << (num_heads.bit_length() - 1)
    ratio = torch.full((), 2.0 ** (-8.0 / closest), device=device, dtype=torch.float32)
    slopes = torch.pow(ratio, torch.arange(0, closest, device=device, dtype=torch.int32))
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), device=device, dtype=torch.float32)
    odd = torch.arange(0, 2 * (num_heads - closest) - 1, 2, device=device, dtype=torch.int32)
    return torch.cat((slopes, torch.pow(finer, odd)))
