"""The rubric, in one place: tasks, their graded tests, points and limits.

A test id is ``<task>_<what>``; the task names double as ``pytest -k`` words,
nbgrader grade ids and feedback headings. Each test is all-or-nothing: it
passes when every one of its hidden cases passes. The cases themselves (inputs,
tolerances, mistake diagnoses) live in ``autograder/cases/<task>.py``.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    functions: tuple  # the names the student defines for this task


@dataclass(frozen=True)
class Test:
    id: str
    task: str
    points: int
    checks: str  # one line, shown to the student beside the result
    # Points come from working code: a test of what a function refuses (invalid arguments) gives its points
    # only when the function also works on valid ones, that is when the test named here passes, or fails
    # with a known mistake that explains its whole output (charged there, once). Raising ValueError for
    # everything is not a working function.
    needs: str = ""
    # On a platform that shows results by date (Gradescope's ``visibility``: "visible", "after_due_date",
    # "after_published", "hidden"): when the student sees the test's score and what it checks, and when the
    # feedback that quotes a hidden case (its call, expected against got). See autograder/gradescope.py.
    visibility: str = "visible"
    details: str = "after_due_date"


# In the lesson's order (the notebook teaches learned positions first, as the lecture does): the feedback, the
# table, grades.csv and the README follow it.
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
    # The timing tier (autograder/timing.py): the score path against the reference, once it is correct.
    # Their feedback (ratios, loops found) quotes no hidden case: shown at once.
    Test("shaw_speed", "timing", 8, "shaw_scores (with its helper) timed against the reference: no loop over "
                                    "positions, time and memory within the rubric's bands", details="visible"),
    Test("t5_speed", "timing", 7, "biased_scores(q, k, t5_bias(...)) timed against the reference: no loop over "
                                  "positions, time and memory within the rubric's bands", details="visible"),
)

# The hidden cases are drawn from this seed: the same seed, the same cases.
SEED = 20261130

# Limits for one submission's child process (overridable on the command line).
WALL_SECONDS = 40.0  # the whole submission, import included
TASK_SECONDS = 15.0  # one task; a task that hangs is abandoned and the rest go on
MEMORY_BYTES = 6 * 1024**3  # address space of the child
OUTPUT_BYTES = 64 * 1024  # what we keep of the child's stdout and stderr, each
# Limits on one job as a whole, all its processes together (a control group per job where the machine has
# them: autograder/cgroups.py): memory (MEMORY_BYTES, files in its private folders included), processes and
# threads, and CPUs' worth of time, so that busy threads slow only their own job.
JOB_PROCESSES = 64
JOB_CPUS = 1.0
SCRATCH_BYTES = 128 * 1024**2  # each of a job's private /work, /tmp and /dev/shm

# The nbgrader course: the assignment's name, and how long one notebook cell may run under
# `nbgrader autograde` (nbgrader's own default, 30 s, is too tight for a cold torch import on a slow machine).
ASSIGNMENT = "positional_encodings"
NOTEBOOK_CELL_SECONDS = 120
# The most one notebook may run in its kernel under `nbgrader autograde`, all cells together; the cells after
# that are not run there. The grades do not come from the kernel, only the pictures and printed output of
# the feedback do. The reference needs about 10 s here; the budget leaves room for a slow, cold machine.
NOTEBOOK_SECONDS = 300

# The timing tier. Each path is timed only when the correctness tests of its own tasks pass (``requires``); a
# wrong helper it calls is replaced by the grader's stand-in for the timing (``helpers``): one mistake, charged
# once, in the helper's task.
TIMING = Task("timing", "Speed of the score path (timing tier)", ())


@dataclass(frozen=True)
class TimedPath:
    name: str  # "shaw" or "t5", as the worker knows it
    test: str  # the rubric test its points go to
    functions: tuple  # the student's functions on the path, checked for loops over positions
    requires: tuple  # tasks whose correctness tests must all pass first
    # (helper task, helper function, the grader's stand-in for it): a helper that is wrong has cost its own
    # task's points already, so the path is timed then with the stand-in in its place (vectorized index
    # arithmetic of the same cost as the helper), in both jobs; the helper's loop check still applies.
    helpers: tuple = ()


TIMED_PATHS = (
    TimedPath("shaw", "shaw_speed", ("shaw_scores", "clipped_relative_positions"), ("shaw",),
              (("relative_positions", "clipped_relative_positions", "scrambled_relative_positions"),)),
    TimedPath("t5", "t5_speed", ("biased_scores", "t5_bias", "t5_relative_position_bucket"), ("t5_bias", "biased_scores"),
              (("t5_bucket", "t5_relative_position_bucket", "scrambled_buckets"),)),
)
# Points by the median ratio of the student's time to the reference's: up to 4x full, up to 25x half,
# beyond that none. A Python loop over positions gets none whatever its time. Measured here at the CPU
# sizes below (2026-12-01, each graded twice, in two runs): the reference against itself 0.8-1.5x; the other
# vectorized formulations of tests/submissions/alternatives 0.9-2.4x (the slowest: take_along_dim with a
# broadcast index, which expands it); the materialised (Lq, Lk, dh) path 4.9-8.4x (half the points); a
# (B, H, Lq, Lk, dh) tensor 49-54x (and 66 score-sized tensors of memory). A path near a band's limit gets up
# to TIMING_REPEATS pairs (see TIMING_MIN_PAIRS), so its verdict is a median of many.
TIMING_BANDS = ((4.0, 1.0), (25.0, 0.5))
# Sizes where the difference shows. The CPU sizes keep the whole tier to about 0.15 s per submission (L = 384:
# at 512 it took half as long again, with the same verdicts; the materialised path was about 10x there).
TIMING_SIZES = {
    "cuda": {"batch": 8, "heads": 16, "length": 2048, "head_dim": 64, "dtypes": ("float32", "bfloat16")},
    "cpu": {"batch": 1, "heads": 4, "length": 384, "head_dim": 32, "dtypes": ("float32",)},
}
TIMING_MAX_RELATIVE = 16  # Shaw's clipping distance k on the timed path
TIMING_NUM_BUCKETS = 32
TIMING_WARMUP = 0  # calls before the timed pairs, besides the call measured for memory (which warms up too)
TIMING_REPEATS = 15  # interleaved student/reference pairs at most; the figure is the median ratio
# Pairs timed before the verdict may be taken: it is taken then when every ratio so far lies on the same side
# of every band's limit (the reference against itself, 1.0-1.3x, settles at once; a path near a limit gets
# all the pairs). Three were too few in a container of half a CPU: the materialised path (5x there) once
# drew three pairs under 4x and settled on full points (benchmarks/RESULTS.md, 2026-12-01); five make such
# a run of luck far rarer, at two more pairs for a path that settles.
TIMING_MIN_PAIRS = 5
TIMING_CALL_SECONDS = 10.0  # one call of the student's path; slower scores 0
# The most memory one call may need beyond its inputs, in (B, H, Lq, Lk) score-sized tensors. The
# reference needs about 3; the (Lq, Lk, dh) relative keys about 12-13 at the CPU sizes (3 at the GPU
# sizes); a (B, H, Lq, Lk, dh) tensor dh of them on its own (it does not fit on a GPU at all).
TIMING_MEMORY_SCORES = 24
# Without a GPU: "cpu" times the path on the CPU at the CPU sizes; "give" skips the tier and gives its
# points; "withhold" skips it and gives none. The feedback says which happened, and on what device.
TIMING_WITHOUT_GPU = "cpu"
# Where the grader has less than a whole CPU and cannot time by CPU time (see timing.timing_clock): "give" or
# "withhold" the tier's points, and say so. Noise of the machine is never charged to the student.
TIMING_UNRELIABLE_CLOCK = "give"

TASK_NAMES = tuple(task.name for task in TASKS)  # the correctness tasks, each with its hidden cases
TASK_BY_NAME = {task.name: task for task in TASKS + (TIMING,)}
TEST_BY_ID = {test.id: test for test in TESTS}
TASK_OF_FUNCTION = {function: task.name for task in TASKS for function in task.functions}
MAX_SCORE = sum(test.points for test in TESTS)


def tests_of(task_name):
    return tuple(test for test in TESTS if test.task == task_name)


def task_points(task_name):
    return sum(test.points for test in tests_of(task_name))


VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")  # from most to least shown
for _test in TESTS:
    assert _test.visibility in VISIBILITIES and _test.details in VISIBILITIES, _test.id
    # the details never show before the score does
    assert VISIBILITIES.index(_test.details) >= VISIBILITIES.index(_test.visibility), _test.id
for _test in TESTS:  # a test's ``needs`` is scored before it, in its own task
    assert not _test.needs or (TEST_BY_ID[_test.needs].task == _test.task
                               and TESTS.index(TEST_BY_ID[_test.needs]) < TESTS.index(_test)), _test.id
