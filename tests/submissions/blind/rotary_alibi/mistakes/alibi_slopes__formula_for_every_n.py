"""alibi_slopes: uses 2 ** (-8 (h + 1) / n) for every n, ignoring the rule for head counts that are not powers of two."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be 1 or more")
    h = torch.arange(1, num_heads + 1, dtype=torch.float64, device=device)
    return torch.pow(2.0, -8.0 * h / num_heads).to(torch.float32)
