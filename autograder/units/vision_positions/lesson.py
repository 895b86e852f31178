# The lesson of the fourth unit, as text. `python -m autograder build` turns it into nbgrader's source notebook
# assignments/source/vision_positions/vision_positions.ipynb; edit this file, not that one.
# The cell kinds are those of the units before it ([markdown], plain code, [demo: NAME], [solution: FUNCTION],
# [tests: TEST_ID], [given: UNIT]). The answers live only in solutions/vision_positions.py; nothing below may
# contain one.
# SKELETON (issue 39): every cell the build needs, with the visible checks of the docstrings' worked examples; the
# lesson's text, pictures and experiment are still to be written.

# %% [markdown]
# # Positions of pixels
#
# | part | what | your task (the `pytest -k` word) | points |
# |---|---|---|---|
# | 1 | a fixed 2D sine-cosine table | `sincos_2d_table` | {points:sincos_2d_table} |
# | 2 | a learned grid read at another resolution | `resize_learned_grid` | {points:resize_learned_grid} |
# | 3 | axial 2D RoPE | `rope_2d` | {points:rope_2d} |
# | 4 | Swin's relative position index | `window_relative_index` | {points:window_relative_index} |
# | 5 | window scores with their bias | `window_scores` | {points:window_scores} |
# | 6 | the speed of the window path | (timed by the grader) | {points:timing} |
#
# **Rules of the game.** No Python loop over patches, positions or windows. Patches are numbered row by row:
# patch $n = r \cdot W + c$ at row $r$ and column $c$ of a grid $W$ columns wide, counted from 0.

# %%
import math

import torch

# %% [demo: setup]
# The checks used by the test cells. This cell is read-only.
from checks import assert_close, assert_no_loops, assert_raises

# %% [markdown]
# ## The second unit's rotation, given
#
# `apply_rotary` is the second unit's reference, given here finished; `apply_rope_2d` in part 3 turns each half of
# a head with it.

# %% [given: rotary_alibi]

# %% [markdown]
# ## 1. A fixed 2D sine-cosine table

# %% [solution: sincos_2d_table]

# %% [tests: sincos_2d_table_values]
assert_close(sincos_2d_table(1, 2, 4), torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 0.8415, 0.5403]]),
             what="sincos_2d_table(1, 2, 4)", atol=1e-4,
             hint="the row's half first, then the column's; in each half the sines, then the cosines.")

# %% [tests: sincos_2d_table_contract]
assert_close(sincos_2d_table(1, 2, 4, prefix_tokens=1)[0], torch.zeros(4),
             what="sincos_2d_table(1, 2, 4, prefix_tokens=1)[0]", atol=0.0,
             hint="the prefix rows come first and are zeros.")

# %% [tests: sincos_2d_table_invalid_args]
assert_raises(ValueError, sincos_2d_table, 2, 2, 6, hint="dim must be a positive multiple of 4.")

# %% [markdown]
# ## 2. A learned grid read at another resolution

# %% [solution: resize_learned_grid]

# %% [tests: resize_learned_grid_values]
assert_close(resize_learned_grid(torch.tensor([[0.0], [1.0]]), (1, 2), (1, 4), prefix_tokens=0, mode="bilinear"),
             torch.tensor([[0.0], [0.25], [0.75], [1.0]]),
             what='resize_learned_grid([[0.], [1.]], (1, 2), (1, 4), prefix_tokens=0, mode="bilinear")', atol=1e-6,
             hint="the patch rows are an image of dim channels; align_corners=False.")

# %% [tests: resize_learned_grid_prefix]
table = torch.arange(10.0).reshape(5, 2)
assert_close(resize_learned_grid(table, (2, 2), (3, 3))[0], table[0], what="the class token's row", atol=0.0,
             hint="the prefix rows are kept as they are.")

# %% [tests: resize_learned_grid_contract]
assert_close(resize_learned_grid(table, (2, 2), (2, 2)), table, what="the same grid", atol=0.0,
             hint="the same grid gives the table back.")

# %% [tests: resize_learned_grid_invalid_args]
assert_raises(ValueError, resize_learned_grid, table, (2, 3), (3, 3), hint="5 rows are not 1 + 2 * 3.")

# %% [markdown]
# ## 3. Axial 2D RoPE

# %% [solution: rope_2d_angles]

# %% [solution: apply_rope_2d]

# %% [tests: rope_2d_angles_values]
cos, sin = rope_2d_angles(2, 2, 4)
assert_close(torch.atan2(sin, cos), torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]),
             what="the angles of rope_2d_angles(2, 2, 4)", atol=1e-6, hint="rows in the first half, columns in the second.")

# %% [tests: apply_rope_2d_values]
assert_close(apply_rope_2d(torch.tensor([[[1.0, 0.0, 1.0, 0.0]]]), 1, 1), torch.tensor([[[1.0, 0.0, 1.0, 0.0]]]),
             what="apply_rope_2d at patch (0, 0)", atol=1e-6, hint="at row 0 and column 0 nothing turns.")

# %% [tests: apply_rope_2d_relative]
q, k = torch.randn(4, 8), torch.randn(4, 8)
scores = apply_rope_2d(q, 2, 2) @ apply_rope_2d(k, 2, 2).T
shifted = apply_rope_2d(torch.cat((torch.zeros(2, 8), q)), 3, 2) @ apply_rope_2d(torch.cat((torch.zeros(2, 8), k)), 3, 2).T
assert_close(shifted[2:, 2:], scores, what="scores one row lower", atol=1e-4,
             hint="a score depends on the offsets between two patches only.")

# %% [tests: rope_2d_invalid_args]
assert_raises(ValueError, apply_rope_2d, torch.zeros(4, 6), 2, 2, hint="dh must be a multiple of 4.")

# %% [markdown]
# ## 4. Swin's relative position index

# %% [solution: window_relative_index]

# %% [tests: window_relative_index_values]
assert_close(window_relative_index(1, 2), torch.tensor([[1, 0], [2, 1]]), what="window_relative_index(1, 2)", atol=0,
             hint="(r1 - r2 + Wh - 1)(2Ww - 1) + (c1 - c2 + Ww - 1).")

# %% [tests: window_relative_index_invalid_args]
assert_raises(ValueError, window_relative_index, 0, 2, hint="a window needs at least one row.")

# %% [markdown]
# ## 5. Window scores with their bias

# %% [solution: window_scores]

# %% [tests: window_scores_values]
q = torch.tensor([[[[1.0], [2.0]]]])
k = torch.tensor([[[[1.0], [1.0]]]])
assert_close(window_scores(q, k, torch.tensor([[0.0], [0.5], [1.0]]), 1, 2, scale=1.0),
             torch.tensor([[[[1.5, 1.0], [3.0, 2.5]]]]), what="the worked example", atol=1e-6,
             hint="scale * q k^T, plus bias_table[index] per head.")

# %% [tests: window_scores_invalid_args]
assert_raises(ValueError, window_scores, q, k, torch.zeros(4, 1), 1, 2, hint="the table must be (3, 1).")

# %% [markdown]
# ## 6. Speed

# %% [tests: window_scores_speed]
def window_inputs(length):
    side = max(2, math.isqrt(length // 8))
    windows = max(1, 4 * length // (side * side))
    return (torch.randn(windows, 2, side * side, 8), torch.randn(windows, 2, side * side, 8),
            torch.randn((2 * side - 1) ** 2, 2), side, side)


assert_no_loops(window_scores, inputs=window_inputs)
