# resize: torch.split into prefix and patches, patches viewed as (1, old_h, old_w, dim) then permute(0, 3, 1, 2) to an image (timm's resample_abs_pos_embed), float32 interpolation, permute back and flatten
import torch
import torch.nn.functional as F


def resize_learned_grid(table, old_grid, new_grid, *, prefix_tokens=1, mode="bicubic", antialias=True):
    if table.dim() != 2:
        raise ValueError("table must be 2D")
    if prefix_tokens < 0:
        raise ValueError("prefix_tokens < 0")
    old_grid, new_grid = tuple(old_grid), tuple(new_grid)
    if any(s < 1 for s in old_grid + new_grid):
        raise ValueError("every side of old_grid and new_grid must be >= 1")
    if mode not in ["bicubic", "bilinear"]:
        raise ValueError("mode must be bicubic or bilinear")
    num_patches = old_grid[0] * old_grid[1]
    if table.size(0) != prefix_tokens + num_patches:
        raise ValueError("table rows != prefix_tokens + old_h * old_w")
    if old_grid == new_grid:
        return table.clone()
    orig_dtype = table.dtype
    prefix, patches = torch.split(table, [prefix_tokens, num_patches], dim=0)
    image = patches.float().reshape(1, old_grid[0], old_grid[1], -1).permute(0, 3, 1, 2)
    image = F.interpolate(image, size=new_grid, mode=mode, antialias=antialias, align_corners=False)
    patches = image.permute(0, 2, 3, 1).flatten(1, 2)[0].to(orig_dtype)
    return torch.cat((prefix, patches))
