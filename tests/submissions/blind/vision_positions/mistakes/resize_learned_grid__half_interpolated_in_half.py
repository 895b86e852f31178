# a float16 or bfloat16 table is interpolated in its own dtype (no float32 upcast): on the CPU the antialiased path raises NotImplementedError for half precision, and without antialias bicubic results differ from the float32 path by an ulp in about a third of the entries
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
    compute = torch.float32 if table.dtype == torch.float64 else table.dtype  # float32 only in place of float64
    image = table[prefix_tokens:].to(compute).reshape(1, old_h, old_w, dim).permute(0, 3, 1, 2)
    image = F.interpolate(image, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=False)
    rows = image.permute(0, 2, 3, 1).reshape(new_h * new_w, dim).to(table.dtype)
    return torch.cat((table[:prefix_tokens], rows))


# differs: resize_learned_grid(torch.tensor([[0.], [1.]], dtype=torch.float16), (1, 2), (1, 4), prefix_tokens=0).flatten().tolist() -> expected [-0.08825683594, 0.2071533203, 0.79296875, 1.087890625], got NotImplementedError ("compute_index_ranges_weights" not implemented for 'Half')
