# float16/bfloat16 input: the rotation done in float32 but never rounded back, so the scores come out float32 instead of q's dtype
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
    if positions_q.dim() == 0 or positions_q.shape[-1] != len_q:
        raise ValueError(f"positions_q must end in {len_q} entries, got shape {tuple(positions_q.shape)}")
    if positions_k.dim() == 0 or positions_k.shape[-1] != len_k:
        raise ValueError(f"positions_k must end in {len_k} entries, got shape {tuple(positions_k.shape)}")
    theta = inverse_frequencies.to(device=q.device, dtype=torch.float64)
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32

    def turn(x, positions):
        angle = positions.to(device=x.device, dtype=torch.float64)[..., None] * theta
        cos, sin = angle.cos().to(compute), angle.sin().to(compute)
        a, b = x.to(compute).chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)

    scores = turn(q, positions_q) @ turn(k, positions_k).transpose(-2, -1)
    return scores * (attention_scale / math.sqrt(head_dim))


# differs: scaled_rope_scores(q.half(), k.half(), theta8).dtype  [q = torch.randn(1, 1, 3, 8), k = torch.randn(1, 1, 4, 8), theta8 = torch.tensor([1.0, 0.3, 0.05, 0.002])] -> expected torch.float16, got torch.float32
