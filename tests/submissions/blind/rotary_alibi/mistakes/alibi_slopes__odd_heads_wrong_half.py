"""alibi_slopes: takes the extra slopes with [1::2] (2nd, 4th, ... of the 2c slopes), which repeat slopes already used."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be 1 or more")
    closest = 1 << (num_heads.bit_length() - 1)
    ratio = torch.full((), 2.0 ** (-8.0 / closest), device=device, dtype=torch.float32)
    slopes = torch.pow(ratio, torch.arange(1, closest + 1, device=device, dtype=torch.int32))
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), device=device, dtype=torch.float32)
    extra = torch.pow(finer, torch.arange(1, 2 * closest + 1, device=device, dtype=torch.int32))[1::2]
    return torch.cat((slopes, extra[: num_heads - closest]))
