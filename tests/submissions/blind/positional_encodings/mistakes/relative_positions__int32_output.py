"""relative_positions: builds the aranges as int32, so the index table is int32 instead of int64."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    if max_relative_position < 0:
        raise ValueError(f"max_relative_position must be 0 or more, got {max_relative_position}")
    k = max_relative_position
    distance = torch.arange(length_k, device=device, dtype=torch.int32)[None, :] - torch.arange(length_q, device=device, dtype=torch.int32)[:, None]
    return distance.clamp(-k, k) + k
