"""rope_scores: LLaMA's apply_rotary_pos_emb written inline (q * cos + rotate(q) * sin with cos/sin of width dh from rotary_angles), then q @ k^T * scale."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    dh = q.shape[-1]
    if scale is None:
        scale = 1 / math.sqrt(dh)
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)
    if positions_q.dim() == 0 or positions_q.shape[-1] != q.shape[-2]:
        raise ValueError("positions_q must end in Lq entries")
    if positions_k.dim() == 0 or positions_k.shape[-1] != k.shape[-2]:
        raise ValueError("positions_k must end in Lk entries")
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32

    def turn(t, p):
        cos, sin = rotary_angles(p, dh, base, dtype=compute)
        t = t.to(compute)
        if interleaved:
            cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
            other = torch.stack((-t[..., 1::2], t[..., 0::2]), -1).flatten(-2)
        else:
            cos, sin = cos.repeat(*([1] * (cos.dim() - 1)), 2), sin.repeat(*([1] * (sin.dim() - 1)), 2)
            other = torch.cat((-t[..., dh // 2 :], t[..., : dh // 2]), -1)
        return t * cos + other * sin

    scores = turn(q, positions_q) @ turn(k, positions_k).transpose(-1, -2) * scale
    return scores.to(q.dtype)
