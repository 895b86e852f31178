"""shaw: builds its own index table from i - j (query minus key) instead of calling clipped_relative_positions (j - i)."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    B, H, Lq, dh = q.shape
    Lk = k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(dh)
    m = max_relative_position
    distance = torch.arange(Lq, device=q.device)[:, None] - torch.arange(Lk, device=q.device)[None, :]
    index = distance.clamp(-m, m) + m
    per_distance = q @ rel_k.to(q.dtype).transpose(0, 1)  # (B, H, Lq, 2k+1)
    relative = per_distance.gather(-1, index.expand(B, H, Lq, Lk))
    return scale * (q @ k.transpose(-2, -1) + relative)
