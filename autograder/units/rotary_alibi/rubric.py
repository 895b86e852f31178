"""The second unit's rubric: rotary positions (RoPE), ALiBi and position interpolation.

A test id is ``<task>_<what>``, as in the first unit; ids are unique across units (they are nbgrader grade
ids of one course). The cases live in ``cases/<task>.py``; the timed paths' calls in ``job.py``.
"""

from autograder.core.rubric import Task, Test, TimedPath, complete

TITLE = "Rotary positions and ALiBi"
ORDER = 2  # the course's second unit: it builds on the first (the scores, the sinusoidal rotation identity)
# The lesson's train-short, test-long experiment trains the first unit's tiny model (no answer in it).
SHIPPED = {"capstone.py": "positional_encodings/capstone.py"}
# `python -m autograder capstone --unit rotary_alibi`: the first unit's module, with its second experiment.
CAPSTONE = ("positional_encodings.capstone", "--longer")

# In the lesson's order.
TASKS = (
    Task("rotary_angles", "Rotary angles (cos, sin)", ("rotary_angles",)),
    Task("apply_rotary", "Rotating queries and keys", ("apply_rotary",)),
    Task("rope_scores", "RoPE attention scores", ("rope_scores",)),
    Task("alibi_slopes", "ALiBi slopes per head", ("alibi_slopes",)),
    Task("alibi_bias", "ALiBi distance bias", ("alibi_bias",)),
    Task("scaled_positions", "Position interpolation", ("scaled_positions",)),
)

TESTS = (
    Test("rotary_angles_values", "rotary_angles", 7, "cos and sin of t * base^(-2i/dh), positions of several shapes, "
                                                     "bases and sizes, positions up to 10^5"),
    Test("rotary_angles_edge_cases", "rotary_angles", 2, "float positions, no positions at all, the dtype asked for"),
    Test("rotary_angles_invalid_args", "rotary_angles", 3, "ValueError for odd, zero or negative head_dim",
         needs="rotary_angles_values"),
    Test("apply_rotary_interleaved", "apply_rotary", 6, "pairs (2i, 2i+1) turned by their position's angle (RoFormer)"),
    Test("apply_rotary_half", "apply_rotary", 6, "pairs (i, i + dh/2) turned (rotate half: GPT-NeoX, LLaMA)"),
    Test("apply_rotary_positions", "apply_rotary", 3, "positions that do not start at 0 (a KV cache), any leading "
                                                      "axes, positions of their own per sequence (B, 1, L)"),
    Test("apply_rotary_dtype", "apply_rotary", 3, "float64 kept; float16 computed in float32 (far from position 0 "
                                                  "too) and returned in float16"),
    Test("apply_rotary_invalid_args", "apply_rotary", 2, "ValueError for an odd dh, or positions that do not give "
                                                         "one per row", needs="apply_rotary_interleaved"),
    Test("rope_scores_values", "rope_scores", 8, "scale * rot(q) @ rot(k)^T against the reference, Lq != Lk"),
    Test("rope_scores_positions", "rope_scores", 5, "positions_q and positions_k given: a cache, shifted positions"),
    Test("rope_scores_layout", "rope_scores", 3, "interleaved=False, an explicit scale, float64"),
    Test("alibi_slopes_power_of_two", "alibi_slopes", 5, "2^(-8h/n) for n = 1, 2, 4, ..., 64, to float32's last bits"),
    Test("alibi_slopes_other_counts", "alibi_slopes", 5, "the paper's rule for other head counts, to float32's last "
                                                         "bits"),
    Test("alibi_slopes_invalid_args", "alibi_slopes", 2, "ValueError for 0 or a negative number of heads",
         needs="alibi_slopes_power_of_two"),
    Test("alibi_bias_causal", "alibi_bias", 6, "-slope_h * (i - j) for keys at or before the query, 0 after"),
    Test("alibi_bias_bidirectional", "alibi_bias", 4, "-slope_h * |i - j| with causal=False"),
    Test("alibi_bias_layout", "alibi_bias", 2, "shape (1, H, Lq, Lk), Lq != Lk, one head, the dtype of the slopes"),
    Test("alibi_bias_invalid_args", "alibi_bias", 2, "ValueError for slopes that are not one per head, (H,)",
         needs="alibi_bias_causal"),
    Test("scaled_positions_values", "scaled_positions", 5, "positions / factor, as floats (float32 unless the "
                                                           "positions are float64), any factor above 0"),
    Test("scaled_positions_invalid_args", "scaled_positions", 3, "ValueError for a factor that is 0, negative, "
                                                                 "infinite or NaN", needs="scaled_positions_values"),
    # The timing tier: the two score paths against the reference, once they are correct.
    Test("rope_speed", "timing", 9, "rope_scores timed against the reference: no Python loop, time and "
                                    "memory within the rubric's bands", details="visible"),
    Test("alibi_speed", "timing", 9, "q @ k^T * scale + alibi_bias(L, L, alibi_slopes(H)) timed against the "
                                     "reference: no Python loop, time and memory within the bands",
         details="visible"),
)

# The hidden cases are drawn from this seed (each unit its own).
SEED = 20261201

# The nbgrader assignment, the module students write, and this folder's name are one name.
ASSIGNMENT = "rotary_alibi"

# The timed paths (job.py says how each is called and its inputs drawn). A path is timed only when the value tests
# of its ``requires`` pass (the rubric's rule: see the first unit's rubric); a mistake there costs its own task's
# tests and, once, the path's 9 timing points: a sign slip in alibi_bias 6 + 9, BLOOM's form 4 + 9. A wrong alibi_slopes has cost its own
# points: the bias path is then timed with the grader's stand-in slopes. alibi_slopes sees only the number of
# heads: a loop in it is one per head, as in the ALiBi authors' own code, and costs nothing.
TIMED_PATHS = (
    TimedPath("rope", "rope_speed", ("rope_scores", "apply_rotary", "rotary_angles"),
              ("rope_scores", "apply_rotary", "rotary_angles"), describe="rope_scores"),
    TimedPath("alibi", "alibi_speed", ("alibi_bias",), ("alibi_bias",),
              (("alibi_slopes", "alibi_slopes", "plain_slopes"),), per_head=("alibi_slopes",), describe="alibi_bias"),
)

complete(globals())
