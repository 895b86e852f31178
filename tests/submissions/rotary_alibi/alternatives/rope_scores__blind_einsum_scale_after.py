"""rope_scores: rotate q and k with apply_rotary, then einsum over dh and multiply the scores by the scale afterwards."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    dh = q.size(-1)
    s = 1.0 / math.sqrt(dh) if scale is None else scale
    pq = torch.arange(q.size(-2), device=q.device) if positions_q is None else positions_q
    pk = torch.arange(k.size(-2), device=k.device) if positions_k is None else positions_k
    qr = apply_rotary(q, pq, base, interleaved=interleaved)
    kr = apply_rotary(k, pk, base, interleaved=interleaved)
    return torch.einsum("...id,...jd->...ij", qr, kr) * s
