# the patch rows are read into the image column by column (reshape(old_w, old_h, dim) then permute(2, 1, 0), i.e. row n taken as c * old_h + r) but written back row by row, so the grid is transposed
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
    if (old_h, old_w) == (new_h, new_w):
        return table.clone()
    dim = table.shape[1]
    image = table[prefix_tokens:].float().reshape(old_w, old_h, dim).permute(2, 1, 0)[None]  # (1, dim, old_h, old_w)
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=False)
    rows = image[0].permute(1, 2, 0).reshape(new_h * new_w, dim).to(table.dtype)
    return torch.cat((table[:prefix_tokens], rows))


# differs: resize_learned_grid(torch.tensor([[0.], [1.], [2.], [3.]]), (2, 2), (2, 4), prefix_tokens=0, mode='bilinear').flatten().tolist() -> expected [0.0, 0.25, 0.75, 1.0, 2.0, 2.25, 2.75, 3.0], got [0.0, 0.5, 1.5, 2.0, 1.0, 1.5, 2.5, 3.0]
