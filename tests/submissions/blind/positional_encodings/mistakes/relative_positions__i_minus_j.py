"""relative_positions: distance computed as query minus key (i - j) instead of key minus query (j - i)."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    if max_relative_position < 0:
        raise ValueError(f"max_relative_position must be 0 or more, got {max_relative_position}")
    k = max_relative_position
    distance = torch.arange(length_q, device=device)[:, None] - torch.arange(length_k, device=device)[None, :]
    return distance.clamp(-k, k) + k
