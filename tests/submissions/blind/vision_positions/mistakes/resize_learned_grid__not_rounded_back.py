# the resized rows are left in float32 (not rounded back), so a float16, bfloat16 or float64 table comes back as float32 (the prefix rows promoted by torch.cat)
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
    image = table[prefix_tokens:].float().reshape(1, old_h, old_w, dim).permute(0, 3, 1, 2)
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=False)
    rows = image.permute(0, 2, 3, 1).reshape(new_h * new_w, dim)
    return torch.cat((table[:prefix_tokens].float(), rows))


# differs: resize_learned_grid(torch.tensor([[0.], [1.]], dtype=torch.float16), (1, 2), (1, 4), prefix_tokens=0, mode='bilinear').dtype -> expected torch.float16, got torch.float32
