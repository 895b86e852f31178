# rotate-half pairs as complex numbers a + ib multiplied by torch.polar(1, t * theta) (angles in float64), real and imaginary parts concatenated back, scores by matmul
import math

import torch


def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    dh = q.shape[-1]
    if dh % 2 == 1:
        raise ValueError(f"dh must be even, got {dh}")
    if k.shape[-1] != dh:
        raise ValueError(f"q has dh={dh} but k has dh={k.shape[-1]}")
    if inverse_frequencies.shape != (dh // 2,):
        raise ValueError(f"inverse_frequencies must be ({dh // 2},), got {tuple(inverse_frequencies.shape)}")
    lq, lk = q.shape[-2], k.shape[-2]
    positions_q = torch.arange(lq, device=q.device) if positions_q is None else positions_q
    positions_k = torch.arange(lk, device=k.device) if positions_k is None else positions_k
    if positions_q.ndim == 0 or positions_q.shape[-1] != lq:
        raise ValueError(f"positions_q must end in Lq={lq} entries, got {tuple(positions_q.shape)}")
    if positions_k.ndim == 0 or positions_k.shape[-1] != lk:
        raise ValueError(f"positions_k must end in Lk={lk} entries, got {tuple(positions_k.shape)}")
    real = torch.float64 if q.dtype == torch.float64 else torch.float32
    theta = inverse_frequencies.to(device=q.device, dtype=torch.float64)

    def rotated(x, positions):
        angle = positions.to(device=x.device, dtype=torch.float64).unsqueeze(-1) * theta  # (..., L, dh/2)
        turn = torch.polar(torch.ones_like(angle), angle)  # complex128, e^(i angle)
        turn = turn.to(torch.complex128 if real == torch.float64 else torch.complex64)
        half = x.shape[-1] // 2
        z = torch.complex(x[..., :half].to(real), x[..., half:].to(real)) * turn  # (B, H, L, dh/2)
        return torch.cat((z.real, z.imag), dim=-1).to(x.dtype)

    scores = torch.matmul(rotated(q, positions_q), rotated(k, positions_k).transpose(-1, -2))
    return scores * (attention_scale / math.sqrt(dh))
