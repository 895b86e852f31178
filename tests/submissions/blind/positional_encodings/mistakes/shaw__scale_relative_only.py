"""shaw: scale multiplies only the relative term; the content term q . k is left unscaled."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    B, H, Lq, dh = q.shape
    Lk = k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(dh)
    index = clipped_relative_positions(Lq, Lk, max_relative_position, device=q.device)  # (Lq, Lk)
    per_distance = q @ rel_k.to(q.dtype).transpose(0, 1)  # (B, H, Lq, 2k+1)
    relative = (scale * per_distance).gather(-1, index.expand(B, H, Lq, Lk))
    return q @ k.transpose(-2, -1) + relative
