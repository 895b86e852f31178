"""relative_positions: torch.arange(Lk)[None] - torch.arange(Lq)[:, None] clipped with torch.clip, shifted with add."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    if max_relative_position < 0:
        raise ValueError(f"negative max_relative_position={max_relative_position}")
    rel = torch.arange(length_k, device=device)[None] - torch.arange(length_q, device=device)[:, None]
    return torch.clip(rel, -max_relative_position, max_relative_position).add(max_relative_position)
