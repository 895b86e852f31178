"""shaw: memory-naive einsum over a materialised (Lq, Lk, dh) tensor rel_k[index], index computed locally."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    dh = q.size(-1)
    if scale is None:
        scale = 1.0 / math.sqrt(dh)
    Lq, Lk = q.size(-2), k.size(-2)
    m = max_relative_position
    dist = torch.arange(Lk, device=q.device).unsqueeze(0) - torch.arange(Lq, device=q.device).unsqueeze(1)
    index = dist.clamp(-m, m) + m  # (Lq, Lk)
    a_k = rel_k.to(device=q.device, dtype=q.dtype)[index]  # (Lq, Lk, dh)
    content = torch.einsum("bhid,bhjd->bhij", q, k)
    relative = torch.einsum("bhid,ijd->bhij", q, a_k)
    return scale * (content + relative)
