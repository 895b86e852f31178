"""scaled_positions: uses // (floor division), so positions collapse onto whole numbers and integer input stays integer."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    return positions // factor
