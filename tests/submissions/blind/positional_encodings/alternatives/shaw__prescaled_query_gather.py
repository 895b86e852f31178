"""shaw: scales the query once (q * scale), then matmul for both terms and gather with an explicitly expanded index."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    dh = q.size(-1)
    s = 1.0 / math.sqrt(dh) if scale is None else scale
    qs = q * s  # a new tensor: q itself is left alone
    B, H, Lq, _ = q.shape
    Lk = k.size(-2)
    rel_logits = torch.matmul(qs, rel_k.type_as(q).t())  # (B, H, Lq, 2k+1)
    index = clipped_relative_positions(Lq, Lk, max_relative_position, device=q.device)
    rel_term = torch.gather(rel_logits, 3, index.expand(B, H, Lq, Lk))
    return torch.matmul(qs, k.transpose(-2, -1)) + rel_term
