"""shaw: q @ rel_k.T per distance, entries picked with torch.take_along_dim using a broadcast (1, 1, Lq, Lk) index; each term scaled separately."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    if scale is None:
        scale = q.shape[-1] ** -0.5
    n_q, n_k = q.shape[-2], k.shape[-2]
    r = max_relative_position
    offsets = torch.arange(n_k, device=q.device)[None, :] - torch.arange(n_q, device=q.device)[:, None]
    index = torch.clip(offsets, -r, r) + r  # (Lq, Lk)
    per_distance = torch.matmul(q, rel_k.to(q.dtype).T)  # (B, H, Lq, 2r+1)
    relative = torch.take_along_dim(per_distance, index[None, None], dim=-1)  # (B, H, Lq, Lk)
    content = torch.matmul(q, k.transpose(-1, -2))
    return content * scale + relative * scale
