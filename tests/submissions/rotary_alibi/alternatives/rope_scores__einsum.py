"""rope_scores: rotate q and k with apply_rotary, then einsum 'bhid,bhjd->bhij' and the scale last."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    pq = torch.arange(q.shape[2], device=q.device) if positions_q is None else positions_q
    pk = torch.arange(k.shape[2], device=k.device) if positions_k is None else positions_k
    s = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    qr = apply_rotary(q, pq, base, interleaved=interleaved)
    kr = apply_rotary(k, pk, base, interleaved=interleaved)
    return torch.einsum("bhid,bhjd->bhij", qr, kr) * s
