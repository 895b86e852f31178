"""alibi_slopes: a tensor filled with the float32 ratio, raised elementwise to float32 powers, BLOOM's call shapes kept."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads < 1:
        raise ValueError(f"num_heads={num_heads}: need at least one head")
    c = 2 ** (num_heads.bit_length() - 1)
    ratio = torch.full((c,), 2.0 ** (-8.0 / c), dtype=torch.float32, device=device)
    slopes = ratio.pow(torch.arange(1, c + 1, dtype=torch.float32, device=device))
    rest = num_heads - c
    if rest == 0:
        return slopes
    finer = torch.full((rest,), 2.0 ** (-8.0 / (2 * c)), dtype=torch.float32, device=device)
    return torch.cat([slopes, finer.pow(torch.arange(1, 2 * rest, 2, dtype=torch.float32, device=device))])
