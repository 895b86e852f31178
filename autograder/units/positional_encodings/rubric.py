"""The first unit's rubric, in one place: tasks, their graded tests, points and timed paths.

A test id is ``<task>_<what>``; the task names double as ``pytest -k`` words,
nbgrader grade ids and feedback headings. Each test is all-or-nothing: it
passes when every one of its hidden cases passes. The cases themselves (inputs,
tolerances, mistake diagnoses) live in ``cases/<task>.py`` beside this file; the
grader's limits, the same for every unit, in ``autograder/sandbox/limits.py``.
"""

from autograder.core.rubric import Task, Test, TimedPath, complete

TITLE = "Positional encodings"
ORDER = 1  # the first unit of the course
SHIPPED = ("capstone.py",)  # kit code the lesson's last part needs, shipped with the release (no answer in it)
# `python -m autograder capstone --unit positional_encodings`: the module (under autograder/units) and its arguments.
CAPSTONE = ("positional_encodings.capstone",)

# In the lesson's order (the notebook teaches learned positions first, as the lecture does): the feedback, the
# table, grades.csv and the documentation follow it.
TASKS = (
    Task("learned", "Learned absolute positions", ("LearnedPositionalEmbedding",)),
    Task("sinusoidal", "Sinusoidal position table", ("sinusoidal_table",)),
    Task("relative_positions", "Clipped relative positions (Shaw)", ("clipped_relative_positions",)),
    Task("shaw", "Shaw relative-key scores", ("shaw_scores",)),
    Task("t5_bucket", "T5 relative-position buckets", ("t5_relative_position_bucket",)),
    Task("t5_bias", "T5 relative attention bias", ("t5_bias",)),
    Task("biased_scores", "Scores plus a position bias", ("biased_scores",)),
)

TESTS = (
    Test("learned_parameter", "learned", 3, "weight is a registered (max_len, d_model) Parameter drawn from N(0, 0.02^2)"),
    Test("learned_add", "learned", 3, "mode 'add' returns x + weight[:L]"),
    Test("learned_concat", "learned", 2, "mode 'concat' appends weight[:L] on the last axis"),
    Test("learned_length_check", "learned", 3, "L == max_len works; L > max_len and unknown modes raise ValueError"),
    Test("learned_gradients", "learned", 2, "gradients reach rows 0..L-1 of weight and no other"),
    Test("sinusoidal_values", "sinusoidal", 7, "values against the reference, several sizes, bases and dtypes"),
    Test("sinusoidal_edge_cases", "sinusoidal", 2, "one position, d_model 2, an empty table, the dtype asked for"),
    Test("sinusoidal_invalid_args", "sinusoidal", 4, "ValueError for odd, zero or negative d_model and negative lengths",
         needs="sinusoidal_values"),
    Test("relative_positions_values", "relative_positions", 6, "clip(j - i, -k, k) + k for many sizes, Lq != Lk"),
    Test("relative_positions_edge_cases", "relative_positions", 2, "length 1, k = 0, k beyond the lengths, int64 result"),
    Test("shaw_values", "shaw", 10, "scores against the reference for several sizes and k"),
    Test("shaw_scale", "shaw", 3, "an explicit scale multiplies both terms"),
    Test("shaw_edge_cases", "shaw", 4, "batch 1, one head, length 1, Lq != Lk, float64"),
    Test("t5_bucket_bidirectional", "t5_bucket", 7, "encoder buckets, bucket for bucket, over -2000..2000"),
    Test("t5_bucket_causal", "t5_bucket", 5, "decoder buckets (bidirectional=False)"),
    Test("t5_bucket_settings", "t5_bucket", 2, "other num_buckets and max_distance"),
    Test("t5_bucket_invalid_args", "t5_bucket", 3, "ValueError where the formula is undefined",
         needs="t5_bucket_bidirectional"),
    Test("t5_bias_values", "t5_bias", 5, "bias_table[bucket(j - i), h] for several sizes and settings"),
    Test("t5_bias_layout", "t5_bias", 4, "shape (1, H, Lq, Lk), Lq != Lk, dtype of the table"),
    Test("biased_scores_values", "biased_scores", 5, "scale * q @ k^T + bias against the reference"),
    Test("biased_scores_scale", "biased_scores", 2, "the default and an explicit scale, never applied to the bias"),
    Test("biased_scores_broadcast", "biased_scores", 1, "bias of shape (1, H, Lq, Lk), (Lq, Lk) and (B, 1, 1, Lk)"),
    # The timing tier (autograder/core/timing.py): the score path against the reference, once it is correct.
    # Their feedback (ratios, loops found) quotes no hidden case: shown at once.
    Test("shaw_speed", "timing", 8, "shaw_scores (with its helper) timed against the reference: no Python loop, "
                                    "time and memory within the rubric's bands", details="visible"),
    Test("t5_speed", "timing", 7, "biased_scores(q, k, t5_bias(...)) timed against the reference: no Python loop, "
                                  "time and memory within the rubric's bands", details="visible"),
)

# The hidden cases are drawn from this seed: the same seed, the same cases.
SEED = 20261130

# The nbgrader assignment, the module students write, and this folder's name are one name.
ASSIGNMENT = "positional_encodings"

# The timing tier. Each path is timed only when the correctness tests of its own tasks pass (``requires``): the
# rubric's rule, since a wrong path timed would give points for code that does not work. A mistake there costs its
# own task's tests and, once, the path's timing points, which the timing row says with the figure. A wrong helper
# it calls is replaced by the grader's stand-in for the timing (``helpers``): charged once, in the helper's task. How each path is called and its inputs drawn is in job.py.
TIMING_MAX_RELATIVE = 16  # Shaw's clipping distance k on the timed path
TIMING_NUM_BUCKETS = 32
TIMED_PATHS = (
    TimedPath("shaw", "shaw_speed", ("shaw_scores", "clipped_relative_positions"), ("shaw",),
              (("relative_positions", "clipped_relative_positions", "scrambled_relative_positions"),),
              settings=(("max_relative", TIMING_MAX_RELATIVE),), describe="shaw_scores",
              count_from=2 * TIMING_MAX_RELATIVE + 2),
    TimedPath("t5", "t5_speed", ("biased_scores", "t5_bias", "t5_relative_position_bucket"), ("t5_bias", "biased_scores"),
              (("t5_bucket", "t5_relative_position_bucket", "scrambled_buckets"),),
              settings=(("num_buckets", TIMING_NUM_BUCKETS),), describe="biased_scores(q, k, t5_bias(...))"),
)

complete(globals())
