"""alibi_slopes: vectorized exponents (8/c * (1..c), then 4/c * (1, 3, 5, ...)) and 2 ** -exponent in float64, rounded to float32 once; a few ulps (<= 5e-7 relatively) from BLOOM's float32 pow for some n >= 11."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be positive")
    c = 2 ** (num_heads.bit_length() - 1)
    main = torch.arange(1, c + 1, dtype=torch.float64, device=device) * (8.0 / c)
    extra = (2 * torch.arange(num_heads - c, dtype=torch.float64, device=device) + 1) * (4.0 / c)
    exponents = torch.cat((main, extra))
    return torch.exp2(-exponents).to(torch.float32)
