"""rope_scores: "transposes" the keys with reshape(B, H, dh, Lk) instead of transpose(-2, -1): the shapes fit, the scores are scrambled (right only when Lk = 1 or dh = 1)."""
import math

import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    B, H, Lk, dh = k.shape
    if scale is None:
        scale = 1.0 / math.sqrt(dh)
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    if positions_k is None:
        positions_k = torch.arange(Lk, device=k.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)
    return (q_turned * scale) @ k_turned.reshape(B, H, dh, Lk)
