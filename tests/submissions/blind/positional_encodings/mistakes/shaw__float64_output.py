"""shaw: computes everything in float64 "for accuracy" and returns float64 scores even for float32 inputs."""
import math

import torch


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    B, H, Lq, dh = q.shape
    Lk = k.shape[-2]
    if scale is None:
        scale = 1.0 / math.sqrt(dh)
    index = clipped_relative_positions(Lq, Lk, max_relative_position, device=q.device)  # (Lq, Lk)
    q64, k64 = q.double(), k.double()
    per_distance = q64 @ rel_k.double().transpose(0, 1)
    relative = per_distance.gather(-1, index.expand(B, H, Lq, Lk))
    return scale * (q64 @ k64.transpose(-2, -1) + relative)
