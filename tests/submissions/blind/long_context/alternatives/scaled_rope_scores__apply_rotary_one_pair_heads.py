# the given apply_rotary reused with dh = 2 (where theta_0 = 1): each rotate-half pair becomes its own 2-vector, its positions the float64 angles t * theta_i
import math

import torch


def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    dh = q.shape[-1]
    if dh % 2 != 0 or k.shape[-1] != dh:
        raise ValueError(f"q and k need the same even dh, got {q.shape[-1]} and {k.shape[-1]}")
    if inverse_frequencies.dim() != 1 or inverse_frequencies.shape[0] != dh // 2:
        raise ValueError(f"inverse_frequencies must have shape ({dh // 2},), got {tuple(inverse_frequencies.shape)}")
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)
    theta = inverse_frequencies.to(device=q.device, dtype=torch.float64)

    def turned(x, positions):
        if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
            raise ValueError(f"positions of shape {tuple(positions.shape)} do not end in L={x.shape[-2]} entries")
        a, b = x.chunk(2, dim=-1)  # (B, H, L, P)
        pairs = torch.stack((a, b), dim=-1).transpose(-3, -2)  # (B, H, P, L, 2): one 2-vector per pair and row
        angles = positions.to(device=x.device, dtype=torch.float64)[..., None, :] * theta[:, None]  # (..., P, L)
        out = apply_rotary(pairs, angles, interleaved=True).transpose(-3, -2)  # (B, H, L, P, 2)
        return torch.cat((out[..., 0], out[..., 1]), dim=-1)  # (B, H, L, dh)

    q_turned = turned(q, positions_q)
    k_turned = turned(k, positions_k)
    return (q_turned @ k_turned.transpose(-2, -1)) * (attention_scale / math.sqrt(dh))
