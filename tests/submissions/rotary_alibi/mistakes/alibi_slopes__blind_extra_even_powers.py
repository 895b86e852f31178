"""alibi_slopes: the extra slopes are taken as [1::2] of the 2c-head slopes (powers 2, 4, 6, ... of the finer ratio), which repeat slopes already used, instead of [0::2] (powers 1, 3, 5, ...)."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be >= 1")
    closest = 1 << (num_heads.bit_length() - 1)
    ratio = torch.full((), 2.0 ** (-8.0 / closest), device=device, dtype=torch.float32)
    slopes = torch.pow(ratio, torch.arange(1, closest + 1, device=device, dtype=torch.int32))
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), device=device, dtype=torch.float32)
    twice = torch.pow(finer, torch.arange(1, 2 * closest + 1, device=device, dtype=torch.int32))
    return torch.cat((slopes, twice[1::2][: num_heads - closest]))
