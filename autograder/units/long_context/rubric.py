"""The third unit's rubric: reading past the training length (NTK-aware scaling, dynamic NTK, YaRN, Llama 3).

A test id is ``<task>_<what>``, as in the units before it; ids are unique across units (they are nbgrader grade
ids of one course). The cases live in ``cases/<task>.py``; the timed path's call in ``job.py``.
"""

from autograder.core.rubric import Task, Test, TimedPath, complete

TITLE = "Reading past the training length"
ORDER = 3  # after the second unit, whose rotation it reuses
SEED = 24945116

# The second unit's rotation, reused: students get its reference finished in their file (the grader runs that
# reference whatever their copy holds), and are not graded on it again here.
BORROWS = {"rotary_alibi": ("apply_rotary",)}
# The lesson's last part trains the first unit's tiny model with every method of the course (no answer in either).
SHIPPED = {"capstone.py": "positional_encodings/capstone.py", "long_capstone.py": "long_context/long_capstone.py"}
# `python -m autograder capstone --unit long_context`: the experiment on the kit's references.
CAPSTONE = ("long_context.long_capstone",)
# The lesson's notebook, top to bottom, on a 2-core machine (benchmarks/lesson_time.py): its experiment trains five
# models and reads ten methods at four lengths (about a minute of it), where the other units' stay within 60 s.
LESSON_SECONDS = 150

# In the lesson's order.
TASKS = (
    Task("ntk_inverse_frequencies", "NTK-aware base scaling", ("ntk_inverse_frequencies",)),
    Task("dynamic_ntk_inverse_frequencies", "Dynamic NTK scaling", ("dynamic_ntk_inverse_frequencies",)),
    Task("yarn_inverse_frequencies", "YaRN's ramp between interpolation and extrapolation",
         ("yarn_inverse_frequencies",)),
    Task("yarn_attention_scale", "YaRN's attention temperature", ("yarn_attention_scale",)),
    Task("llama3_inverse_frequencies", "Llama 3's wavelength rule", ("llama3_inverse_frequencies",)),
    Task("scaled_rope_scores", "Scores at scaled frequencies", ("scaled_rope_scores",)),
)

TESTS = (
    Test("ntk_inverse_frequencies_values", "ntk_inverse_frequencies", 10,
         "(base * factor^(dh/(dh-2)))^(-2i/dh) for several head sizes, bases and factors, factor 1 included"),
    Test("ntk_inverse_frequencies_invalid_args", "ntk_inverse_frequencies", 3,
         "ValueError for an odd head_dim or one below 4, a base of 1 or less, a factor below 1 or not finite",
         needs="ntk_inverse_frequencies_values"),
    Test("dynamic_ntk_inverse_frequencies_values", "dynamic_ntk_inverse_frequencies", 9,
         "NTK scaling with s = factor * length / L - (factor - 1), for lengths past the trained length L"),
    Test("dynamic_ntk_inverse_frequencies_short", "dynamic_ntk_inverse_frequencies", 4,
         "the unscaled frequencies for every length up to L, whatever the factor"),
    Test("dynamic_ntk_inverse_frequencies_invalid_args", "dynamic_ntk_inverse_frequencies", 3,
         "ValueError for a factor below 1 or not finite, a length or trained length below 1, an odd head_dim",
         needs="dynamic_ntk_inverse_frequencies_values"),
    Test("yarn_inverse_frequencies_values", "yarn_inverse_frequencies", 12,
         "the ramp from theta_i (pairs turning more than beta_fast times within L) to theta_i / factor (fewer "
         "than beta_slow), with the bounds rounded outwards"),
    Test("yarn_inverse_frequencies_options", "yarn_inverse_frequencies", 4,
         "truncate=False, betas of your choice, bounds that meet or leave the range of pairs"),
    Test("yarn_inverse_frequencies_invalid_args", "yarn_inverse_frequencies", 3,
         "ValueError for a factor below 1, betas that are not above 0 or beta_slow > beta_fast, a trained length "
         "below 1, an odd head_dim", needs="yarn_inverse_frequencies_values"),
    Test("yarn_attention_scale_values", "yarn_attention_scale", 5,
         "(0.1 * mscale * ln(factor) + 1)^2, the factor on the scores, factor 1 included"),
    Test("yarn_attention_scale_invalid_args", "yarn_attention_scale", 2,
         "ValueError for a factor below 1 or not finite, an mscale not finite", needs="yarn_attention_scale_values"),
    Test("llama3_inverse_frequencies_values", "llama3_inverse_frequencies", 11,
         "short wavelengths kept, long ones divided by the factor, the smooth blend between"),
    Test("llama3_inverse_frequencies_invalid_args", "llama3_inverse_frequencies", 3,
         "ValueError for high_freq_factor <= low_freq_factor, a low_freq_factor not above 0, a factor below 1",
         needs="llama3_inverse_frequencies_values"),
    Test("scaled_rope_scores_values", "scaled_rope_scores", 9,
         "rotate-half pairs turned by t * theta_i, q'.k' / sqrt(dh), Lq != Lk, frequencies of every method"),
    Test("scaled_rope_scores_contract", "scaled_rope_scores", 5,
         "every level of the contract: positions given or not, fractional, every float dtype, a size of 1"),
    Test("scaled_rope_scores_attention_scale", "scaled_rope_scores", 4,
         "the attention scale multiplies the scores once (YaRN's 1/t)"),
    Test("scaled_rope_scores_invalid_args", "scaled_rope_scores", 3,
         "ValueError for an odd dh, frequencies that are not (dh/2,), positions not one per row",
         needs="scaled_rope_scores_values"),
    # The timing tier: the score path against the reference, once it is correct.
    Test("scaled_rope_speed", "timing", 10, "scaled_rope_scores with YaRN-like frequencies timed against the "
                                            "reference: no Python loop, time and memory within the bands",
         details="visible"),
)

# The nbgrader assignment, the module students write, and this folder's name are one name.
ASSIGNMENT = "long_context"

# The timed path (job.py says how it is called and its inputs drawn). It reaches the given apply_rotary, which is
# the second unit's reference in every job, and is read by the loop check as the student's code is.
TIMED_PATHS = (
    TimedPath("scaled_rope", "scaled_rope_speed", ("scaled_rope_scores",), ("scaled_rope_scores",),
              describe="scaled_rope_scores"),
)

complete(globals())
