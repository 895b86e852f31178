"""scaled_positions: positions = positions.float(); positions /= factor: for float32 input .float() is the same tensor, so the caller's positions are divided in place."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    if positions.dtype == torch.float64:
        return positions / factor
    positions = positions.float()
    positions /= factor
    return positions
