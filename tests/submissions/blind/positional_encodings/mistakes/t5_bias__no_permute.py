"""t5_bias: returns the lookup bias_table[buckets] with only a leading axis added, (1, Lq, Lk, H), without moving the head axis first."""
import torch


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    device = bias_table.device
    relative = torch.arange(length_k, device=device)[None, :] - torch.arange(length_q, device=device)[:, None]  # (Lq, Lk)
    buckets = t5_relative_position_bucket(relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    return bias_table[buckets].unsqueeze(0)
