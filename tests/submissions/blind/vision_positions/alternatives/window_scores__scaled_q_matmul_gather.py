# window scores with the scale folded into q first ((q * scale) @ k^T) and the bias gathered with torch.gather along the offset axis of the table, then added in place to the new score tensor
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    n = window_h * window_w
    h = q.size(1)
    if q.size(2) != n:
        raise ValueError("wrong number of patches in q")
    if bias_table.shape != torch.Size([(2 * window_h - 1) * (2 * window_w - 1), h]):
        raise ValueError("wrong bias_table shape")
    s = (1 / math.sqrt(q.size(-1))) if scale is None else scale
    index = window_relative_index(window_h, window_w, device=bias_table.device).view(-1)  # (N*N,)
    gathered = torch.gather(bias_table, 0, index[:, None].expand(n * n, h))  # (N*N, H)
    bias = gathered.t().reshape(h, n, n).to(device=q.device, dtype=q.dtype)
    scores = torch.matmul(q * s, k.transpose(-1, -2))
    scores += bias
    return scores
