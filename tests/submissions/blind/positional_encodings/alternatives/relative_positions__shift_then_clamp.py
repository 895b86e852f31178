"""relative_positions: adds k before clamping, clamping j - i + k to [0, 2k], with torch.minimum/maximum on broadcast aranges."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    k = max_relative_position
    if k < 0:
        raise ValueError(f"max_relative_position must be >= 0, got {k}")
    shifted = torch.arange(length_k, device=device).view(1, -1) - torch.arange(length_q, device=device).view(-1, 1) + k
    return torch.minimum(torch.maximum(shifted, torch.zeros_like(shifted)), torch.full_like(shifted, 2 * k))
