"""t5_bias: writes into a preallocated torch.zeros buffer of the default dtype, so a float64 (or float16) table gives a float32 bias."""
import torch


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    device = bias_table.device
    relative = torch.arange(length_k, device=device)[None, :] - torch.arange(length_q, device=device)[:, None]  # (Lq, Lk)
    buckets = t5_relative_position_bucket(relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    out = torch.zeros(1, bias_table.shape[1], length_q, length_k, device=device)
    out[0] = bias_table[buckets].permute(2, 0, 1)
    return out
