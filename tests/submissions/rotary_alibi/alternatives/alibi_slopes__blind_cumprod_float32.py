"""alibi_slopes: the geometric sequence as a cumulative product of the float32 ratio (torch.cumprod), the extra heads as every other entry of the 2c sequence; rounding accumulates along the product (a few ulps, well under 1e-5 relatively for n <= 64)."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads < 1:
        raise ValueError("num_heads must be >= 1")
    c = 2 ** (num_heads.bit_length() - 1)
    ratio = torch.full((c,), 2.0 ** (-8.0 / c), dtype=torch.float32, device=device)
    slopes = torch.cumprod(ratio, dim=0)
    if c == num_heads:
        return slopes
    finer = torch.cumprod(torch.full((2 * c,), 2.0 ** (-4.0 / c), dtype=torch.float32, device=device), dim=0)
    return torch.cat((slopes, finer[0::2][: num_heads - c]))
