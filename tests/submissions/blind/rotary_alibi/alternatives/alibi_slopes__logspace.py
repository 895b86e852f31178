"""alibi_slopes: torch.logspace in float64 with the float32-rounded ratio as base, rounded to float32."""
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads < 1:
        raise ValueError("num_heads < 1")
    c = 1
    while 2 * c <= num_heads:  # a loop over powers of two, not positions
        c *= 2
    r = torch.tensor(2.0 ** (-8.0 / c), dtype=torch.float32).item()
    main = torch.logspace(1, c, c, base=r, dtype=torch.float64, device=device)
    extra_n = num_heads - c
    if extra_n:
        r2 = torch.tensor(2.0 ** (-4.0 / c), dtype=torch.float32).item()
        extra = torch.logspace(1, 2 * extra_n - 1, extra_n, base=r2, dtype=torch.float64, device=device)
        main = torch.cat((main, extra))
    return main.to(torch.float32)
