"""The grader's limits, the same for every unit: what one submission, one job and one notebook may use,
and how the timing tier measures. A unit's rubric module shows them too (units.complete copies them in)."""

# Limits for one submission's child process (overridable on the command line).
WALL_SECONDS = 40.0  # the whole submission, import included
TASK_SECONDS = 15.0  # one task; a task that hangs is abandoned and the rest go on
MEMORY_BYTES = 6 * 1024**3  # address space of each process of a job, and the whole job's memory where cgroups are
OUTPUT_BYTES = 64 * 1024  # what we keep of the child's stdout and stderr, each
# A class run in which no submission finishes for this long is stuck (a grader thread that never returns): the
# watchdog gives each submission in progress a grader fault's row and goes on (autograder/core/threads.py). Well
# past what one submission may take, which is at most its three tries of a job (a fault of the machine is tried
# again), its timing tier (TIMING_TIER_SECONDS and the reference's share) and a wait for the machine while others
# are timed: about 6 minutes at the defaults on a busy machine. A larger --timeout raises it (CLASS_STALL_FACTOR
# times the submission's limit).
CLASS_STALL_SECONDS = 600.0
CLASS_STALL_FACTOR = 15
# Limits on one job as a whole, all its processes together (a control group per job where the machine has
# them: autograder/sandbox/cgroups.py): memory (MEMORY_BYTES, files in its private folders included), processes and
# threads, and CPUs' worth of time, so that busy threads slow only their own job.
JOB_PROCESSES = 64
JOB_CPUS = 1.0
SCRATCH_BYTES = 128 * 1024**2  # each of a job's private /work, /tmp and /dev/shm
# Files and folders each of those may hold: an empty file costs no bytes, but about a kilobyte of the machine's
# memory. The jobs' folders (worker._private_folders) and the notebook kernel's (sandbox/kernel_folders.py).
SCRATCH_FILES = 16384

# How long one notebook cell may run under `nbgrader autograde` (nbgrader's own default, 30 s, is too tight for
# a cold torch import on a slow machine).
NOTEBOOK_CELL_SECONDS = 120
# The most one notebook may run in its kernel under `nbgrader autograde`, all cells together; the cells after
# that are not run there. The grades do not come from the kernel, only the pictures and printed output of
# the feedback do. A reference needs about 10 s here; the budget leaves room for a slow, cold machine.
NOTEBOOK_SECONDS = 300

# The timing tier (autograder/core/timing.py). Points by the median ratio of the student's time to the
# reference's: up to 4x full, up to 25x half, beyond that none. A Python loop over positions gets none
# whatever its time. Measured here at the CPU sizes below (2026-12-01, each graded twice, in two runs): the
# reference against itself 0.8-1.5x; the other vectorized formulations of tests/submissions/alternatives
# 0.9-2.4x (the slowest: take_along_dim with a broadcast index, which expands it); the materialised
# (Lq, Lk, dh) path 4.9-8.4x (half the points); a (B, H, Lq, Lk, dh) tensor 49-54x (and 66 score-sized tensors
# of memory). A path near a band's limit gets up to TIMING_REPEATS pairs (see TIMING_MIN_PAIRS), so its
# verdict is a median of many.
# Since each call's inputs are made in the call and each call runs in a thread of its own (issue 23), a call of the
# reference here takes about 0.2 ms more (1.6-2.0 ms in all, quiet); the materialised path measured 4.7x then.
# The noise band (benchmarks/timing_noise.py, 2026-12-04, 30 gradings of each unit's reference against itself): 0.40x
# to 1.95x on 2 busy cores, 0.86x to 1.16x on an H200. The full-points limit is twice the largest: noise alone never
# costs a correct vectorized path its points.
TIMING_BANDS = ((4.0, 1.0), (25.0, 0.5))
# Sizes where the difference shows. The CPU sizes keep the whole tier to about 0.15 s per submission (L = 384:
# at 512 it took half as long again, with the same verdicts; the materialised path was about 10x there).
TIMING_SIZES = {
    "cuda": {"batch": 8, "heads": 16, "length": 2048, "head_dim": 64, "dtypes": ("float32", "bfloat16")},
    "cpu": {"batch": 1, "heads": 4, "length": 384, "head_dim": 32, "dtypes": ("float32",)},
}
# Every timed path (whatever its static check found, as long as it found nothing it cannot read) is run once at each
# of these sequence lengths, at the length it is timed at on its device, and at a few lengths drawn for each count
# (timing.count_lengths), with one batch, the device's heads and head size, and its steps counted: a count that
# changes with the length is a loop over positions, no timing points (autograder/core/loop_check.py, ``counted``).
# They reach twice the CPU timing length, so that a loop in chunks of up to that length shows too. A loop over
# positions shows by the second length, where the count stops; a path whose count stays fixed runs at all of them.
TIMING_COUNT_LENGTHS = (16, 32, 64, 128, 256, 384, 768)
TIMING_WARMUP = 0  # calls before the timed pairs, besides the first call (untimed) and the call measured for memory
TIMING_REPEATS = 15  # interleaved student/reference pairs at most; the figure is the median ratio
# Pairs timed before the verdict may be taken: it is taken then when every ratio so far lies on the same side
# of every band's limit (the reference against itself, 1.0-1.3x, settles at once; a path near a limit gets
# all the pairs). Three were too few in a container of half a CPU: the materialised path (5x there) once
# drew three pairs under 4x and settled on full points (benchmarks/RESULTS.md, 2026-12-01); five make such
# a run of luck far rarer, at two more pairs for a path that settles.
TIMING_MIN_PAIRS = 5
# The noise band of a limit: a median within a factor TIMING_NOISE of a band's limit (from limit / TIMING_NOISE to
# limit * TIMING_NOISE) is one the machine's noise alone can put on either side of it. The median of a grading's
# pairs spreads about that much on a busy 2-core machine (the reference against itself, 30 gradings: p10 0.62x to
# p90 1.44x, five pairs each; benchmarks/RESULTS.md, 2026-12-04), and a path that sits at a limit (the materialised
# Shaw path reads 3.6x to 5x against the 4x limit, by machine) would otherwise get either verdict by chance. Such a
# median is measured again: TIMING_NEAR_PAIRS more pairs, the median taken over all of them. Where it is still in
# the band, the student gets the better verdict (the limit's own side), and the feedback says so (timing.band_verdict).
TIMING_NOISE = 1.25
TIMING_NEAR_PAIRS = 15
TIMING_CALL_SECONDS = 10.0  # one call of the student's path; slower scores 0
# The whole timing tier of one submission, which holds the machine alone: the student's job may spend, on all its
# commands together (loading its code, drawing inputs, the calls, the checks), TIMING_TIER_SECONDS plus
# TIMING_TIER_FACTOR times what the reference's job spent on the same commands. The factor is above the last
# band's limit (25x earns half points), so an honest path of any verdict stays inside; past it the tier's points
# still to come are lost, said, and the class moves on (a job that pauses in each step cannot hold it for minutes).
TIMING_TIER_SECONDS = 30.0
TIMING_TIER_FACTOR = 30.0
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
