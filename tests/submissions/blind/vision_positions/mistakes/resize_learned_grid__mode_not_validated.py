# mode is not checked, left to F.interpolate to reject: 'lanczos' (with antialias=True) is accepted, other bad modes raise F.interpolate's own error (ValueError, or NotImplementedError for 'linear' without antialias) only when the grid changes, and any mode passes at the same grid
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
    if table.shape[0] != prefix_tokens + old_h * old_w:
        raise ValueError("table rows must be prefix_tokens + old_h * old_w")
    if (old_h, old_w) == (new_h, new_w):
        return table.clone()
    dim = table.shape[1]
    image = table[prefix_tokens:].float().reshape(1, old_h, old_w, dim).permute(0, 3, 1, 2)
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=False)
    rows = image.permute(0, 2, 3, 1).reshape(new_h * new_w, dim).to(table.dtype)
    return torch.cat((table[:prefix_tokens], rows))


# differs: resize_learned_grid(torch.zeros(3, 1), (1, 2), (1, 2), mode='nearest').shape -> expected ValueError (mode must be one of ('bilinear', 'bicubic')), got torch.Size([3, 1])
