"""alibi_slopes: builds the slopes in NumPy and returns torch.from_numpy(...), i.e. float64 instead of float32."""
import math

import numpy as np
import torch


def alibi_slopes(num_heads, *, device=None):
    if num_heads <= 0:
        raise ValueError("num_heads must be 1 or more")
    c = 2 ** int(math.floor(math.log2(num_heads)))
    main = 2.0 ** (-8.0 * np.arange(1, c + 1) / c)
    extra = 2.0 ** (-4.0 * np.arange(1, 2 * (num_heads - c), 2) / c)
    return torch.from_numpy(np.concatenate([main, extra])).to(device or "cpu")
