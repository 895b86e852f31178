# resize: patch rows transposed to (dim, N) and reshaped to (1, dim, old_h, old_w), interpolated in float32, read back with reshape(dim, -1).T; same grid short-circuits to a copy
import torch
import torch.nn.functional as F


def resize_learned_grid(table, old_grid, new_grid, *, prefix_tokens=1, mode="bicubic", antialias=True):
    if table.ndim != 2:
        raise ValueError(f"table must be (rows, dim), got shape {tuple(table.shape)}")
    old_h, old_w = old_grid
    new_h, new_w = new_grid
    if old_h < 1 or old_w < 1 or new_h < 1 or new_w < 1:
        raise ValueError(f"grid sides must be at least 1, got {old_grid} and {new_grid}")
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens must not be negative, got {prefix_tokens}")
    if mode != "bicubic" and mode != "bilinear":
        raise ValueError(f"mode must be 'bicubic' or 'bilinear', got {mode!r}")
    if table.shape[0] != prefix_tokens + old_h * old_w:
        raise ValueError(f"table has {table.shape[0]} rows, expected {prefix_tokens} + {old_h} * {old_w}")
    if old_h == new_h and old_w == new_w:
        return table.clone()
    dim = table.shape[1]
    patches = table[prefix_tokens:].to(torch.float32)  # (old_h*old_w, dim)
    image = patches.T.reshape(1, dim, old_h, old_w)  # image[0, ch, r, c] = patches[r*old_w + c, ch]
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, align_corners=False, antialias=antialias)
    rows = image.reshape(dim, new_h * new_w).T  # (new_h*new_w, dim), row by row
    return torch.cat([table[:prefix_tokens], rows.to(table.dtype)], dim=0)
