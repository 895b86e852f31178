# the offset taken as the key's patch minus the query's (r2 - r1, c2 - c1), so the index is the transpose of Swin's (query minus key)
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h < 1 or window_w < 1:
        raise ValueError("window sides must be at least 1")
    coords = torch.stack(torch.meshgrid(torch.arange(window_h, device=device),
                                        torch.arange(window_w, device=device), indexing="ij")).flatten(1)  # (2, N)
    relative = coords[:, None, :] - coords[:, :, None]  # (2, N, N): [n1, n2] -> key minus query
    relative = relative.permute(1, 2, 0).contiguous()
    relative[:, :, 0] += window_h - 1
    relative[:, :, 1] += window_w - 1
    relative[:, :, 0] *= 2 * window_w - 1
    return relative.sum(-1)


# differs: window_relative_index(1, 2).tolist() -> expected [[1, 0], [2, 1]], got [[1, 2], [0, 1]]
