"""relative_positions: torch.clamp of a broadcast (Lq, 1) - (1, Lk) style difference, then shift by k."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    k = max_relative_position
    if k < 0:
        raise ValueError(f"max_relative_position must be >= 0, got {k}")
    i = torch.arange(length_q, dtype=torch.long, device=device).unsqueeze(1)  # (Lq, 1)
    j = torch.arange(length_k, dtype=torch.long, device=device).unsqueeze(0)  # (1, Lk)
    return torch.clamp(j - i, min=-k, max=k) + k
