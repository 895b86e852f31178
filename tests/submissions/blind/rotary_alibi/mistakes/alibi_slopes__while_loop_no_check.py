"""alibi_slopes: finds c with a while loop and never validates n: num_heads=0 or negative returns one slope instead of raising."""
import torch


def alibi_slopes(num_heads, *, device=None):
    c = 1
    while c * 2 <= num_heads:
        c *= 2
    ratio = torch.full((), 2.0 ** (-8.0 / c), device=device, dtype=torch.float32)
    slopes = torch.pow(ratio, torch.arange(1, c + 1, device=device, dtype=torch.int32))
    if num_heads > c:
        finer = torch.full((), 2.0 ** (-4.0 / c), device=device, dtype=torch.float32)
        odd = torch.arange(1, 2 * (num_heads - c), 2, device=device, dtype=torch.int32)
        slopes = torch.cat((slopes, torch.pow(finer, odd)))
    return slopes
