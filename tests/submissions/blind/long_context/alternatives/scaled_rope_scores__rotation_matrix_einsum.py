# explicit 2x2 rotation matrices per position and pair, applied with einsum to the stacked (x[i], x[i + dh/2]) pairs; scores by einsum over dh
import math

import torch


def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    *_, len_q, head_dim = q.shape
    len_k = k.shape[-2]
    if head_dim % 2:
        raise ValueError("dh must be even")
    if k.shape[-1] != head_dim:
        raise ValueError("q and k must have the same dh")
    if tuple(inverse_frequencies.shape) != (head_dim // 2,):
        raise ValueError("inverse_frequencies must have shape (dh/2,)")
    if positions_q is None:
        positions_q = torch.arange(len_q, device=q.device)
    if positions_k is None:
        positions_k = torch.arange(len_k, device=k.device)
    if positions_q.dim() < 1 or positions_q.size(-1) != len_q:
        raise ValueError("positions_q must end in Lq entries")
    if positions_k.dim() < 1 or positions_k.size(-1) != len_k:
        raise ValueError("positions_k must end in Lk entries")
    work = torch.float64 if q.dtype == torch.float64 else torch.float32
    freqs = inverse_frequencies.to(q.device).double()

    def rotate(x, pos):
        angle = torch.einsum("...l,p->...lp", pos.to(x.device).double(), freqs)  # (..., L, dh/2) in float64
        c, s = torch.cos(angle).to(work), torch.sin(angle).to(work)
        matrix = torch.stack((torch.stack((c, -s), dim=-1), torch.stack((s, c), dim=-1)), dim=-2)  # (..., L, P, 2, 2)
        pairs = torch.stack(x.to(work).chunk(2, dim=-1), dim=-1)  # (B, H, L, P, 2)
        turned = torch.einsum("...ij,...j->...i", matrix, pairs)  # (B, H, L, P, 2)
        return torch.cat((turned[..., 0], turned[..., 1]), dim=-1).to(x.dtype)

    scores = torch.einsum("...md,...nd->...mn", rotate(q, positions_q), rotate(k, positions_k))
    return scores * attention_scale / math.sqrt(head_dim)
