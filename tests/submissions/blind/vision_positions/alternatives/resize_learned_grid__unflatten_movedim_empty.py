# resize: patch rows unflattened to (old_h, old_w, dim) and moved to channels-first with movedim, interpolated in float32 with size given as a list, written into a new_empty output after a copy of the prefix rows
import torch
import torch.nn.functional as F


def resize_learned_grid(table, old_grid, new_grid, *, prefix_tokens=1, mode="bicubic", antialias=True):
    if mode not in ("bilinear", "bicubic"):
        raise ValueError("unknown mode " + repr(mode))
    if prefix_tokens < 0:
        raise ValueError("negative prefix_tokens")
    oh, ow = (int(v) for v in old_grid)
    nh, nw = (int(v) for v in new_grid)
    if min(oh, ow) < 1 or min(nh, nw) < 1:
        raise ValueError("grid side below 1")
    if len(table.shape) != 2:
        raise ValueError("table must be two-dimensional")
    if table.shape[0] != prefix_tokens + oh * ow:
        raise ValueError("row count does not match prefix_tokens + old_h * old_w")
    if [oh, ow] == [nh, nw]:
        return table.clone()
    dim = table.shape[-1]
    grid = table[prefix_tokens:].unflatten(0, (oh, ow))  # (oh, ow, dim)
    image = grid.movedim(-1, 0).unsqueeze(0).float()  # (1, dim, oh, ow)
    image = F.interpolate(image, size=[nh, nw], mode=mode, antialias=antialias, align_corners=False)
    out = table.new_empty((prefix_tokens + nh * nw, dim))
    out[:prefix_tokens] = table[:prefix_tokens]
    out[prefix_tokens:] = image[0].movedim(0, -1).flatten(0, 1)  # rounded back to table's dtype on the copy
    return out
