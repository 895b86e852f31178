"""shaw: einsum for both products and torch.take_along_dim (which broadcasts the (Lq, Lk) index) to pick the relative term."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    if scale is None:
        scale = q.shape[-1] ** -0.5
    Lq, Lk = q.shape[-2], k.shape[-2]
    content = torch.einsum("bhid,bhjd->bhij", q, k)
    per_distance = torch.einsum("bhid,rd->bhir", q, rel_k.to(q.dtype))  # (B, H, Lq, 2k+1)
    idx = clipped_relative_positions(Lq, Lk, max_relative_position, device=q.device)  # (Lq, Lk)
    relative = torch.take_along_dim(per_distance, idx[None, None], dim=-1)  # (B, H, Lq, Lk)
    return scale * (content + relative)
