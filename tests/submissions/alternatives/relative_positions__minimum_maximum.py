"""relative_positions: expanded position grids, clipped with torch.minimum / torch.maximum against scalar tensors."""
import torch


def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
    if max_relative_position < 0:
        raise ValueError("max_relative_position cannot be negative: %r" % (max_relative_position,))
    rows = torch.arange(length_q, device=device).view(-1, 1).expand(length_q, length_k)
    cols = torch.arange(length_k, device=device).view(1, -1).expand(length_q, length_k)
    hi = torch.tensor(max_relative_position, device=device)
    clipped = torch.maximum(torch.minimum(cols - rows, hi), -hi)
    return (clipped + hi).to(torch.int64)
