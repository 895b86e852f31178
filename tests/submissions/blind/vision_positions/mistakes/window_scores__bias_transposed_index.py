# the bias gathered with the transposed index (bias_table[index.T], key minus query), so the bias of offset (r2 - r1, c2 - c1) is added where (r1 - r2, c1 - c2) belongs
import math

import torch


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    n = window_h * window_w
    heads = q.shape[1]
    if q.shape[-2] != n:
        raise ValueError("q must have window_h * window_w patches")
    if tuple(bias_table.shape) != ((2 * window_h - 1) * (2 * window_w - 1), heads):
        raise ValueError("bias_table must be ((2Wh - 1)(2Ww - 1), H)")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(device=q.device, dtype=q.dtype)[index.T].permute(2, 0, 1)
    return torch.baddbmm(bias.expand(q.shape[0], heads, n, n).reshape(-1, n, n),
                         q.reshape(-1, n, q.shape[-1]), k.reshape(-1, n, k.shape[-1]).transpose(1, 2),
                         alpha=scale).view(q.shape[0], heads, n, n)


# differs: window_scores(torch.tensor([[[[1.], [2.]]]]), torch.tensor([[[[1.], [1.]]]]), torch.tensor([[0.0], [0.5], [1.0]]), 1, 2, scale=1)[0, 0].tolist() -> expected [[1.5, 1.0], [3.0, 2.5]], got [[1.5, 2.0], [2.0, 2.5]]
