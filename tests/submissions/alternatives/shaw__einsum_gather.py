"""shaw: q scaled first, einsum 'bhqd,bhkd->bhqk' and 'bhqd,rd->bhqr' (rel_k cast to q's dtype), gather over an expanded index from clipped_relative_positions."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    qs = q * scale
    content = torch.einsum("bhqd,bhkd->bhqk", qs, k)
    per_distance = torch.einsum("bhqd,rd->bhqr", qs, rel_k.to(dtype=q.dtype, device=q.device))
    index = clipped_relative_positions(q.shape[-2], k.shape[-2], max_relative_position, device=q.device)
    index = index.expand(q.shape[0], q.shape[1], -1, -1)  # (B, H, Lq, Lk)
    return content + torch.gather(per_distance, dim=3, index=index)
