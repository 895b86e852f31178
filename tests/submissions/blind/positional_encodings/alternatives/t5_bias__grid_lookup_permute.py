"""t5_bias: the plain way, an (Lq, Lk) grid of j - i, buckets, bias_table[buckets] of shape (Lq, Lk, H), permute and unsqueeze."""
import torch


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    device = bias_table.device
    context = torch.arange(length_q, dtype=torch.long, device=device)[:, None]
    memory = torch.arange(length_k, dtype=torch.long, device=device)[None, :]
    buckets = t5_relative_position_bucket(
        memory - context, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )  # (Lq, Lk)
    values = bias_table[buckets]  # (Lq, Lk, H)
    return values.permute([2, 0, 1]).unsqueeze(0)  # (1, H, Lq, Lk)
