"""relative_positions: builds both axes from length_q (assumes Lq == Lk), so the result is (Lq, Lq) whenever Lk differs."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    if max_relative_position < 0:
        raise ValueError(f"max_relative_position must be 0 or more, got {max_relative_position}")
    k = max_relative_position
    pos = torch.arange(length_q, device=device)
    distance = pos[None, :] - pos[:, None]
    return distance.clamp(-k, k) + k
