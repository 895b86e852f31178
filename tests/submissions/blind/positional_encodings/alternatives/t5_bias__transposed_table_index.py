"""t5_bias: indexes the transposed table, bias_table.T[:, buckets], which lands directly in (H, Lq, Lk), then adds the batch axis with [None]."""
import torch


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    rel = torch.arange(length_k, device=bias_table.device) - torch.arange(length_q, device=bias_table.device).unsqueeze(-1)
    buckets = t5_relative_position_bucket(rel, bidirectional, num_buckets, max_distance)
    return bias_table.T[:, buckets][None]
