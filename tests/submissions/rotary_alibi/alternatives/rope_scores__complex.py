"""rope_scores: q and k as complex pairs turned by e^{i t theta}; the score is Re(q_c . conj(k_c)), a complex matmul."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)
    work = torch.float64 if q.dtype == torch.float64 else torch.float32

    def turned(x, positions):
        if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
            raise ValueError("one position per row")
        cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=work)
        x = x.to(work)
        a, b = (x[..., 0::2], x[..., 1::2]) if interleaved else x.chunk(2, dim=-1)
        return torch.complex(a, b) * torch.complex(cos, sin)  # (..., L, dh/2) complex

    zq, zk = turned(q, positions_q), turned(k, positions_k)
    # Re(sum zq * conj(zk)) is the real dot product of the rotated vectors.
    return ((zq @ zk.conj().transpose(-2, -1)).real * scale).to(q.dtype)
