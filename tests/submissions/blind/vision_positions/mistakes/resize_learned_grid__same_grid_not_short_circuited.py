# no shortcut for the same grid: a float64 table read at its own grid is sent through float32 interpolation and comes back rounded to float32's precision instead of unchanged
import torch
import torch.nn.functional as F


def resize_learned_grid(table, old_grid, new_grid, *, prefix_tokens=1, mode="bicubic", antialias=True):
    if table.dim() != 2:
        raise ValueError("table must be two-dimensional")
    old_h, old_w = old_grid
    new_h, new_w = new_grid
    if min(old_h, old_w, new_h, new_w) < 1:
        raise ValueError("grid sides must be at least 1")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens must be >= 0")
    if mode not in ("bilinear", "bicubic"):
        raise ValueError(f"mode must be bilinear or bicubic, got {mode!r}")
    if table.shape[0] != prefix_tokens + old_h * old_w:
        raise ValueError("table rows must be prefix_tokens + old_h * old_w")
    dim = table.shape[1]
    image = table[prefix_tokens:].float().reshape(1, old_h, old_w, dim).permute(0, 3, 1, 2)
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=False)
    rows = image.permute(0, 2, 3, 1).reshape(new_h * new_w, dim).to(table.dtype)
    return torch.cat((table[:prefix_tokens], rows))


# differs: resize_learned_grid(torch.tensor([[0.1], [0.2]], dtype=torch.float64), (1, 2), (1, 2), prefix_tokens=0)[0, 0].item() -> expected 0.1, got 0.1000000015
