"""alibi_slopes: BLOOM float32 torch.pow of the ratio; the extra heads as the 2c-head slopes sliced [0::2]."""
import math

import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError(f"need at least one head, got {num_heads}")
    c = 2 ** math.floor(math.log2(num_heads))

    def slopes_for(count):
        ratio = torch.tensor(2 ** (-8 / count), dtype=torch.float32, device=device)
        return torch.pow(ratio, torch.arange(1, 1 + count, dtype=torch.int32, device=device))

    base = slopes_for(c)
    if c == num_heads:
        return base
    return torch.cat([base, slopes_for(2 * c)[0::2][: num_heads - c]])
