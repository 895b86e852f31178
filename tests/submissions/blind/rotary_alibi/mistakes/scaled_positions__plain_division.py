"""scaled_positions: plain positions / factor: float16 stays float16 and float32 input is divided in float32, not float64."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    return positions / factor
