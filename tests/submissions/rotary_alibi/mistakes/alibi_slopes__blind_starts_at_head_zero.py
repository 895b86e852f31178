"""alibi_slopes: slope_h = ratio ** h for h = 0 .. c-1 (powers 0 .. c-1), so the first head gets slope 1 and the last 2 ** (-8 (c-1) / c), not 2 ** -8."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be >= 1")
    closest = 1 << (num_heads.bit_length() - 1)
    ratio = torch.full((), 2.0 ** (-8.0 / closest), device=device, dtype=torch.float32)
    slopes = torch.pow(ratio, torch.arange(0, closest, device=device, dtype=torch.int32))
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), device=device, dtype=torch.float32)
    odd = torch.arange(0, 2 * (num_heads - closest) - 1, 2, device=device, dtype=torch.int32)
    return torch.cat((slopes, torch.pow(finer, odd)))
