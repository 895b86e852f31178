"""The fourth unit's sample class, for `python -m autograder demo --unit vision_positions`: each submission is the
reference with one line changed, a mistake students make with a grid, which must lose points in its own task only
and be named in the feedback. `check-unit` grades each.
"""

from autograder.core.rubric import SampleMistake

MISTAKES = (
    # MAE's meshgrid: its first array is the column, so the column's half comes first.
    SampleMistake("sincos_columns_first", "sincos_2d_table", "the column's table comes first",
                  "grid = torch.cat((rows[:, None, :].expand(grid_h, grid_w, dim // 2),\n"
                  "                      columns[None, :, :].expand(grid_h, grid_w, dim // 2)), dim=2)",
                  "grid = torch.cat((columns[None, :, :].expand(grid_h, grid_w, dim // 2),\n"
                  "                      rows[:, None, :].expand(grid_h, grid_w, dim // 2)), dim=2)"),
    # The class token left out of the resized table (kept apart, then forgotten).
    SampleMistake("resize_prefix_dropped", "resize_learned_grid", "the prefix rows are dropped",
                  "prefix, patches = table[:prefix_tokens], table[prefix_tokens:]",
                  "prefix, patches = table[:0], table[prefix_tokens:]"),
    # RoPE's pairs split between the axes: rows on the even pairs, columns on the odd ones.
    SampleMistake("rope_2d_axes_swapped", "rope_2d", "column",
                  "angle = torch.cat((rows[:, None] * theta, columns[:, None] * theta), dim=1)",
                  "angle = torch.cat((columns[:, None] * theta, rows[:, None] * theta), dim=1)"),
    # Swin's index transposed: the key's patch minus the query's.
    SampleMistake("window_index_transposed", "window_relative_index", "the transpose of the right one",
                  "row_offset = rows[:, None] - rows[None, :] + (window_h - 1)  # (N, N): 0 .. 2Wh - 2\n"
                  "    column_offset = columns[:, None] - columns[None, :] + (window_w - 1)",
                  "row_offset = rows[None, :] - rows[:, None] + (window_h - 1)  # (N, N): 0 .. 2Wh - 2\n"
                  "    column_offset = columns[None, :] - columns[:, None] + (window_w - 1)"),
    # The scale on the bias too.
    SampleMistake("window_scale_on_bias", "window_scores", "scale",
                  "flat.baddbmm_(q.reshape(windows * heads, patches, head_dim),\n"
                  "                  k.reshape(windows * heads, patches, head_dim).transpose(1, 2), alpha=scale)",
                  "flat.baddbmm_(q.reshape(windows * heads, patches, head_dim),\n"
                  "                  k.reshape(windows * heads, patches, head_dim).transpose(1, 2), beta=scale, alpha=scale)"),
)
