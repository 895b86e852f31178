"""t5_bias: buckets of the (Lq, Lk) key-minus-query grid looked up with F.embedding, then permute(2, 0, 1).unsqueeze(0)."""
import torch
import torch.nn.functional as F


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    dev = bias_table.device
    rel = torch.arange(length_k, device=dev)[None, :] - torch.arange(length_q, device=dev)[:, None]
    buckets = t5_relative_position_bucket(rel, bidirectional, num_buckets, max_distance)  # (Lq, Lk)
    return F.embedding(buckets, bias_table).permute(2, 0, 1).unsqueeze(0)
