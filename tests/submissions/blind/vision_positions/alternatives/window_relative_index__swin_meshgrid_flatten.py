# Swin's own construction: coords = stack(meshgrid(rows, cols, indexing="ij")) flattened to (2, N), relative = coords[:, :, None] - coords[:, None, :], both shifted by W - 1, row offset times (2Ww - 1) plus column offset
import torch


def window_relative_index(window_h, window_w, *, device=None):
    if window_h < 1 or window_w < 1:
        raise ValueError(f"window sides must be at least 1, got {window_h} x {window_w}")
    coords = torch.stack(torch.meshgrid(torch.arange(window_h, device=device),
                                        torch.arange(window_w, device=device), indexing="ij"))  # (2, Wh, Ww)
    coords = torch.flatten(coords, 1)  # (2, N)
    relative = coords[:, :, None] - coords[:, None, :]  # (2, N, N): query minus key
    relative = relative.permute(1, 2, 0).contiguous()  # (N, N, 2)
    relative[:, :, 0] += window_h - 1
    relative[:, :, 1] += window_w - 1
    relative[:, :, 0] *= 2 * window_w - 1
    return relative.sum(-1)
