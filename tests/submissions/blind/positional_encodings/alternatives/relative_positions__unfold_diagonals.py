"""relative_positions: clips the Lq + Lk - 1 distinct offsets once, then reads row i as a sliding window (unfold) and flips the rows."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    if max_relative_position < 0:
        raise ValueError(f"max_relative_position={max_relative_position} must be >= 0")
    k = max_relative_position
    if length_q == 0 or length_k == 0:
        return torch.empty(length_q, length_k, dtype=torch.long, device=device)
    offsets = torch.arange(-(length_q - 1), length_k, device=device).clamp(-k, k) + k  # offsets -(Lq-1) .. Lk-1
    # window a starts at offset a - (Lq - 1): that is query Lq - 1 - a, so flip the windows
    return offsets.unfold(0, length_k, 1).flip(0).contiguous()
