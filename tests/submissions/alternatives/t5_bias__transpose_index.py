"""t5_bias: advanced indexing on the transposed table, bias_table.T[:, buckets][None]."""
import torch


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    q_pos = torch.arange(length_q, device=bias_table.device).unsqueeze(-1)
    k_pos = torch.arange(length_k, device=bias_table.device).unsqueeze(0)
    buckets = t5_relative_position_bucket(
        k_pos - q_pos, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    return bias_table.T[:, buckets][None]
