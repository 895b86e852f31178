"""alibi_slopes: only rejects num_heads == 0 (`if num_heads == 0`), so a negative num_heads is not caught and fails later inside torch.arange with a RuntimeError instead of a ValueError."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads == 0:
        raise ValueError("num_heads must be >= 1")
    closest = 2 ** (num_heads.bit_length() - 1)
    ratio = torch.full((), 2.0 ** (-8.0 / closest), device=device, dtype=torch.float32)
    slopes = torch.pow(ratio, torch.arange(1, closest + 1, device=device, dtype=torch.int32))
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), device=device, dtype=torch.float32)
    odd = torch.arange(1, 2 * (num_heads - closest), 2, device=device, dtype=torch.int32)
    return torch.cat((slopes, torch.pow(finer, odd)))
