"""rope_scores: rsqrt default scale folded into the keys, matmul against .mT."""
import torch


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    if scale is None:
        scale = torch.tensor(float(q.size(-1)), dtype=torch.float64).rsqrt().item()
    Lq, Lk = q.size(-2), k.size(-2)
    positions_q = torch.arange(Lq, device=q.device) if positions_q is None else positions_q
    positions_k = torch.arange(Lk, device=k.device) if positions_k is None else positions_k
    q_rot = apply_rotary(q, positions_q, base=base, interleaved=interleaved)
    k_rot = apply_rotary(k, positions_k, base=base, interleaved=interleaved)
    return torch.matmul(q_rot, (k_rot * scale).mT)
