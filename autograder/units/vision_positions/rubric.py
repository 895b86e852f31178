"""The fourth unit's rubric: positions of pixels (2D sine-cosine, a learned grid resized, 2D RoPE, Swin's bias).

A test id is ``<task>_<what>``, as in the units before it; ids are unique across units (they are nbgrader grade
ids of one course). The cases live in ``cases/<task>.py``; the timed path's call in ``job.py``.

DRAFT (issue 39, branch vision-positions-wip): the tasks, tests and points are set; the cases modules, job.py,
the lesson and the self-checks are still to be written.
"""

from autograder.core.rubric import Task, Test, TimedPath, complete

TITLE = "Positions of pixels"
ORDER = 4  # after the second unit, whose rotation it reuses
SEED = 23937628

# The second unit's rotation, reused by apply_rope_2d: students get its reference finished in their file.
BORROWS = {"rotary_alibi": ("apply_rotary",)}
# The lesson's last part trains a tiny ViT with each method of the unit (no answer in it).
SHIPPED = ("vision_capstone.py",)
# `python -m autograder capstone --unit vision_positions`: the experiment on the kit's reference.
CAPSTONE = ("vision_positions.vision_capstone",)

# In the lesson's order.
TASKS = (
    Task("sincos_2d_table", "A fixed 2D sine-cosine table", ("sincos_2d_table",)),
    Task("resize_learned_grid", "A learned grid read at another resolution", ("resize_learned_grid",)),
    Task("rope_2d", "Axial 2D RoPE", ("rope_2d_angles", "apply_rope_2d")),
    Task("window_relative_index", "Swin's relative position index", ("window_relative_index",)),
    Task("window_scores", "Window scores with their relative bias", ("window_scores",)),
)

TESTS = (
    Test("sincos_2d_table_values", "sincos_2d_table", 12,
         "rows in the first half, columns in the second, sines before cosines in each, w_k = base^(-4k/dim)"),
    Test("sincos_2d_table_contract", "sincos_2d_table", 5,
         "every level of the contract: prefix tokens, a grid of one row or column, every float dtype, the meta "
         "device"),
    Test("sincos_2d_table_invalid_args", "sincos_2d_table", 2,
         "ValueError for a dim that is not a positive multiple of 4, a grid side below 1, negative prefix tokens",
         needs="sincos_2d_table_values"),
    Test("resize_learned_grid_values", "resize_learned_grid", 10,
         "the patch rows resized as an image (bicubic and bilinear, antialias or not), larger and smaller grids"),
    Test("resize_learned_grid_prefix", "resize_learned_grid", 5,
         "the prefix rows kept as they are, 0, 1 or several of them, never resized with the grid"),
    Test("resize_learned_grid_contract", "resize_learned_grid", 5,
         "every level of the contract: non-square grids, the same grid, half precision through float32, the table "
         "left unchanged"),
    Test("resize_learned_grid_invalid_args", "resize_learned_grid", 2,
         "ValueError for a table whose rows are not prefix + old_h * old_w, a side below 1, an unknown mode",
         needs="resize_learned_grid_values"),
    Test("rope_2d_angles_values", "rope_2d", 7,
         "rows turn the first half of the pairs, columns the second, theta_i = base^(-4i/dh)"),
    Test("apply_rope_2d_values", "rope_2d", 10,
         "each half of the head turned by its axis, prefix tokens untouched, any leading axes, every float dtype"),
    Test("apply_rope_2d_relative", "rope_2d", 4,
         "a score q'.k' depends only on the row and column offsets between two patches"),
    Test("rope_2d_invalid_args", "rope_2d", 2,
         "ValueError for a head size that is not a multiple of 4, tokens that are not prefix + grid_h * grid_w",
         needs="apply_rope_2d_values"),
    Test("window_relative_index_values", "window_relative_index", 10,
         "(r1 - r2 + Wh - 1)(2Ww - 1) + (c1 - c2 + Ww - 1), square and oblong windows, a window of one patch"),
    Test("window_relative_index_invalid_args", "window_relative_index", 2,
         "ValueError for a window side below 1", needs="window_relative_index_values"),
    Test("window_scores_values", "window_scores", 12,
         "scale * q k^T plus the bias gathered per head, the scale never on the bias, oblong windows"),
    Test("window_scores_invalid_args", "window_scores", 2,
         "ValueError for patches that are not Wh * Ww, a table that is not ((2Wh - 1)(2Ww - 1), H)",
         needs="window_scores_values"),
    # The timing tier: the score path against the reference, once it is correct.
    Test("window_scores_speed", "timing", 10, "window_scores timed against the reference: no Python loop over "
                                             "windows, heads or patches, time and memory within the bands",
         details="visible"),
)

# The nbgrader assignment, the module students write, and this folder's name are one name.
ASSIGNMENT = "vision_positions"

TIMED_PATHS = (
    # The path calls the student's window_relative_index: where it is wrong (its own task has charged it), the
    # grader's stand-in takes its place in both jobs.
    TimedPath("window_scores", "window_scores_speed", ("window_scores", "window_relative_index"),
              ("window_scores",),
              helpers=(("window_relative_index", "window_relative_index", "scrambled_window_index"),),
              describe="window_scores(q, k, bias_table, Wh, Ww)"),
)

complete(globals())
