"""rope_scores: the default scale 1 / sqrt(dh) forgotten: every score sqrt(dh) times too large."""
import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)
    scores = q_turned @ k_turned.transpose(-2, -1)
    return scores if scale is None else scores * scale
