"""What the command line accepts as a limit, a job count, a seed or a step count: argparse ``type=`` callables that
refuse a value outside its range while the arguments are parsed (exit status 2, argparse's "argument --FLAG: ..."),
before anything is graded. Without them ``--timeout -1`` failed every test of every student ("did not finish within
-1 s"), ``--task-timeout 0`` blamed each student for an infinite loop, and ``--jobs 0`` was taken.

Every bound below is a number an instructor would never mean, and each says why.
"""

import argparse
import math

# A submission's wall-clock limit, and a task's, at most an hour. The defaults are 40 s and 15 s: a value past an
# hour is, much more likely than a real need, milliseconds typed for seconds (40000 for 40); and a limit that long
# lets one hung submission hold a job of the class run for longer than a class of hundreds takes to grade.
MAX_SECONDS = 3600.0
# A submission's memory, at most 1024 GiB: more than the machines a class is graded on hold (the default is 6), so a
# larger number is a slip of units (6144, MiB for GiB); the limit is set in bytes, which must fit in 64 bits.
MAX_MEMORY_GB = 1024.0
# Submissions graded at once, at most 256: each is a process of its own holding torch (about 0.2 GiB resident),
# and jobs beyond the machine's CPUs only wait on each other; 256 is more CPUs than the kit is graded on.
MAX_JOBS = 256
# A seed of the hidden cases, 0 .. 2**31 - 1: the range of every seed a result records (each student's seed from a
# course secret, seeds.student_seed, and the rubrics' shared seeds), and one that every random number generator the
# kit seeds accepts.
MAX_SEED = 2**31 - 1
# Training steps of an experiment, at most 100000: 500 times the default of 200, days of one CPU already.
MAX_STEPS = 100_000


def _number(text, what):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}; {text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {what}; {text!r} is not a finite number")
    return value


def _whole(text, what):
    try:
        return int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}; {text!r} is not a whole number") from None


def _bounded(kind, low, high, what, above=False):
    """A type= callable: ``kind`` (_number or _whole) of ``text``, refused unless low < (or <=) it <= high."""

    def parse(text):
        value = kind(text, what)
        if (value <= low if above else value < low) or value > high:
            raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}")
        return value

    return parse


seconds = _bounded(_number, 0, MAX_SECONDS, f"a number of seconds above 0 and at most {MAX_SECONDS:g} (an hour)",
                   above=True)
seconds.__doc__ = "A wall-clock limit in seconds: a finite number above 0, at most MAX_SECONDS."
memory_gb = _bounded(_number, 0, MAX_MEMORY_GB, f"a number of GiB above 0 and at most {MAX_MEMORY_GB:g}", above=True)
memory_gb.__doc__ = "A memory limit in GiB: a finite number above 0, at most MAX_MEMORY_GB."
jobs = _bounded(_whole, 1, MAX_JOBS, f"a whole number of jobs from 1 to {MAX_JOBS}")
jobs.__doc__ = "How many submissions are graded at once: a whole number from 1 to MAX_JOBS."
seed = _bounded(_whole, 0, MAX_SEED, f"a whole number from 0 to {MAX_SEED} (2**31 - 1)")
seed.__doc__ = "A seed: a whole number from 0 to MAX_SEED."
steps = _bounded(_whole, 1, MAX_STEPS, f"a whole number of steps from 1 to {MAX_STEPS}")
steps.__doc__ = "Training steps: a whole number from 1 to MAX_STEPS."
