"""t5_bias: calls t5_relative_position_bucket with its defaults, dropping the bidirectional, num_buckets and max_distance arguments."""
import torch


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    device = bias_table.device
    relative = torch.arange(length_k, device=device)[None, :] - torch.arange(length_q, device=device)[:, None]  # (Lq, Lk)
    buckets = t5_relative_position_bucket(relative)
    return bias_table[buckets].permute(2, 0, 1).unsqueeze(0)
