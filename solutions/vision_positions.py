"""Positions of pixels: a vision transformer's patches on a grid, and the four ways to tell it where each one lies.

A vision transformer cuts an image into patches and reads them as a sequence. Attention alone does not know
the order of that sequence, let alone that it was a grid: without positions, an image whose patches are shuffled
is the same image to it. The methods of this unit put the grid back:

* a fixed 2D sine-cosine table (MoCo v3, MAE): half of each patch's channels encode its row, half its column;
* a learned table (ViT, DeiT), one row per patch, resized when the model is read at another resolution
  (a bicubic resampling of the table as an image, its class token kept apart);
* 2D rotary embeddings (RoPE-ViT's axial form, EVA-02): half of each head's pairs turn with the row, half with
  the column, so that a score depends on the offset between two patches on both axes;
* Swin's relative position bias: inside a window of Wh x Ww patches, one learned number per head for each of
  the (2Wh - 1)(2Ww - 1) offsets between two patches, added to the scores.

Conventions used everywhere: a grid of ``grid_h`` rows and ``grid_w`` columns; patches are numbered row by row,
patch ``n = r * grid_w + c`` at row ``r`` and column ``c`` (the order of ``x.flatten(2)`` on an image (C, H, W),
and of a patch embedding's output); prefix tokens (a class token, register tokens) come before the patches and
have no place on the grid. Rows and columns count from 0. No Python loop over patches or positions.
"""

import math

import torch
import torch.nn.functional as F

from solutions.rotary_alibi import apply_rotary  # the second unit's rotation, reused as it is

MODES = ("bilinear", "bicubic")


def sincos_2d_table(grid_h, grid_w, dim, base=10000.0, *, prefix_tokens=0, device=None, dtype=torch.float32):
    """The fixed 2D sine-cosine table of MoCo v3 and MAE: half the channels for the row, half for the column.

    Patch ``n = r * grid_w + c`` (row r, column c) gets the row's 1D table in its first ``dim / 2`` channels
    and the column's in the last ``dim / 2``. Each half is a 1D table of ``D = dim / 2`` channels with its
    sines first and its cosines after them:

        half(p) = [sin(p w_0), ..., sin(p w_{D/2-1}),  cos(p w_0), ..., cos(p w_{D/2-1})]
        w_k = base ** (-k / (D / 2)) = base ** (-4k / dim)          k = 0 .. dim/4 - 1

        out[prefix_tokens + r * grid_w + c] = [half(r), half(c)]

    The ``prefix_tokens`` rows before the patches are zeros.

    Args:
        grid_h: the number of rows of patches, at least 1.
        grid_w: the number of columns, at least 1.
        dim: the width of a row of the table; a multiple of 4 (two axes, each of sine-cosine pairs).
        base: the wavelength scale (10000, as in the 1D table).
        prefix_tokens: how many rows of zeros come first (1 for a class token).
        device: where to build the table (default: the CPU).
        dtype: the dtype of the result (default float32).

    Returns:
        table: (prefix_tokens + grid_h * grid_w, dim) of ``dtype`` on ``device``.

    Raises:
        ValueError: if ``dim`` is not a positive multiple of 4, a grid side is below 1, or ``prefix_tokens``
            is negative.

    Convention the grader expects: rows first, then columns; in each half all the sines, then all the
    cosines (the split layout, not the first unit's interleaved pairs); computed in float64 and rounded once.
    MAE's ``get_2d_sincos_pos_embed`` builds its grid with ``np.meshgrid(grid_w, grid_h)``, whose first array
    is the column: its first half encodes the column, so MAE's table is this one with its two halves swapped.
    timm's ``build_sincos2d_pos_embed`` (default arguments) orders the four quarters
    [sin(row), sin(column), cos(row), cos(column)].

    Worked example: grid_h = 1, grid_w = 2, dim = 4, so one frequency per axis, w_0 = 1:
        patch 0 (r = 0, c = 0): [sin 0, cos 0, sin 0, cos 0] = [0, 1, 0, 1]
        patch 1 (r = 0, c = 1): [sin 0, cos 0, sin 1, cos 1] = [0, 1, 0.8415, 0.5403]

    Papers: Chen, Xie and He, "An Empirical Study of Training Self-Supervised Vision Transformers" (MoCo v3),
    2021, section 4; He et al., "Masked Autoencoders Are Scalable Vision Learners" (MAE), 2022, appendix A.1.
    """
    ### BEGIN SOLUTION
    if dim <= 0 or dim % 4 != 0:
        raise ValueError(f"dim must be a positive multiple of 4 (two axes of sine-cosine pairs), got dim={dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError(f"the grid needs at least one row and one column, got grid_h={grid_h}, grid_w={grid_w}")
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens must be 0 or more, got prefix_tokens={prefix_tokens}")
    quarter = dim // 4
    frequency = base ** (-torch.arange(quarter, device=device, dtype=torch.float64) / quarter)  # (dim/4,)

    def half(positions):  # (P,) -> (P, dim/2): sines, then cosines
        angle = positions[:, None] * frequency[None, :]  # (P, dim/4)
        return torch.cat((angle.sin(), angle.cos()), dim=1)

    rows = half(torch.arange(grid_h, device=device, dtype=torch.float64))  # (h, dim/2)
    columns = half(torch.arange(grid_w, device=device, dtype=torch.float64))  # (w, dim/2)
    grid = torch.cat((rows[:, None, :].expand(grid_h, grid_w, dim // 2),
                      columns[None, :, :].expand(grid_h, grid_w, dim // 2)), dim=2)  # (h, w, dim)
    prefix = torch.zeros(prefix_tokens, dim, device=device, dtype=torch.float64)  # (prefix, dim)
    return torch.cat((prefix, grid.reshape(grid_h * grid_w, dim))).to(dtype)  # (prefix + h*w, dim)
    ### END SOLUTION


def resize_learned_grid(table, old_grid, new_grid, *, prefix_tokens=1, mode="bicubic", antialias=True):
    """A learned table of patch positions resized to another grid, as an image: the prefix rows kept apart.

    A ViT trained on 224 x 224 images with 16 x 16 patches has learned one row of its table for each of
    14 x 14 patches. Read at 384 x 384 it has 24 x 24 patches: the table's patch rows, seen as an image of
    ``dim`` channels and ``old_grid`` pixels, are resampled to ``new_grid`` pixels; the prefix rows (the class
    token's) have no place on the grid and are kept as they are.

        image[ch, r, c] = table[prefix_tokens + r * old_w + c, ch]           (1, dim, old_h, old_w)
        resized = interpolate(image, size=new_grid, mode, antialias, align_corners=False)
        out = [table[:prefix_tokens], resized rows in patch order]

    Args:
        table: (prefix_tokens + old_h * old_w, dim) float tensor.
        old_grid: (old_h, old_w), the grid ``table`` was learned on.
        new_grid: (new_h, new_w), the grid to read it at; each side at least 1.
        prefix_tokens: how many rows come before the patches (1: a class token; 0: none).
        mode: "bicubic" (timm's default for fine-tuning at another resolution) or "bilinear".
        antialias: ``torch.nn.functional.interpolate``'s flag, passed as it is: True averages over the area
            each new patch covers where a grid gets smaller. It changes a larger grid too in bicubic mode:
            torch's antialiased bicubic uses the cubic of PIL (a = -0.5), the plain one a = -0.75.

    Returns:
        out: (prefix_tokens + new_h * new_w, dim) of ``table``'s dtype and device; the prefix rows equal
        ``table``'s; ``table`` itself is left as it was.

    Raises:
        ValueError: if ``table`` is not two-dimensional, its rows are not ``prefix_tokens + old_h * old_w``, a
            side of either grid is below 1, ``prefix_tokens`` is negative, or ``mode`` is not one of the two.

    Convention the grader expects: patches row by row on both grids; ``align_corners=False`` (a pixel is an
    area, its centre at half a step); the interpolation in float32 whatever the table's dtype, float64 included
    (a table is turned to float32, resized, and rounded back to its dtype), as timm's ``resample_abs_pos_embed``
    does. The same grid gives a copy of the table, equal to it entry for entry (nothing resampled, not the
    table itself). ``mode`` is checked on every call, the same grid included.

    Worked example: no prefix, one channel, a 1 x 2 table [[0.], [1.]] read at 1 x 4 with mode "bilinear"
    gives [[0.], [0.25], [0.75], [1.]]: the new pixel centres lie at 0.25, 0.75, 1.25 and 1.75 old pixels,
    clamped to the old centres 0.5 and 1.5 at the borders.

    Papers: Dosovitskiy et al., "An Image is Worth 16x16 Words" (ViT), 2021, section 3.2 ("Fine-tuning and
    higher resolution"); Touvron et al., "Training data-efficient image transformers" (DeiT), 2021, section 6.
    """
    ### BEGIN SOLUTION
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got mode={mode!r}")
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens must be 0 or more, got prefix_tokens={prefix_tokens}")
    (old_h, old_w), (new_h, new_w) = old_grid, new_grid
    if min(old_h, old_w, new_h, new_w) < 1:
        raise ValueError(f"every side of a grid must be 1 or more, got old_grid={tuple(old_grid)}, "
                         f"new_grid={tuple(new_grid)}")
    if table.dim() != 2 or table.shape[0] != prefix_tokens + old_h * old_w:
        raise ValueError(f"table must be (prefix_tokens + old_h * old_w, dim) = ({prefix_tokens + old_h * old_w}, "
                         f"dim), got shape {tuple(table.shape)}")
    if (old_h, old_w) == (new_h, new_w):
        return table.clone()
    dim = table.shape[1]
    prefix, patches = table[:prefix_tokens], table[prefix_tokens:]  # (prefix, dim), (old_h * old_w, dim)
    image = patches.float().reshape(old_h, old_w, dim).permute(2, 0, 1)[None]  # (1, dim, old_h, old_w)
    resized = F.interpolate(image, size=(new_h, new_w), mode=mode, antialias=antialias, align_corners=False)
    rows = resized[0].permute(1, 2, 0).reshape(new_h * new_w, dim).to(table.dtype)  # (new_h * new_w, dim)
    return torch.cat((prefix, rows))  # (prefix + new_h * new_w, dim)
    ### END SOLUTION


def rope_2d_angles(grid_h, grid_w, head_dim, base=100.0, *, device=None):
    """The angles of axial 2D RoPE: the first half of a head's pairs turn with the row, the second with the column.

    A head of ``dh`` channels has ``dh / 2`` pairs. Pair ``i`` of the first ``dh / 4`` turns by the patch's row
    times its frequency; pair ``dh/4 + i`` by the patch's column times the same frequency:

        theta_i = base ** (-4i / dh)                      i = 0 .. dh/4 - 1
        angle[n, i]        = r * theta_i                   patch n = r * grid_w + c
        angle[n, dh/4 + i] = c * theta_i

    that is, each half of the head is the second unit's 1D rotation of a head of ``dh / 2`` channels
    (its theta_i = base ** (-2i / (dh/2))), one at the row, the other at the column.

    Args:
        grid_h, grid_w: the rows and columns of patches, each at least 1.
        head_dim: dh, a positive multiple of 4 (two axes of pairs).
        base: the wavelength scale. RoPE-ViT uses 100: a grid has tens of positions, not thousands.
        device: where to build the angles (default: the CPU).

    Returns:
        (cos, sin): two (grid_h * grid_w, dh / 2) float32 tensors on ``device``, the cosine and sine of
        ``angle``, computed in float64 and rounded once.

    Raises:
        ValueError: if ``head_dim`` is not a positive multiple of 4, or a grid side is below 1.

    Convention the grader expects: rows in the first half of the pairs, columns in the second, patches row by
    row. RoPE-ViT's axial embedding (``compute_axial_cis``) puts the column (its x) first: its angles are these
    with the two halves swapped.

    Worked example: grid 2 x 2, dh = 4, so one frequency per axis, theta_0 = 1:
        patch (r, c):  (0,0)    (0,1)    (1,0)    (1,1)
        angle:         [0, 0]   [0, 1]   [1, 0]   [1, 1]

    Papers: Heo et al., "Rotary Position Embedding for Vision Transformer" (RoPE-ViT), 2024, section 3.2
    (axial frequencies); Fang et al., "EVA-02: A Visual Representation for Neon Genesis", 2023.
    """
    ### BEGIN SOLUTION
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError(f"head_dim must be a positive multiple of 4 (two axes of pairs), got head_dim={head_dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError(f"the grid needs at least one row and one column, got grid_h={grid_h}, grid_w={grid_w}")
    quarter = head_dim // 4
    theta = base ** (-4 * torch.arange(quarter, device=device, dtype=torch.float64) / head_dim)  # (dh/4,)
    rows = torch.arange(grid_h, device=device, dtype=torch.float64).repeat_interleave(grid_w)  # (h*w,): r of patch n
    columns = torch.arange(grid_w, device=device, dtype=torch.float64).repeat(grid_h)  # (h*w,): c of patch n
    angle = torch.cat((rows[:, None] * theta, columns[:, None] * theta), dim=1)  # (h*w, dh/2)
    return angle.cos().float(), angle.sin().float()
    ### END SOLUTION


def apply_rope_2d(x, grid_h, grid_w, base=100.0, *, prefix_tokens=0):
    """Axial 2D RoPE applied to queries or keys: the first half of each head turned by the row, the second by the
    column, the prefix tokens not turned at all.

        out[..., n, :dh/2] = apply_rotary(x[..., n, :dh/2], r, base)      patch n = r * grid_w + c
        out[..., n, dh/2:] = apply_rotary(x[..., n, dh/2:], c, base)

    with the second unit's ``apply_rotary`` (interleaved pairs: channels 2i and 2i + 1 of each half turn
    together), here given to you as the second unit's reference. Its frequencies are those of
    ``rope_2d_angles``. A score q'.k' then depends on the row offset and the column offset between the two
    patches, not on where they are.

    Args:
        x: (..., prefix_tokens + grid_h * grid_w, dh) float tensor: (B, H, N, dh) for a batch of heads.
        grid_h, grid_w: the rows and columns of patches, each at least 1.
        base: the wavelength scale (100, RoPE-ViT's).
        prefix_tokens: how many tokens come before the patches (1: a class token); they are returned as they are.

    Returns:
        out: a new tensor of ``x``'s shape, dtype and device.

    Raises:
        ValueError: if ``x``'s last axis is not a positive multiple of 4, a grid side is below 1,
            ``prefix_tokens`` is negative, or ``x``'s second to last axis is not ``prefix_tokens + grid_h * grid_w``.

    Convention the grader expects: the split of the head is by halves of the channels (rows in channels
    0 .. dh/2 - 1), not pairs alternating between the axes; the arithmetic in float32 for float16, bfloat16 and
    float32 input (half precision rounded back once at the end) and in float64 for float64 input, as
    ``apply_rotary`` does: a float64 x is turned at float64's precision.

    Worked example: the second patch of a 1 x 2 grid, at (r, c) = (0, 1), dh = 4, base 100: x = [1, 0, 1, 0] becomes
    [1, 0, cos 1, sin 1] = [1, 0, 0.5403, 0.8415]: the row's pair does not turn (r = 0), the column's turns by
    1 * theta_0 = 1.

    Papers: Heo et al. (RoPE-ViT), 2024, section 3.2; Su et al., "RoFormer", 2021, section 3.4.2 (the rotation).
    """
    ### BEGIN SOLUTION
    head_dim = x.shape[-1]
    if head_dim <= 0 or head_dim % 4 != 0:
        raise ValueError(f"x's last axis must be a positive multiple of 4 (two axes of pairs), got {head_dim}")
    if grid_h < 1 or grid_w < 1:
        raise ValueError(f"the grid needs at least one row and one column, got grid_h={grid_h}, grid_w={grid_w}")
    if prefix_tokens < 0:
        raise ValueError(f"prefix_tokens must be 0 or more, got prefix_tokens={prefix_tokens}")
    if x.dim() < 2 or x.shape[-2] != prefix_tokens + grid_h * grid_w:
        raise ValueError(f"x must hold prefix_tokens + grid_h * grid_w = {prefix_tokens + grid_h * grid_w} tokens "
                         f"on its second to last axis, got shape {tuple(x.shape)}")
    rows = torch.arange(grid_h, device=x.device).repeat_interleave(grid_w)  # (h*w,): r of patch n
    columns = torch.arange(grid_w, device=x.device).repeat(grid_h)  # (h*w,): c of patch n
    prefix, patches = x[..., :prefix_tokens, :], x[..., prefix_tokens:, :]
    turned = torch.cat((apply_rotary(patches[..., : head_dim // 2], rows, base),
                        apply_rotary(patches[..., head_dim // 2:], columns, base)), dim=-1)  # (..., h*w, dh)
    return torch.cat((prefix, turned), dim=-2)  # (..., prefix + h*w, dh): a new tensor
    ### END SOLUTION


def window_relative_index(window_h, window_w, *, device=None):
    """Swin's relative position index: for two patches of one window, which of the (2Wh - 1)(2Ww - 1) offsets
    between them is theirs.

    Patch ``n = r * Ww + c`` of a window of Wh x Ww patches. For a query patch (r1, c1) and a key patch
    (r2, c2) the offset is (r1 - r2, c1 - c2), each in -(W - 1) .. W - 1; shifted to count from 0, it is
    read as a row-major index into a (2Wh - 1) x (2Ww - 1) table of offsets:

        index[n1, n2] = (r1 - r2 + Wh - 1) * (2Ww - 1) + (c1 - c2 + Ww - 1)

    Args:
        window_h, window_w: Wh and Ww, the window's rows and columns of patches, each at least 1.
        device: where to build the index (default: the CPU).

    Returns:
        index: (N, N) int64 with N = Wh * Ww, each entry in 0 .. (2Wh - 1)(2Ww - 1) - 1.

    Raises:
        ValueError: if a side of the window is below 1.

    Convention the grader expects: the query's patch minus the key's (the index's row n1 is the query, its
    column n2 the key), rows before columns in the table, as Swin's ``relative_position_index`` is built. The
    diagonal (a patch and itself) is the table's middle entry, (Wh - 1)(2Ww - 1) + Ww - 1.

    Worked example: a 1 x 2 window (patches 0 and 1 side by side), a table of 1 x 3 offsets:
        index = [[1, 0],       patch 0 to itself: offset (0, 0) -> 1; to patch 1: (0, -1) -> 0
                 [2, 1]]       patch 1 to patch 0: (0, +1) -> 2

    Paper: Liu et al., "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows", 2021,
    section 3.2 ("Relative position bias").
    """
    ### BEGIN SOLUTION
    if window_h < 1 or window_w < 1:
        raise ValueError(f"a window needs at least one row and one column, got window_h={window_h}, "
                         f"window_w={window_w}")
    rows = torch.arange(window_h, device=device).repeat_interleave(window_w)  # (N,): r of patch n
    columns = torch.arange(window_w, device=device).repeat(window_h)  # (N,): c of patch n
    row_offset = rows[:, None] - rows[None, :] + (window_h - 1)  # (N, N): 0 .. 2Wh - 2
    column_offset = columns[:, None] - columns[None, :] + (window_w - 1)  # (N, N): 0 .. 2Ww - 2
    return row_offset * (2 * window_w - 1) + column_offset  # (N, N)
    ### END SOLUTION


def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    """Scores inside windows, with Swin's relative position bias: the product of each window's queries and keys,
    scaled, plus one learned number per head for the offset between the two patches.

        scores[w, h, n1, n2] = scale * q[w, h, n1] . k[w, h, n2]
                               + bias_table[window_relative_index(Wh, Ww)[n1, n2], h]

    Args:
        q: (B * num_windows, H, N, dh) queries, N = Wh * Ww patches of a window, row by row.
        k: (B * num_windows, H, N, dh) keys.
        bias_table: ((2Wh - 1)(2Ww - 1), H), one learned number per offset and head, on q's device, of any
            float dtype: it is cast to q's dtype before it is added (a float32 table with bfloat16 q and k gives bfloat16
            scores).
        window_h, window_w: Wh and Ww.
        scale: multiplies ``q @ k^T`` only, never the bias; default ``1 / sqrt(dh)``.

    Returns:
        scores: (B * num_windows, H, N, N) of ``q``'s dtype and device.

    Raises:
        ValueError: if q's patches are not Wh * Ww, or ``bias_table`` is not ((2Wh - 1)(2Ww - 1), H).

    Convention the grader expects: heads before patches; the bias the same for every window (Swin's shifted
    windows add a mask of their own, left out here). No Python loop over windows, heads or patches: this is
    the timed path. Gather the bias once, (H, N, N), and add it to the scores in the product's own pass
    (``torch.baddbmm``) rather than building the scores and then a second (B * num_windows, H, N, N) sum.

    Worked example: one window of 1 x 2 patches, one head, dh = 1, scale 1, q = [[1], [2]], k = [[1], [1]],
    bias_table = [[0.0], [0.5], [1.0]] (offsets -1, 0, +1): q k^T = [[1, 1], [2, 2]], the bias
    [[0.5, 0.0], [1.0, 0.5]], the scores [[1.5, 1.0], [3.0, 2.5]].

    Paper: Liu et al. (Swin), 2021, section 3.2, equation 4.
    """
    ### BEGIN SOLUTION
    windows, heads, patches, head_dim = q.shape
    if patches != window_h * window_w:
        raise ValueError(f"q holds {patches} patches a window, not Wh * Ww = {window_h * window_w}")
    offsets = (2 * window_h - 1) * (2 * window_w - 1)
    if tuple(bias_table.shape) != (offsets, heads):
        raise ValueError(f"bias_table must be ((2Wh - 1)(2Ww - 1), H) = ({offsets}, {heads}), got shape "
                         f"{tuple(bias_table.shape)}")
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim)
    index = window_relative_index(window_h, window_w, device=q.device)  # (N, N)
    bias = bias_table.to(q.dtype)[index].permute(2, 0, 1)  # (H, N, N): one gather, a view with heads first
    scores = bias.expand(windows, heads, patches, patches).contiguous()  # (B*nW, H, N, N), the bias in place
    flat = scores.view(windows * heads, patches, patches)
    flat.baddbmm_(q.reshape(windows * heads, patches, head_dim),
                  k.reshape(windows * heads, patches, head_dim).transpose(1, 2), alpha=scale)
    return scores  # (B*nW, H, N, N)
    ### END SOLUTION
