"""rope_scores: the relative form, q . R(n - m) k, with an angle for every (query, key) pair (memory O(Lq Lk dh))."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    pq = torch.arange(lq, device=q.device) if positions_q is None else positions_q
    pk = torch.arange(lk, device=k.device) if positions_k is None else positions_k
    if pq.dim() == 0 or pq.shape[-1] != lq or pk.dim() == 0 or pk.shape[-1] != lk:
        raise ValueError("one position per row of q and of k")
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    cos, sin = rotary_angles(pk[..., None, :] - pq[..., :, None], d, base, dtype=work)  # (..., Lq, Lk, dh/2)
    qw, kw = q.to(work), k.to(work)
    qa, qb = (qw[..., 0::2], qw[..., 1::2]) if interleaved else qw.chunk(2, dim=-1)
    ka, kb = (kw[..., 0::2], kw[..., 1::2]) if interleaved else kw.chunk(2, dim=-1)
    # q . R(delta) k per pair: qa (ka cos - kb sin) + qb (ka sin + kb cos)
    aa = qa[..., :, None, :] * ka[..., None, :, :]
    bb = qb[..., :, None, :] * kb[..., None, :, :]
    ab = qa[..., :, None, :] * kb[..., None, :, :]
    ba = qb[..., :, None, :] * ka[..., None, :, :]
    scores = ((aa + bb) * cos + (ba - ab) * sin).sum(-1)
    return (scores * scale).to(q.dtype)
