# Hugging Face style x * cos + rotate_half(x) * sin with cos/sin repeated to dh; the whole factor attention_scale / sqrt(dh) folded into q' before the matmul
import math

import torch


def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    head_dim = q.size(-1)
    if head_dim % 2 != 0:
        raise ValueError("dh is odd")
    if k.size(-1) != head_dim:
        raise ValueError("q and k differ in dh")
    if list(inverse_frequencies.shape) != [head_dim // 2]:
        raise ValueError("inverse_frequencies is not of shape (dh/2,)")
    if positions_q is None:
        positions_q = torch.arange(q.size(-2), device=q.device)
    if positions_k is None:
        positions_k = torch.arange(k.size(-2), device=k.device)
    if positions_q.dim() == 0 or positions_q.size(-1) != q.size(-2):
        raise ValueError("positions_q does not end in Lq entries")
    if positions_k.dim() == 0 or positions_k.size(-1) != k.size(-2):
        raise ValueError("positions_k does not end in Lk entries")
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    freqs = inverse_frequencies.to(q.device, torch.float64)

    def rotate_half(x):
        first, second = x[..., : x.size(-1) // 2], x[..., x.size(-1) // 2:]
        return torch.cat((-second, first), dim=-1)

    def embed(x, positions):
        angle = positions.to(x.device, torch.float64).unsqueeze(-1) * freqs  # (..., L, dh/2)
        angle = torch.cat((angle, angle), dim=-1)  # (..., L, dh): pair i at i and i + dh/2
        wide = x.to(compute)
        return (wide * angle.cos().to(compute) + rotate_half(wide) * angle.sin().to(compute)).to(x.dtype)

    q_rot = embed(q, positions_q) * (attention_scale / math.sqrt(head_dim))
    return q_rot @ embed(k, positions_k).transpose(-1, -2)
