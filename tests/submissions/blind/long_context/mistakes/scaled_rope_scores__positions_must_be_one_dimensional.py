# positions required to be 1-D, (L,): per-sequence positions of shape (B, 1, L) or (B, H, L), which the docstring allows, raise ValueError
import math

import torch


def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    head_dim, len_q, len_k = q.shape[-1], q.shape[-2], k.shape[-2]
    if head_dim % 2 != 0:
        raise ValueError(f"dh must be even, got q of shape {tuple(q.shape)}")
    if k.shape[-1] != head_dim:
        raise ValueError(f"q and k must share dh, got {tuple(q.shape)} and {tuple(k.shape)}")
    if tuple(inverse_frequencies.shape) != (head_dim // 2,):
        raise ValueError(f"inverse_frequencies must have shape ({head_dim // 2},), got "
                         f"{tuple(inverse_frequencies.shape)}")
    if positions_q is None:
        positions_q = torch.arange(len_q, device=q.device)
    if positions_k is None:
        positions_k = torch.arange(len_k, device=k.device)
    if positions_q.dim() != 1 or positions_q.shape[0] != len_q:
        raise ValueError(f"positions_q must have shape ({len_q},), got {tuple(positions_q.shape)}")
    if positions_k.dim() != 1 or positions_k.shape[0] != len_k:
        raise ValueError(f"positions_k must have shape ({len_k},), got {tuple(positions_k.shape)}")
    theta = inverse_frequencies.to(device=q.device, dtype=torch.float64)
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32

    def turn(x, positions):
        angle = positions.to(device=x.device, dtype=torch.float64)[..., None] * theta  # (..., L, dh/2)
        cos, sin = angle.cos().to(compute), angle.sin().to(compute)
        a, b = x.to(compute).chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1).to(x.dtype)

    scores = turn(q, positions_q) @ turn(k, positions_k).transpose(-2, -1)
    return scores * (attention_scale / math.sqrt(head_dim))


# differs: scaled_rope_scores(q.expand(2, 1, 3, 8), k.expand(2, 1, 4, 8), theta8, positions_q=torch.tensor([[[0, 1, 2]], [[5, 6, 7]]]))  [q = torch.randn(1, 1, 3, 8), k = torch.randn(1, 1, 4, 8), theta8 = torch.tensor([1.0, 0.3, 0.05, 0.002])] -> expected float32(2, 1, 3, 4), got ValueError
