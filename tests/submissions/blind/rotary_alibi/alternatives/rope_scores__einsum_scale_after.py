"""rope_scores: float default positions, rotation via apply_rotary, scores by einsum and the scale applied afterwards."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    dh = q.shape[-1]
    s = 1.0 / math.sqrt(dh) if scale is None else scale
    pq = torch.arange(q.shape[-2], dtype=torch.float64, device=q.device) if positions_q is None else positions_q
    pk = torch.arange(k.shape[-2], dtype=torch.float64, device=k.device) if positions_k is None else positions_k
    qr = apply_rotary(q, pq, base, interleaved=interleaved)
    kr = apply_rotary(k, pk, base, interleaved=interleaved)
    return torch.einsum("bhid,bhjd->bhij", qr, kr) * s
