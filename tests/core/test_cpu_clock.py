"""The CPU-time clock of the timing tier (timing.settled_cpu_seconds): what a process used, read from outside it.

In a container of less than one CPU the tier times each call by the runner's CPU time. A process's CPU clock read
from another process leaves out what a thread now on a CPU has run since it was last brought up to date, so a
reading taken just after a reply, while the runner was still working its way back to its next read, could miss
the call (it once read 0 s in Gradescope's container, and the tier failed with a division by zero). A reading
counts all of a command's work, the part after the reply included, and nothing is lost between readings.
"""

import subprocess
import sys

from hypothesis import given, settings, strategies as st

from autograder.core.timing import settled_cpu_seconds

# A process that, for each line "WORK AFTER", burns WORK seconds of CPU, replies, then burns AFTER seconds more
# before it reads its next line (as a runner does the protocol's bookkeeping after its reply).
CHILD = r"""
import sys, time

def burn(seconds):
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass

print("ready", flush=True)
for line in sys.stdin:
    work, after = map(float, line.split())
    burn(work)
    print("done", flush=True)
    burn(after)
"""

_child = None


def child():
    global _child
    if _child is None or _child.poll() is not None:
        _child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)
        # Waits out the interpreter's start: a reading taken while it still loads its modules (asleep on the disk
        # now and then, so "settled") would count the rest of its start in no command (it once read 0.02 s adrift).
        assert _child.stdout.readline() == "ready\n"
    return _child


def call(process, work, after):
    """One command, timed as the tier times it: the clock read before it is sent and after its reply."""
    before = settled_cpu_seconds(process.pid)
    process.stdin.write(f"{work} {after}\n")
    process.stdin.flush()
    assert process.stdout.readline() == "done\n"
    return settled_cpu_seconds(process.pid) - before


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0002, 0.003), st.floats(0.0, 0.006)), min_size=1, max_size=6))
def test_each_reading_counts_the_whole_command_and_none_of_it_is_lost_between_readings(commands):
    process = child()
    start = settled_cpu_seconds(process.pid)
    measured = [call(process, work, after) for work, after in commands]
    total = settled_cpu_seconds(process.pid) - start
    for seconds, (work, after) in zip(measured, commands):
        assert seconds >= work + after, (seconds, work, after)  # the work after the reply is the command's too
    # The process waits between commands, so every bit of CPU time it used falls in some command's reading.
    assert abs(sum(measured) - total) < 1e-6, (measured, total)


def test_a_process_that_is_gone_raises_oserror():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    try:
        settled_cpu_seconds(process.pid)
    except OSError:
        return
    raise AssertionError("a reading of a process that is gone returned a figure")
