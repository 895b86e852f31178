# The lesson of the fourth unit, as text. `python -m autograder build` turns it into nbgrader's source notebook
# assignments/source/vision_positions/vision_positions.ipynb; edit this file, not that one.
# The cell kinds are those of the units before it ([markdown], plain code, [demo: NAME], [solution: FUNCTION],
# [tests: TEST_ID], [given: UNIT]). The answers live only in solutions/vision_positions.py; nothing below may
# contain one: the expected values of the checks are worked out by hand on inputs small enough to do so.
# A demo computes everything from the student's functions before it makes its figure, so that a function still
# raising NotImplementedError stops the cell with no empty figure left behind; each demo calls its own task's
# functions only.

# %% [markdown]
# # Positions of pixels: a grid, not a line
#
# A vision transformer (ViT, Dosovitskiy et al. 2021) cuts an image into square patches, 16 x 16 pixels each,
# turns every patch into a vector and reads the patches as a sequence: a 224 x 224 image is a grid of 14 x 14
# patches, 196 tokens, read row by row, with a class token in front. Attention itself does not know the order of
# that sequence (the first unit's part 1), let alone that it was a grid: shuffle the patches and the model sees the
# same bag of vectors. Each method of the units before gave a token its place on a *line*. This unit gives a
# patch its place on a *grid*, in the four ways that vision models use, and ends with an experiment in which a tiny
# ViT must read how the squares of an image are arranged, and then read images larger than any it was trained on.
#
# | part | what | used in | your task (the `pytest -k` word) | points |
# |---|---|---|---|---|
# | 1 | a fixed 2D sine-cosine table | MoCo v3, MAE | `sincos_2d_table` | {points:sincos_2d_table} |
# | 2 | a learned table read at another resolution | ViT, DeiT | `resize_learned_grid` | {points:resize_learned_grid} |
# | 3 | axial 2D rotary embeddings | RoPE-ViT, EVA-02 | `rope_2d` | {points:rope_2d} |
# | 4 | Swin's relative position index | Swin Transformer | `window_relative_index` | {points:window_relative_index} |
# | 5 | window scores with their relative bias | Swin Transformer | `window_scores` | {points:window_scores} |
# | 6 | the speed of the window path | | (timed by the grader) | {points:timing} |
# | 7 | train small, read large | | (not graded) | |
#
# **How to work**, as in the units before: each function to write says `# YOUR CODE HERE`; its docstring gives the
# formula, the shapes, the convention the grader expects, a worked example and the paper; the locked cells after it
# check your work, and the grader runs more cases than you see. `pytest -k rope_2d` (or any word of the table) runs
# the self-checks in a terminal. A cell that uses a task not written yet raises `NotImplementedError`: use *Run >
# Run Selected Cell and All Below* from the next part to go on.
#
# **Rules of the game.** No Python loop over patches, positions or windows. A grid has `grid_h` rows and `grid_w`
# columns of patches, counted from 0, and its patches are numbered **row by row**: patch $n = r \cdot
# \text{grid\_w} + c$ at row $r$ and column $c$, the order of `x.flatten(2)` on an image `(C, H, W)` and of a patch
# embedding's output. Prefix tokens (a class token, register tokens) come before the patches and have no place on
# the grid. `H` is the number of heads and `dh` the size of one.

# %%
import math

import torch
import torch.nn.functional as F

MODES = ("bilinear", "bicubic")  # the modes resize_learned_grid takes (given, as in the .py file of this unit)

# %% [demo: setup]
# Plotting and the checks used by the test cells. This cell is read-only.
import matplotlib.pyplot as plt

torch.manual_seed(0)  # the same pictures on every run (not the cell's last line, which would print it)
from checks import assert_close, assert_no_loops, assert_raises


def on_grid(values, grid_h, grid_w):
    """A value per patch, (grid_h * grid_w,), as the image it describes, (grid_h, grid_w): patches row by row."""
    return values.reshape(grid_h, grid_w)

# %% [markdown]
# ## The second unit's rotation, given
#
# `apply_rotary` is the second unit's reference, given here finished (you wrote your own there), with the
# `rotary_angles` it calls. Run the cell below and leave it as it is: `apply_rope_2d` in part 3 turns each half of
# a head with it, and the grader runs this code after yours in any case, so it is not graded again here.

# %% [given: rotary_alibi]

# %% [markdown]
# ## 1. A fixed 2D sine-cosine table (MoCo v3, MAE)
#
# The first unit's sinusoidal table gives position $t$ of a line the vector
# $[\sin(t w_0), \cos(t w_0), \dots]$ with frequencies $w_k$ from fast to slow. A patch has two coordinates. The 2D
# table of MoCo v3 (Chen, Xie and He 2021, "An Empirical Study of Training Self-Supervised Vision Transformers")
# and MAE (He et al. 2022, "Masked Autoencoders Are Scalable Vision Learners", appendix A.1) spends half
# of a patch's `dim` channels on its row and half on its column, each half a 1D table of $D = \text{dim}/2$ channels
# with all its sines first, then all its cosines:
#
# $$ \text{half}(p) = [\sin(p\,w_0), \dots, \sin(p\,w_{D/2-1}),\; \cos(p\,w_0), \dots, \cos(p\,w_{D/2-1})],
#    \qquad w_k = \text{base}^{-k/(D/2)} = \text{base}^{-4k/\text{dim}}, $$
#
# $$ \text{table}[\text{prefix} + r\cdot\text{grid\_w} + c] = [\,\text{half}(r),\ \text{half}(c)\,]. $$
#
# A class token's row is zeros: it has no place on the grid. Why two halves and not one table over $n$? Patch $n$
# and patch $n + 1$ are neighbours unless $n$ ends a row; a 1D table over $n$ would call the last patch of a row
# and the first of the next one neighbours, and patches one above the other $\text{grid\_w}$ apart. With a half per
# axis, the dot product of two patches' vectors is a sum over the row's frequencies of $\cos((r_1 - r_2) w_k)$ plus
# the same over the columns: it depends on the two offsets, on both axes, and on nothing else. ViT itself learned
# its table (part 2) and found that 2D-aware tables did no better there (its appendix D.4); the self-supervised
# models adopted the fixed one, which needs no training and can be built at any grid.
#
# **The grid's order is a convention, and the known mistake.** MAE's `get_2d_sincos_pos_embed` builds its grid with
# `np.meshgrid(grid_w, grid_h)`, whose first array varies along the columns: its first half, named `emb_h` in the
# code, encodes the **column**. MAE's table is this one with its two halves swapped, which on its square grids is
# this table with the grid transposed: patch $(r, c)$ gets the vector this one gives patch $(c, r)$. Weights trained with one and read
# with the other see every image flipped about its diagonal. timm's `build_sincos2d_pos_embed` orders four quarters,
# [sin(row), sin(column), cos(row), cos(column)]. The grader expects the layout above.

# %% [solution: sincos_2d_table]

# %% [tests: sincos_2d_table_values]
# The docstring's worked example: one frequency per axis (w_0 = 1).
assert_close(sincos_2d_table(1, 2, 4), torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, math.sin(1), math.cos(1)]]),
             what="sincos_2d_table(1, 2, 4)", atol=1e-6,
             causes=[(torch.tensor([[0.0, 1.0, 0.0, 1.0], [math.sin(1), math.cos(1), 0.0, 1.0]]),
                      "the column's half comes first: MAE's order (np.meshgrid(grid_w, grid_h) makes grid[0] the "
                      "column); here the row's half comes first.")],
             hint="the row's half first, then the column's; in each half all the sines, then all the cosines.")
# Two frequencies per axis, w = [1, 10000 ** (-4/8)] = [1, 0.01]: patch 1 is at row 1, column 0.
s, c = math.sin, math.cos
assert_close(sincos_2d_table(2, 1, 8),
             torch.tensor([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
                           [s(1), s(0.01), c(1), c(0.01), 0.0, 0.0, 1.0, 1.0]]),
             what="sincos_2d_table(2, 1, 8)", atol=1e-6,
             causes=[(torch.tensor([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
                                    [0.0, 0.0, 1.0, 1.0, s(1), s(0.01), c(1), c(0.01)]]),
                      "the column's half comes first (MAE's meshgrid order)."),
                     (torch.tensor([[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0],
                                    [s(1), c(1), s(0.01), c(0.01), 0.0, 1.0, 0.0, 1.0]]),
                      "sines and cosines interleaved, as in the first unit's table; here each half has all its "
                      "sines, then all its cosines."),
                     (torch.tensor([[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
                                    [s(1), s(0.01), 0.0, 0.0, c(1), c(0.01), 1.0, 1.0]]),
                      "timm's quarters [sin(row), sin(column), cos(row), cos(column)]; here [sin, cos] of the "
                      "row, then [sin, cos] of the column."),
                     (torch.tensor([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0],
                                    [s(1), s(0.1), c(1), c(0.1), 0.0, 0.0, 1.0, 1.0]]),
                      "w_k = base ** (-2k / dim), the 1D table's; each half is a table of dim / 2 channels, so "
                      "w_k = base ** (-4k / dim).")],
             hint="w_k = base ** (-4k / dim) for k < dim / 4; patch n = r * grid_w + c.")

# %% [tests: sincos_2d_table_contract]
table = sincos_2d_table(2, 3, 8, prefix_tokens=2, dtype=torch.float64)
assert tuple(table.shape) == (2 + 2 * 3, 8) and table.dtype == torch.float64, \
    f"expected (prefix + grid_h * grid_w, dim) = (8, 8) float64, got {tuple(table.shape)} {table.dtype}"
assert_close(table[:2], torch.zeros(2, 8, dtype=torch.float64), what="the two prefix rows", atol=0.0,
             hint="the prefix rows come first and are zeros: a class token has no place on the grid.")
assert_close(table[2:], sincos_2d_table(2, 3, 8, dtype=torch.float64), what="the rows after the prefix", atol=0.0,
             hint="the prefix rows come before the patches and change nothing of theirs.")

# %% [tests: sincos_2d_table_invalid_args]
assert_raises(ValueError, sincos_2d_table, 2, 2, 6, hint="dim must be a positive multiple of 4.")
assert_raises(ValueError, sincos_2d_table, 0, 2, 8, hint="a grid needs at least one row.")
assert_raises(ValueError, sincos_2d_table, 2, 2, 8, prefix_tokens=-1, hint="prefix_tokens cannot be negative.")

# %% [demo: sincos_picture]
# ViT's figure 7 (centre), for your table: the cosine similarity of one patch's vector with every patch's vector,
# on a grid of 8 x 8 patches (dim 64), for three patches. Then MAE's table, your halves swapped.
grid, dim = 8, 64
table = sincos_2d_table(grid, grid, dim)  # (64, 64)
unit = table / table.norm(dim=1, keepdim=True)
similarity = unit @ unit.T  # (patches, patches)
mae = torch.cat((table[:, dim // 2:], table[:, :dim // 2]), dim=1)  # MAE's order: the column's half first
transposed = table.reshape(grid, grid, dim).transpose(0, 1).reshape(grid * grid, dim)  # patch (r, c) gets (c, r)'s
print("MAE's table (your halves swapped) is your table with the grid transposed:", torch.equal(mae, transposed))
chosen = [(0, 0), (2, 5), (6, 3)]
low = similarity.min().item()  # the colours span the similarities there are: the slow pairs lift them all
figure, axes = plt.subplots(1, 3, layout="constrained", figsize=(8, 2.9))
for axis, (row, column) in zip(axes, chosen):
    image = axis.imshow(on_grid(similarity[row * grid + column], grid, grid), cmap="viridis", vmin=low, vmax=1)
    axis.plot(column, row, "k+", markersize=10)
    axis.set(title=f"patch (row {row}, column {column})", xlabel="column", ylabel="row")
figure.colorbar(image, ax=axes, label="cosine similarity", shrink=0.9)
plt.show()

# %% [markdown]
# Each patch is most like itself and its neighbours, and the likeness falls off along the row and the column
# separately: the cross shape of a sum of a row's term and a column's term. Learned tables end up looking much the
# same: ViT's figure 7 shows that its learned table, one free vector per patch, learned this row-and-column
# structure from the images.

# %% [markdown]
# ## 2. A learned table read at another resolution (ViT, DeiT)
#
# ViT learns its table: one free vector per patch and one for the class token, $(1 + 14 \cdot 14, d)$ for
# 224 x 224 images. Fine-tuned at 384 x 384 it has 24 x 24 patches, and rows 197 to 577 do not exist. Its answer
# (Dosovitskiy et al. 2021, section 3.2, "Fine-tuning and higher resolution"): "we perform 2D interpolation of the
# pre-trained position embeddings, according to their location in the original image". The patch rows are an
# image of $d$ channels on the old grid; resample it to the new grid:
#
# $$ \text{image}[ch, r, c] = \text{table}[\text{prefix} + r\cdot w_\text{old} + c,\ ch], \qquad
#    \text{out} = [\ \text{table}[:\text{prefix}],\ \text{interpolate}(\text{image}, \text{new grid})\ ]. $$
#
# DeiT (Touvron et al. 2021, "Training data-efficient image transformers", section 6) interpolates with **bicubic**
# resampling, which keeps the vectors' norms better than bilinear, and timm's `resample_abs_pos_embed` does so by
# default. A pixel is an area, its centre at half a step (`align_corners=False`). The resampling runs in float32
# whatever the table's dtype.
#
# **The class token stays out of the image.** Its row has no place on the grid: it is kept as it is, and only the
# rows after it are resized. Two mistakes are common. One keeps it inside, resizing the table as a *line* of
# $1 + N$ rows, as a text model's table would be stretched: the class token's vector bleeds into the first patches,
# and every row of patches into the next one (a line of 16 patches stretched to 64 is not a 4 x 4 grid stretched to
# 8 x 8). The other slices the prefix off, resizes, and forgets to put it back. The picture after the checks shows
# both the right resizing and the line.

# %% [solution: resize_learned_grid]

# %% [tests: resize_learned_grid_values]
# The docstring's worked example: centres at 0.25, 0.75, 1.25 and 1.75 old pixels, clamped at the borders.
assert_close(resize_learned_grid(torch.tensor([[0.0], [1.0]]), (1, 2), (1, 4), prefix_tokens=0, mode="bilinear"),
             torch.tensor([[0.0], [0.25], [0.75], [1.0]]),
             what='resize_learned_grid([[0.], [1.]], (1, 2), (1, 4), prefix_tokens=0, mode="bilinear")', atol=1e-6,
             causes=[(torch.tensor([[0.0], [1 / 3], [2 / 3], [1.0]]),
                      "align_corners=True: the corner pixels' centres pinned together; a pixel is an area, "
                      "align_corners=False.")],
             hint="the patch rows are an image of dim channels, resized with align_corners=False.")
# A 2 x 2 grid [[0, 1], [2, 3]] read at 4 x 4: bilinear is separable, so out(r, c) = 2 a[r] + a[c] with a the
# worked example's [0, 0.25, 0.75, 1].
a = torch.tensor([0.0, 0.25, 0.75, 1.0])
assert_close(resize_learned_grid(torch.tensor([[0.0], [1.0], [2.0], [3.0]]), (2, 2), (4, 4), prefix_tokens=0,
                                 mode="bilinear"),
             (2 * a[:, None] + a[None, :]).reshape(16, 1), what="a 2 x 2 grid read at 4 x 4, bilinear", atol=1e-6,
             causes=[((a[:, None] + 2 * a[None, :]).reshape(16, 1),
                      "the grid is read column by column (rows and columns swapped); patches go row by row.")],
             hint="patch n = r * grid_w + c, on the old grid and on the new one.")

# %% [tests: resize_learned_grid_prefix]
# A class token (9) in front of a 1 x 2 grid: it is kept apart, and the grid is resized as above.
assert_close(resize_learned_grid(torch.tensor([[9.0], [0.0], [1.0]]), (1, 2), (1, 4), prefix_tokens=1,
                                 mode="bilinear"),
             torch.tensor([[9.0], [0.0], [0.25], [0.75], [1.0]]), what="a class token and a 1 x 2 grid read at 1 x 4",
             atol=1e-6, hint="the prefix rows are kept as they are, first; only the patch rows are resized.")
table = torch.arange(10.0).reshape(5, 2)
assert_close(resize_learned_grid(table, (2, 2), (3, 3))[0], table[0], what="the class token's row", atol=0.0,
             hint="the prefix rows are kept as they are, never resized with the grid.")

# %% [tests: resize_learned_grid_contract]
table = torch.arange(10.0).reshape(5, 2)  # a class token's row, then a 2 x 2 grid of two channels
assert_close(resize_learned_grid(table, (2, 2), (2, 2)), table, what="the same grid", atol=0.0,
             hint="the same grid gives the table back, unchanged.")
before = table.clone()
half = resize_learned_grid(table.half(), (2, 2), (3, 4))
assert tuple(half.shape) == (1 + 3 * 4, 2) and half.dtype == torch.float16, \
    f"expected (1 + 3 * 4, 2) float16, got {tuple(half.shape)} {half.dtype}"
assert torch.equal(table, before), "resize_learned_grid changed the table it was given: return a new one"

# %% [tests: resize_learned_grid_invalid_args]
table = torch.arange(10.0).reshape(5, 2)
assert_raises(ValueError, resize_learned_grid, table, (2, 3), (3, 3), hint="5 rows are not 1 + 2 * 3.")
assert_raises(ValueError, resize_learned_grid, table, (2, 2), (0, 3), hint="a grid side must be at least 1.")
assert_raises(ValueError, resize_learned_grid, table, (2, 2), (3, 3), mode="nearest",
              hint='mode must be "bicubic" or "bilinear".')

# %% [demo: resize_picture]
# A made-up learned table of a 4 x 4 grid (random numbers), one channel drawn as an image: as learned, resized to
# 8 x 8 by your function (bicubic, the class token kept apart), and stretched as a line of 17 rows to 65 (the class
# token inside), which is what a text model's table would do.
generator = torch.Generator().manual_seed(4)
learned = torch.randn(1 + 16, 3, generator=generator)  # (1 + 4 * 4, d): the class token's row, then the patches
learned[0] = 5.0  # a class token far from every patch, to see where it goes
resized = resize_learned_grid(learned, (4, 4), (8, 8), prefix_tokens=1)  # (1 + 64, d)
as_line = F.interpolate(learned.T[None], size=1 + 64, mode="linear")[0].T  # (65, d): the mistake
print("your class token's row kept as it was:", torch.equal(resized[0], learned[0]))
print(f"the line's class token row: {as_line[0, 0].item():.2f}; its first patches: "
      + ", ".join(f"{value:.2f}" for value in as_line[1:4, 0].tolist()) + " (the class token's 5.0 bleeds in)")
panels = [(on_grid(learned[1:, 0], 4, 4), "learned, 4 x 4"), (on_grid(resized[1:, 0], 8, 8), "yours, 8 x 8"),
          (on_grid(as_line[1:, 0], 8, 8), "as a line (wrong)")]
figure, axes = plt.subplots(1, 3, layout="constrained", figsize=(8, 2.9))
low, high = learned[1:, 0].min().item(), learned[1:, 0].max().item()
for axis, (image, title) in zip(axes, panels):
    shown = axis.imshow(image, cmap="viridis", vmin=low, vmax=high)
    axis.set(title=title, xlabel="column", ylabel="row")
figure.colorbar(shown, ax=axes, label="channel 0", shrink=0.9)
plt.show()

# %% [markdown]
# Your resized table is the learned one seen at a finer grid: the same blobs, each where it was in the image. The
# line is not: its rows of 8 are cut from a line that ran through the 4 x 4 grid row after row, so each new row
# mixes two old ones, and the class token's value spills into the top-left patches. A model fine-tuned from such a
# table must first unlearn the damage.

# %% [markdown]
# ## 3. Axial 2D RoPE (RoPE-ViT, EVA-02)
#
# The second unit turned each pair of a query's channels by its position times a frequency, so that a score
# depends only on the distance between query and key. On a grid the **axial** form (Heo et al. 2024, "Rotary
# Position Embedding for Vision Transformer", section 3.2; EVA-02, Fang et al. 2023, uses it too) gives each axis
# half of the head: the first $d_h/2$ channels turn with the patch's row, the last $d_h/2$ with its column, each
# half by the second unit's rotation of a head of $d_h/2$ channels:
#
# $$ \theta_i = \text{base}^{-4i/d_h}, \quad i = 0 \dots d_h/4 - 1; \qquad
#    \text{angle}[n, i] = r\,\theta_i, \quad \text{angle}[n, d_h/4 + i] = c\,\theta_i, $$
#
# $$ \text{out}[n, :d_h/2] = \text{apply\_rotary}(x[n, :d_h/2],\ r), \qquad
#    \text{out}[n, d_h/2:] = \text{apply\_rotary}(x[n, d_h/2:],\ c). $$
#
# Then $q'_m \cdot k'_n$ is the row half's score, which depends on $r_m - r_n$, plus the column half's, which depends
# on $c_m - c_n$: a score depends on the two offsets between the patches and on nothing else. The prefix tokens are
# not turned at all. The base is RoPE-ViT's 100, not 10000: a grid has tens of positions per axis, not thousands.
# RoPE-ViT also learns mixed frequencies (RoPE-Mixed), each pair turning with a learned combination of row and
# column; the axial form here is its fixed baseline.
#
# **Each axis gets its own half, and the whole range of frequencies.** The split is by halves of the head, rows in
# channels $0 \dots d_h/2 - 1$. Two mistakes are common. Alternating the pairs between the axes (pair 0 with the
# row, pair 1 with the column, ...) is a valid 2D RoPE too, but not this layout: weights trained with one do not read
# with the other. Taking the 1D frequencies $\text{base}^{-2i/d_h}$ over all $d_h/2$ pairs and giving the first half
# to the rows leaves the rows only the fast pairs and the columns only the slow ones; each axis needs its own sweep
# from fast to slow, hence $4i/d_h$. And RoPE-ViT's `compute_axial_cis` puts the column (its $x$) first: its angles
# are these with the two halves swapped.

# %% [solution: rope_2d_angles]

# %% [solution: apply_rope_2d]

# %% [tests: rope_2d_angles_values]
# The docstring's worked example: grid 2 x 2, dh = 4, one frequency per axis (theta_0 = 1).
cos, sin = rope_2d_angles(2, 2, 4)
assert_close(torch.atan2(sin, cos), torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]),
             what="the angles of rope_2d_angles(2, 2, 4)", atol=1e-6,
             causes=[(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                      "the column's angles come first (RoPE-ViT's compute_axial_cis order); here the row's do.")],
             hint="rows in the first half of the pairs, columns in the second; patches row by row.")
# Two frequencies per axis, theta = [1, 100 ** (-4/8)] = [1, 0.1]: patch 1 is at row 0, column 1.
cos, sin = rope_2d_angles(1, 2, 8)
assert_close(torch.atan2(sin, cos), torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1]]),
             what="the angles of rope_2d_angles(1, 2, 8)", atol=1e-6,
             causes=[(torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.1]]),
                      "the pairs alternate between the axes; here the rows take the first half of the pairs, the "
                      "columns the second."),
                     (torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.1 ** 1.5]]),
                      "the 1D frequencies base ** (-2i / dh) over all the pairs: each axis needs its own, "
                      "theta_i = base ** (-4i / dh) for i < dh / 4.")],
             hint="theta_i = base ** (-4i / dh), the same frequencies for both axes.")

# %% [tests: apply_rope_2d_values]
# The docstring's worked example: a grid of 1 x 2 patches, dh = 4; patch 1 is at (r, c) = (0, 1).
x = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
assert_close(apply_rope_2d(x, 1, 2), torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, math.cos(1), math.sin(1)]]),
             what="apply_rope_2d([[1, 0, 1, 0], [1, 0, 1, 0]], 1, 2)", atol=1e-6,
             causes=[(torch.tensor([[1.0, 0.0, 1.0, 0.0], [math.cos(1), math.sin(1), 1.0, 0.0]]),
                      "the first half turned by the column and the second by the row; rows first.")],
             hint="the row (0) turns the first half, not at all here; the column (1) turns the second by 1 radian.")
with_class = apply_rope_2d(torch.cat((torch.tensor([[5.0, 6.0, 7.0, 8.0]]), x)), 1, 2, prefix_tokens=1)
assert_close(with_class[0], torch.tensor([5.0, 6.0, 7.0, 8.0]), what="the class token", atol=0.0,
             hint="prefix tokens have no place on the grid: they are not turned.")
assert_close(with_class[1:], apply_rope_2d(x, 1, 2), what="the patches after a class token", atol=1e-6,
             hint="patch n of the grid is token prefix_tokens + n: the class token moves no patch's position.")

# %% [tests: apply_rope_2d_relative]
# A score depends on the offsets only: the same patches one row lower, or one column further right, score alike.
q, k = torch.randn(4, 8), torch.randn(4, 8)
scores = apply_rope_2d(q, 2, 2) @ apply_rope_2d(k, 2, 2).T
lower = (apply_rope_2d(torch.cat((torch.zeros(2, 8), q)), 3, 2)
         @ apply_rope_2d(torch.cat((torch.zeros(2, 8), k)), 3, 2).T)  # a row of zeros above the same patches
assert_close(lower[2:, 2:], scores, what="scores one row lower", atol=1e-4,
             hint="a score q'.k' depends on the row and column offsets between two patches only.")


def right_by_one(x):
    """(4, 8) patches of a 2 x 2 grid -> (6, 8) patches of a 2 x 3 grid, moved one column right (zeros in column 0)."""
    return torch.cat((torch.zeros(2, 1, 8), x.reshape(2, 2, 8)), dim=1).reshape(6, 8)


moved = apply_rope_2d(right_by_one(q), 2, 3) @ apply_rope_2d(right_by_one(k), 2, 3).T
kept = torch.tensor([1, 2, 4, 5])  # where the 2 x 2 patches went on the 2 x 3 grid
assert_close(moved[kept][:, kept], scores, what="scores one column further right", atol=1e-4,
             hint="a score q'.k' depends on the row and column offsets between two patches only.")

# %% [tests: rope_2d_invalid_args]
assert_raises(ValueError, apply_rope_2d, torch.zeros(4, 6), 2, 2, hint="dh must be a multiple of 4.")
assert_raises(ValueError, apply_rope_2d, torch.zeros(5, 8), 2, 2, hint="5 tokens are not 0 + 2 * 2.")
assert_raises(ValueError, rope_2d_angles, 2, 2, 6, hint="head_dim must be a multiple of 4.")

# %% [demo: rope_picture]
# The score of a query turned at one patch with the same vector as key, turned at every patch of a 9 x 9 grid
# (dh = 16, base 100; the vector is all ones, so each pair scores 2 cos of its angle): the query at the centre, and
# near a corner. The pattern moves with the query and stays the same: a score depends on the offsets alone.
grid, head_dim = 9, 16
vector = torch.ones(head_dim)
turned = apply_rope_2d(vector.expand(grid * grid, head_dim), grid, grid)  # (81, dh): the vector at every patch
scores = turned @ turned.T  # (81, 81): query patch by key patch
chosen = [(4, 4), (1, 2)]
maps = [on_grid(scores[row * grid + column], grid, grid) for row, column in chosen]
down, right = chosen[0][0] - chosen[1][0], chosen[0][1] - chosen[1][1]  # from the second query to the first
overlap = maps[0][down:, right:] - maps[1][:grid - down, :grid - right]  # the offsets both maps hold
print(f"the two maps on the offsets they share differ by at most {overlap.abs().max().item():.2e}")
figure, axes = plt.subplots(1, 2, layout="constrained", figsize=(7.5, 3.2))
for axis, (row, column), image in zip(axes, chosen, maps):
    shown = axis.imshow(image, cmap="RdBu_r", vmin=-vector.dot(vector).item(), vmax=vector.dot(vector).item())
    axis.plot(column, row, "k+", markersize=10)
    axis.set(title=f"query at (row {row}, column {column})", xlabel="key's column", ylabel="key's row")
figure.colorbar(shown, ax=axes, label="score q' . k'", shrink=0.9)
plt.show()

# %% [markdown]
# ## 4. Swin's relative position index
#
# The Swin Transformer (Liu et al. 2021, "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows",
# section 3.2) attends within windows of $M \times M$ patches (7 x 7 in its models), and adds to each score a
# learned number for the **offset** between the two patches, as T5 did for the distance between two words (the
# first unit's part 7), per head. Inside a window the row offset $r_1 - r_2$ runs from $-(W_h - 1)$ to $W_h - 1$,
# the column offset likewise: $(2W_h - 1)(2W_w - 1)$ offsets, 169 for Swin's windows, in a table $\hat B$ of
# $(2W_h - 1) \times (2W_w - 1)$ numbers per head. Which entry serves the pair of patches $n_1$ (the query) and
# $n_2$ (the key)? Shift each offset to count from 0 and read the two as a row-major index:
#
# $$ \text{index}[n_1, n_2] = (r_1 - r_2 + W_h - 1)\,(2W_w - 1) + (c_1 - c_2 + W_w - 1). $$
#
# The index is computed once per window size; every window, every head and every image reuses it.
#
# **Two slips give a wrong index that still looks like one.** The row's multiplier is the number of column offsets,
# $2W_w - 1$: with $2W_w$ the indices skip entries and run past the table's end (this is the off-by-one in code
# that counts the table's side as $2W$). And the offset is the query's patch minus the key's: the key's minus the
# query's gives the transposed index, each pair reading the entry of its mirror offset. Both pass a test of the
# shape, and the transposed index even has the right diagonal (a patch and itself, the table's middle entry): only
# the values off the diagonal tell it from the right one.

# %% [solution: window_relative_index]

# %% [tests: window_relative_index_values]
# The docstring's worked example: a 1 x 2 window, a table of 1 x 3 offsets.
assert_close(window_relative_index(1, 2), torch.tensor([[1, 0], [2, 1]]), what="window_relative_index(1, 2)",
             atol=0, causes=[(torch.tensor([[1, 2], [0, 1]]),
                              "the key's patch minus the query's: the transpose of the right index.")],
             hint="(r1 - r2 + Wh - 1)(2Ww - 1) + (c1 - c2 + Ww - 1): query minus key, rows before columns.")
# A 2 x 2 window: patches (0, 0), (0, 1), (1, 0), (1, 1) and a table of 3 x 3 offsets, the middle one 4.
assert_close(window_relative_index(2, 2), torch.tensor([[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]),
             what="window_relative_index(2, 2)", atol=0,
             causes=[(torch.tensor([[4, 5, 7, 8], [3, 4, 6, 7], [1, 2, 4, 5], [0, 1, 3, 4]]),
                      "the key's patch minus the query's: the transpose of the right index."),
                     (torch.tensor([[5, 4, 1, 0], [6, 5, 2, 1], [9, 8, 5, 4], [10, 9, 6, 5]]),
                      "the row offset multiplied by 2Ww = 4: the table has 2Ww - 1 = 3 column offsets per row."),
                     (torch.tensor([[0, -1, -3, -4], [1, 0, -2, -3], [3, 2, 0, -1], [4, 3, 1, 0]]),
                      "the offsets are not shifted by W - 1 to count from 0: negative indices.")],
             hint="each entry in 0 .. (2Wh - 1)(2Ww - 1) - 1; the diagonal is the middle entry.")
index = window_relative_index(3, 2)
assert tuple(index.shape) == (6, 6) and index.dtype == torch.int64, \
    f"expected (Wh * Ww, Wh * Ww) = (6, 6) int64, got {tuple(index.shape)} {index.dtype}"

# %% [tests: window_relative_index_invalid_args]
assert_raises(ValueError, window_relative_index, 0, 2, hint="a window needs at least one row.")
assert_raises(ValueError, window_relative_index, 2, 0, hint="a window needs at least one column.")

# %% [demo: index_picture]
# Your index for a window of 2 x 3 patches: an entry of the 3 x 5 table of offsets for each pair of patches.
window_h, window_w = 2, 3
index = window_relative_index(window_h, window_w)  # (6, 6)
offsets = (2 * window_h - 1) * (2 * window_w - 1)
middle = (window_h - 1) * (2 * window_w - 1) + window_w - 1
print(f"entries from {index.min().item()} to {index.max().item()}; the table has {offsets} rows (0 .. {offsets - 1})")
print(f"distinct entries: {index.unique().numel()} of the {offsets} offsets")
print(f"the diagonal is the middle entry {middle}:", bool((index.diagonal() == middle).all()))
print(f"a pair and its mirror read mirrored offsets, index + index.T = 2 * {middle}:",
      bool((index + index.T == 2 * middle).all()))
figure, axis = plt.subplots(layout="constrained", figsize=(5.2, 4.2))
shown = axis.imshow(index, cmap="viridis")
for n1 in range(index.shape[0]):
    for n2 in range(index.shape[1]):  # the numbers of a 6 x 6 picture, not a computation
        axis.text(n2, n1, str(index[n1, n2].item()), ha="center", va="center", fontsize=9,
                  color="white" if index[n1, n2] < offsets / 2 else "black")
labels = [f"{n}: ({n // window_w}, {n % window_w})" for n in range(window_h * window_w)]
axis.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
axis.set_yticks(range(len(labels)), labels, fontsize=8)
axis.set(xlabel="key patch n2: (row, column)", ylabel="query patch n1: (row, column)",
         title="which offset each pair reads (2 x 3 window)")
figure.colorbar(shown, ax=axis, label="row of the bias table")
plt.show()

# %% [markdown]
# ## 5. Window scores with their relative bias
#
# Swin's attention in a window (section 3.2, equation 4) is the scaled product of queries and keys, plus the bias of
# each pair's offset:
#
# $$ \text{scores}[w, h, n_1, n_2] = \text{scale}\cdot q_{w,h,n_1}\cdot k_{w,h,n_2}
#    + \hat B\big[\text{index}[n_1, n_2],\ h\big], \qquad \text{scale} = 1/\sqrt{d_h}. $$
#
# The queries and keys of all the windows of all the images come stacked, $(B \cdot n_W, H, N, d_h)$ with
# $N = W_h W_w$ patches a window, and the bias is the same for every window: gather it once from the table with
# your index, $(H, N, N)$, and add it to every window's scores. The scale multiplies the product only, never the
# bias (which is learned at the scores' own size). Swin's shifted windows also add a mask of their own, left out
# here.
#
# When Swin is fine-tuned with larger windows (at a higher resolution), the learned table of
# $(2M - 1) \times (2M - 1)$ offsets is itself resized by bicubic interpolation, like ViT's table of positions
# (Swin, section 3.2): your `resize_learned_grid` with no prefix rows does it, and part 7 uses it so. Swin V2 (Liu
# et al. 2022) replaced the table by a small network of the log-spaced offsets, which reads any window size.

# %% [solution: window_scores]

# %% [tests: window_scores_values]
# The docstring's worked example: one window of 1 x 2 patches, one head, dh = 1, the offsets -1, 0, +1 biased by
# 0, 0.5 and 1.
q = torch.tensor([[[[1.0], [2.0]]]])
k = torch.tensor([[[[1.0], [1.0]]]])
bias_table = torch.tensor([[0.0], [0.5], [1.0]])
assert_close(window_scores(q, k, bias_table, 1, 2, scale=1.0), torch.tensor([[[[1.5, 1.0], [3.0, 2.5]]]]),
             what="the worked example", atol=1e-6,
             causes=[(torch.tensor([[[[1.5, 2.0], [2.0, 2.5]]]]),
                      "the bias gathered with the transposed index: the key's patch minus the query's.")],
             hint="scale * q k^T, plus bias_table[index] for each head.")
# The same with scale 0.5: q k^T * 0.5 = [[0.5, 0.5], [1, 1]], and the bias as it is.
assert_close(window_scores(q, k, bias_table, 1, 2, scale=0.5), torch.tensor([[[[1.0, 0.5], [2.0, 1.5]]]]),
             what="the worked example with scale=0.5", atol=1e-6,
             causes=[(torch.tensor([[[[0.75, 0.5], [1.5, 1.25]]]]),
                      "the scale multiplies the bias too; it multiplies q k^T only.")],
             hint="the scale multiplies q k^T, never the bias.")
# Three windows, two heads of 4, a 2 x 3 window: the shape, and each head reads its own column of the table.
q, k = torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4)
bias_table = torch.zeros(3 * 5, 2)
bias_table[:, 1] = 1.0
scores = window_scores(q, k, bias_table, 2, 3)
assert tuple(scores.shape) == (3, 2, 6, 6), f"expected (B * nW, H, N, N) = (3, 2, 6, 6), got {tuple(scores.shape)}"
assert_close(scores[:, 1] - scores[:, 0], (q[:, 1] @ k[:, 1].transpose(-2, -1) - q[:, 0] @ k[:, 0].transpose(-2, -1))
             / 2 + 1.0, what="head 1 minus head 0", atol=1e-5,
             hint="head h adds column h of the table; the default scale is 1 / sqrt(dh) = 1/2.")

# %% [tests: window_scores_invalid_args]
q, k = torch.zeros(1, 1, 2, 1), torch.zeros(1, 1, 2, 1)
assert_raises(ValueError, window_scores, q, k, torch.zeros(4, 1), 1, 2,
              hint="the table must be ((2Wh - 1)(2Ww - 1), H) = (3, 1).")
assert_raises(ValueError, window_scores, q, k, torch.zeros(3, 1), 2, 2, hint="2 patches are not a 2 x 2 window.")

# %% [demo: bias_picture]
# What a bias alone does. With q = k = 0 the scores are the bias; two heads of a 5 x 5 window, each with a table
# drawn by hand over the 9 x 9 offsets: head 0 prefers the patches near the query, head 1 those on its row. The
# attention weights of one query patch, softmax of its row of your scores.
window = 5
rows = torch.arange(-(window - 1), window).abs()  # |r1 - r2| for the table's 9 rows of offsets
table_image = torch.stack((-(rows[:, None] + rows[None, :]).float(),  # head 0: minus the distance
                           torch.where(rows[:, None] == 0, 3.0, 0.0).expand(2 * window - 1, 2 * window - 1)),
                          dim=-1)  # (9, 9, H): the table as an image of offsets with a channel per head
bias_table = table_image.reshape(-1, 2)  # ((2W - 1)^2, H): offsets row by row, as the index reads them
zeros = torch.zeros(1, 2, window * window, 4)
weights = window_scores(zeros, zeros, bias_table, window, window).softmax(-1)[0]  # (H, N, N)
query = (1, 3)
maps = [on_grid(weights[head, query[0] * window + query[1]], window, window) for head in range(2)]
print("each query's weights sum to 1:", torch.allclose(weights.sum(-1), torch.ones(2, window * window)))
figure, axes = plt.subplots(1, 2, layout="constrained", figsize=(7.5, 3.4))
for axis, image, title in zip(axes, maps, ("head 0: the near patches", "head 1: the query's row")):
    shown = axis.imshow(image, cmap="Blues", vmin=0)
    axis.plot(query[1], query[0], "r+", markersize=10)
    axis.set(title=title, xlabel="key's column", ylabel="key's row")
    figure.colorbar(shown, ax=axis, label="attention weight", shrink=0.85)
figure.suptitle(f"the weights of the query at (row {query[0]}, column {query[1]}), from the bias alone")
plt.show()

# %% [markdown]
# ## 6. Speed
#
# The grader times your `window_scores` against the reference on images of windows whose number and size grow with
# the length it draws, once the function is correct: {timing_bands} of the reference's time, none beyond; at most
# {rubric:TIMING_MEMORY_SCORES} score-sized tensors of memory; no Python loop over windows, heads or patches. What
# keeps it fast: the index and the gathered bias, $(H, N, N)$, are made once, not per window, and the bias is added
# to the scores in the product's own pass: `torch.baddbmm(bias, q, k^T, alpha=scale)` writes
# $\text{bias} + \text{scale}\cdot q k^T$ in one sweep over the output, where `scale * q @ k^T + bias` makes the
# output twice. The check below counts the lines and tensor operations your function runs at growing sizes, as the
# grader does: a count that grows with the size is a loop.

# %% [tests: window_scores_speed]
def window_inputs(length):
    """Windows as the grader draws them: about 4 * length patches, cut into square windows whose side grows slowly."""
    side = max(2, math.isqrt(length // 8))
    windows = max(1, 4 * length // (side * side))
    return (torch.randn(windows, 2, side * side, 8), torch.randn(windows, 2, side * side, 8),
            torch.randn((2 * side - 1) ** 2, 2), side, side)


assert_no_loops(window_scores, inputs=window_inputs)

# %% [markdown]
# ## 7. Train small, read large
#
# A task that only the arrangement of an image decides. Each image is a grid of patches of 4 x 4 pixels, dark noise
# but for a red square, a blue square and up to two green ones that do not count, each filling one patch. **Label
# 0**: the red square is on the blue one's row, left of it. **Label 1**: it is in the blue one's column, above it.
# The images come in **twins**: the two images of a pair hold the very same patches, pixel for pixel, at other
# cells. A model without positions sees a bag of patches, and two twins are one bag: it must answer both alike, so
# it is right on exactly one of them, 50%, by construction. Shuffle the patches of an image and a model with
# positions has lost what it learnt to read.
#
# A tiny ViT (`vision_capstone.py`, in this folder: a patch embedding, a class token, two blocks of width 32 with two
# heads of $d_h = 16$, the answer read from the mean of the patches' outputs) is trained on 4 x 4 grids for 600 steps,
# once per method: **none**; **sin-cos**, your `sincos_2d_table` added to the tokens; **learned**, a table learned with
# the model; **2D RoPE**, your `apply_rope_2d` on every head's queries and keys; **Swin bias**, your `window_scores`
# in every block, one window covering the whole grid. Then each is read on held-out images at 4 x 4, as they are and
# shuffled, and at **6 x 6 and 8 x 8**, grids it never saw, with nothing tuned:
#
# * the sin-cos table is built again at the new grid (rows and columns past 3 are new to the model), and, as a
#   second reading of the same model, its trained 4 x 4 table is resized by your `resize_learned_grid` instead;
# * the learned table is resized by your `resize_learned_grid`, the class token's row kept apart (part 2);
# * RoPE turns the new grid's patches by their own rows and columns (part 3);
# * each Swin table of $7 \times 7$ offsets is resized as an image to the new window's $(2W - 1) \times (2W - 1)$ by
#   your `resize_learned_grid` with no prefix rows (part 5).
#
# Everything runs on your functions; a method whose function is not written yet is left out, and the table says why.
# About 30 seconds on the kit's 2-core CPU. First, what the model sees: a twin pair at 4 x 4, and an image at 8 x 8.

# %% [demo: twins_picture]
from vision_capstone import PATCH, TRAINED_GRID, patches_of, twin_images

images, labels = twin_images(1, TRAINED_GRID, torch.Generator().manual_seed(3))
larger, larger_labels = twin_images(1, 8, torch.Generator().manual_seed(4))
same = sorted(map(tuple, patches_of(images)[0].tolist())) == sorted(map(tuple, patches_of(images)[1].tolist()))
print("the twins hold the same patches, only at other cells:", same)
shown = [(images[0], f"label {labels[0].item()}: red left of blue"),
         (images[1], f"label {labels[1].item()}: red above blue"),
         (larger[1], f"8 x 8, label {larger_labels[1].item()}")]
figure, axes = plt.subplots(1, 3, layout="constrained", figsize=(8, 2.9))
for axis, (image, title) in zip(axes, shown):
    rows, columns = image.shape[-2] // PATCH, image.shape[-1] // PATCH
    axis.imshow(image.permute(1, 2, 0).clamp(0, 1), extent=(0, columns, rows, 0))  # one unit a patch
    axis.set(title=title, xticks=range(columns + 1), yticks=range(rows + 1))
    axis.grid(color="0.4", linewidth=0.5)
    axis.tick_params(labelsize=7)
plt.show()

# %% [demo: vision_run]
import os
import time

from vision_capstone import conclusions, figure_of, train_small_read_large

# When the notebook is graded it runs again: nothing is trained then. POSITIONAL_KIT_QUICK=1 trains 3 steps only.
GRADING = os.environ.get("NBGRADER_EXECUTION") == "autograde"
QUICK = os.environ.get("POSITIONAL_KIT_QUICK") == "1"
started = time.perf_counter()
experiment = None
if GRADING:
    print("nbgrader is grading this notebook: part 7 trains nothing here, so that grading the class stays fast. "
          "Run the notebook yourself to see it. Part 7 is not graded.")
else:
    experiment = train_small_read_large(globals(), seed=0, steps=3 if QUICK else 600)
    if QUICK:
        print("POSITIONAL_KIT_QUICK is set: 3 training steps only, so the figures are not the lesson's.")
    print(experiment.table())
print(f"All of it: {time.perf_counter() - started:.0f} s")

# %% [demo: vision_picture]
if experiment is not None and experiment.readings:
    figure_of(experiment)
    plt.show()
else:  # the grading run trains nothing: the plot would be empty
    print("No model was trained in this run, so there are no bars to draw.")

# %% [markdown]
# ### What this run shows
#
# The sentences below are computed from the table above, on this machine and this run: read them, not a summary
# written in advance. Where chance lies for this many images; what the model without positions scores; which
# models fall to chance when their patches are shuffled; which read the larger grids best and which lose the most;
# and what the same sin-cos model does with its table built again or resized.

# %% [demo: vision_conclusions]
if experiment is not None:
    for sentence in conclusions(experiment):
        print("*", sentence)
else:
    print("No model was trained in this run: run the notebook yourself for the conclusions.")

# %% [markdown]
# **How to read them.** Each mechanism predicts where to look. At 4 x 4 every method with positions can tell a row
# from a column; without positions, and with shuffled patches, there is nothing to tell them by. At a larger grid
# the question is whether the model meets anything it never saw. The sin-cos table built again hands the first
# layer the vectors of rows and columns 4 to 7, which it never saw; resized, the same model sees its own 4 x 4 table
# drawn finer, every vector within what it learnt, and so does the learned table. RoPE and Swin's bias see offsets
# only: RoPE meets offsets of up to 7 patches where it learnt up to 3, but the offset that says "the same row" is
# 0 on every grid; Swin's resized table stretches the offsets instead, so that at 8 x 8 a patch one step away reads
# the bias learnt for about half a step, between a patch and its neighbour. Resizing is interpolation and building
# again is extrapolation: the choice that position interpolation (the second unit's part 6) made for RoPE on a line.
# A model this small, trained for 600 steps on one task, is not a ViT on ImageNet: the size of the differences here
# is this model's, and another seed moves the close ones (`train_small_read_large(globals(), seed=1)` runs it again
# with another).
#
# ## What you built
#
# | method | what says where a patch is | read at a larger grid | paper |
# |---|---|---|---|
# | 2D sine-cosine | a fixed vector per patch: half for its row, half for its column | built again, or resized | MoCo v3 2021, MAE 2022 |
# | learned table | a learned vector per patch, the class token's apart | resized as an image | ViT 2021, DeiT 2021 |
# | axial 2D RoPE | each half of a head turned by the row or the column | as it is | RoPE-ViT 2024, EVA-02 2023 |
# | Swin's bias | a learned number per offset in a window and head | its table resized | Swin 2021 |
#
# All of them answer one question: how does the model know that two patches are neighbours on the grid, and not
# merely neighbours in the sequence?
