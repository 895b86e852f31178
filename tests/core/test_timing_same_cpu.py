"""The same CPU for both sides (issue 36, point 5): a timed call that uses more CPUs than the reference's gains nothing.

The reference's timing job runs on one thread (OMP_NUM_THREADS=1), and the student's job gets the same
environment; but a submission can raise torch's thread count inside its own call, and then do the same work in
less wall-clock time on a machine with more cores. A held-out attack did: a correct path at about 7x the
reference (half the points) read 3.1x on a 2-core machine with ``torch.set_num_threads(os.cpu_count())``, and got
full points. Each timed call is now charged the larger of its wall-clock time and its job's CPU time (all its
threads, and the child processes it waited for), read by the grader from outside the job, in both jobs alike
(``timing.ServeChild._charged``): work spread over more CPUs shortens the first, never the second.

Each mechanism is graded beside its honest twin (the same slow path without it) in the same run, the same way;
the verdict compares the two, so the machine's noise (2 busy cores) moves both alike.
"""

import os
import re
import statistics
import subprocess
import sys
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core.grade import Grader
from autograder.core.timing import reaped_children_seconds
from conftest import UNIT

# The slow path: the reference's, then passes over its scores that change nothing and cost time, each spread over
# torch's threads when it has more than one (an element-wise operation: the kind that gains most from them). About
# 10x the reference here on one thread: the middle of the half-points band (4x to 25x) on a log scale, 2.5 times
# from each edge, past the noise band of a busy machine (0.4x to 2x). At 14 passes (about 7x, 1.7 times from the
# full-points edge) a loaded CI run read one threaded grading at full points. With 8 threads the passes ran 2 to
# 3.5 times faster on 2 cores before the fix.
SLOW = '''

_fast_shaw = shaw_scores


def shaw_scores(*args, **kwargs):
    scores = _fast_shaw(*args, **kwargs)
    for _ in range(PASSES):
        scores = scores + 0 * torch.tanh(scores)
    return scores
'''.replace("PASSES", "22")

# The share of the heads past the first {threads} runs in a child process (see MECHANISMS).
FORKED = '''

import os as _os
import cffi as _cffi
_ffi = _cffi.FFI()
_ffi.cdef("int fork(void);")
_libc = _ffi.dlopen(None)
_slow_shaw = shaw_scores
_calls = [0]


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    heads, _calls[0] = q.shape[1], _calls[0] + 1
    mine = min({{threads}}, heads - 1)
    shape = (q.shape[0], heads - mine, q.shape[-2], k.shape[-2])
    path = "/dev/shm/part-%d" % _calls[0]
    shared = torch.from_file(path, shared=True, size=shape[0] * shape[1] * shape[2] * shape[3], dtype=q.dtype)
    done, told = _os.pipe()
    child = _libc.fork()
    if child == 0:
        if {twice} and _libc.fork() != 0:
            _os._exit(0)  # the grandchild does the work, an orphan
        part = _slow_shaw(q[:, mine:], k[:, mine:], rel_k, max_relative_position, scale=scale)
        shared.view(shape).copy_(part)
        _os.write(told, b"x")
        _os._exit(0)
    out = _slow_shaw(q[:, :mine], k[:, :mine], rel_k, max_relative_position, scale=scale)
    {end}
    _os.close(done)
    _os.close(told)
    _os.unlink(path)
    return torch.cat([out, shared.view(shape).clone()], 1)
'''

# Ways to run the same path on more CPUs than the reference's job uses, each added after SLOW. {threads} is the
# count drawn for the run.
MECHANISMS = {
    # The held-out attack: torch's intra-op pool raised in each call (a call runs in a thread of its own, so a
    # count set at import alone would not reach it).
    "torch.set_num_threads in each call": '''

import os as _os
_slow_shaw = shaw_scores


def shaw_scores(*args, **kwargs):
    torch.set_num_threads({threads})
    return _slow_shaw(*args, **kwargs)
''',
    # The same, and the MKL and interop settings too, once at import and again in each call.
    "set at import and in each call": '''

torch.set_num_threads({threads})
_slow_shaw = shaw_scores


def shaw_scores(*args, **kwargs):
    torch.set_num_threads({threads})
    try:
        torch.set_num_interop_threads({threads})
    except RuntimeError:  # it can be set only once
        pass
    return _slow_shaw(*args, **kwargs)
''',
    # Threads of its own, each running the path on its share of the heads (torch releases the GIL in its ops).
    "Python threads over the heads": '''

import threading as _threading
_slow_shaw = shaw_scores


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    heads = q.shape[1]
    shares = [range(start, heads, {threads}) for start in range({threads})]
    parts = [None] * len(shares)

    def work(number):
        share = list(shares[number])
        parts[number] = (share, _slow_shaw(q[:, share], k[:, share], rel_k, max_relative_position, scale=scale))

    workers = [_threading.Thread(target=work, args=(number,)) for number in range(1, len(shares))]
    for worker in workers:
        worker.start()
    work(0)
    for worker in workers:
        worker.join()
    out = q.new_empty(q.shape[0], heads, q.shape[-2], k.shape[-2])
    for share, part in parts:
        out[:, share] = part
    return out
''',
    # Child processes, each running the path on its share of the heads into shared memory. Python's ways to fork
    # are refused by the timing job's audit hook, but libc's fork reached through cffi is not (the bubblewrap tiers;
    # tier C's seccomp filter refuses it): the runner waits for them, or they fork again and leave an orphan to the
    # job's first process. (A fork from a thread of a process that holds other threads may hang in the child: the
    # call then runs past its time and gets no points, which is no more than the twin's.)
    "processes over the heads, reaped": FORKED.format(end="_os.waitpid(child, 0)", twice="False"),
    "processes over the heads, orphaned": FORKED.format(end="_os.read(done, 1)\n    _os.waitpid(child, 0)",
                                                          twice="True"),
}


# Tier A (a control group per job, whose CPU quota of one CPU binds only past 100 ms of work in a period, longer
# than a call) and tier B (none: the tier where the held-out attack's threads ran freely).
@pytest.fixture(scope="module", params=["control groups", "no control groups"])
def grader(request):
    before = os.environ.get("AUTOGRADER_CGROUP")
    if request.param == "no control groups":
        os.environ["AUTOGRADER_CGROUP"] = "off"
    try:
        grader = Grader(UNIT, sandbox="auto")
    finally:
        if before is None:
            os.environ.pop("AUTOGRADER_CGROUP", None)
        else:
            os.environ["AUTOGRADER_CGROUP"] = before
    yield grader
    grader.close()


@pytest.fixture
def job_alone(monkeypatch):
    """The static loop check set aside (it refuses threads of a submission's own before any job runs): what is
    tested here is what the timing job's figures let through."""
    from autograder.core import timing

    monkeypatch.setattr(timing, "static_check", lambda chunks, path, unit: [])


def _shaw(grader, path, text):
    path.write_text(text)
    test = next(test for test in grader.grade(path).tests if test.id == "shaw_speed")
    ratios = [float(ratio) for ratio in re.findall(r"^Time \([^)]*\): ([0-9.]+)x the reference", test.output, re.M)]
    return test, ratios


GRADINGS = 3  # of each twin, interleaved, in one run: the verdict compares what they read side by side
# Extra gradings of the honest twin where one of its gradings was not timed (a fault of the machine's, such as a job
# that could not start in time on a loaded CI machine: the grader gives no figure then, and the control is missing).
# Each miss is reported as a warning with the grader's words, so a miss that is the grader's defect still shows.
SPARE_HONEST = 2


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(threads=st.sampled_from([8, 4, 3, 2]))
def test_more_threads_in_the_job_get_no_more_timing_points_than_the_honest_twin(grader, tmp_path, reference_text,
                                                                                 job_alone, mechanism, threads):
    twins = {"honest": reference_text + SLOW,
             "threaded": reference_text + SLOW + MECHANISMS[mechanism].format(threads=threads)}
    graded, missed = {"honest": [], "threaded": []}, []
    for grading in range(GRADINGS + SPARE_HONEST):
        for name, text in twins.items():
            if name == "threaded" and grading >= GRADINGS:
                continue
            if name == "honest" and len(graded["honest"]) >= GRADINGS:
                continue
            test, ratios = _shaw(grader, tmp_path / f"{name}.py", text)
            if name == "honest" and not ratios:  # the control was not timed: graded again, and said
                missed.append(test.output)
                continue
            graded[name].append((test, ratios))
    for output in missed:
        warnings.warn(f"{mechanism}: a grading of the honest twin was not timed; graded again. The grader said: "
                      f"{output}")
    # The control: the slow path is correct and loop-free, so it is timed (the grader's fault where it is not).
    assert len(graded["honest"]) == GRADINGS, (f"the honest twin was timed in {len(graded['honest'])} of "
                                               f"{len(graded['honest']) + len(missed)} gradings", missed)
    said = (mechanism, [test.output for test, _ in graded["honest"] + graded["threaded"]])
    assert max(test.score for test, _ in graded["threaded"]) <= max(test.score for test, _ in graded["honest"]), said
    threaded = [ratios[0] for _, ratios in graded["threaded"] if ratios]
    if threaded:  # a path whose threads the count refuses has no figure, and no points
        # Before the fix, the threads read well under half the honest twin's figure (3.1x against 7x for the
        # held-out attack); charged by its CPU time, the same work reads at least what one thread takes, give or
        # take the noise of the machine, which the geometric mean of three gradings of each twin narrows.
        honest = [ratios[0] for _, ratios in graded["honest"]]
        assert statistics.geometric_mean(threaded) >= 0.5 * statistics.geometric_mean(honest), said


def test_the_reference_keeps_the_tier(grader, tmp_path, reference_text):
    test, ratios = _shaw(grader, tmp_path / "reference.py", reference_text)
    assert test.score == test.max_score and ratios, test.output


# A process that, for each line N, forks N children that each burn the given CPU seconds and waits for them all.
FORKER = r"""
import os, sys, time

def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass

print("ready", flush=True)
for line in sys.stdin:
    seconds = [float(word) for word in line.split()]
    for each in seconds:
        if os.fork() == 0:
            burn(each)
            os._exit(0)
    for _ in seconds:
        os.wait()
    print("done", flush=True)
"""


@settings(max_examples=15, deadline=None)
@given(st.lists(st.lists(st.floats(0.0, 0.05), min_size=1, max_size=3), min_size=1, max_size=4))
def test_the_cpu_time_of_reaped_children_is_counted_to_within_a_tick(commands):
    """A call that spreads its work over child processes it waits for is charged their CPU time too: a job's
    children of a tier that lets it fork (the bubblewrap tiers, through calls the audit hook does not see)."""
    tick = 1 / os.sysconf("SC_CLK_TCK")
    process = subprocess.Popen([sys.executable, "-c", FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, bufsize=1)
    try:
        assert process.stdout.readline() == "ready\n"
        start = reaped_children_seconds(process.pid)
        burned = 0.0
        for seconds in commands:
            process.stdin.write(" ".join(map(str, seconds)) + "\n")
            process.stdin.flush()
            assert process.stdout.readline() == "done\n"
            burned += sum(seconds)
            # The children's time is kept exactly and shown in whole ticks, user and system time apart: a reading is
            # short by under two ticks, and long by at most what the children spent around their burn (fork, exit).
            read = reaped_children_seconds(process.pid) - start
            assert burned - 2 * tick - 1e-9 <= read <= burned + tick * (1 + sum(map(len, commands))), (read, burned)
    finally:
        process.kill()
        process.wait()


def test_a_child_left_unreaped_costs_the_tier(grader, tmp_path, reference_text, job_alone):
    """A child process that ended but was never waited for is counted nowhere (not in the runner's CPU time, nor in
    its reaped children's, and a control group no longer lists it): the job must not hold one between its calls.
    Started here through ``_posixsubprocess.fork_exec``, which raises no audit event. Before, the background check
    read the control group's list alone, and the path kept its points."""
    test, ratios = _shaw(grader, tmp_path / "unreaped.py", reference_text + UNREAPED)
    assert test.score == 0 and not ratios, test.output
    assert "other process" in test.output, test.output


# The reference's path, and in each call a child process (a program that ends at once) that it never waits for.
UNREAPED = '''

import multiprocessing.util as _util
_fast_shaw = shaw_scores


def shaw_scores(*args, **kwargs):
    _util.spawnv_passfds(b"/bin/true", [b"true"], [])
    return _fast_shaw(*args, **kwargs)
'''


def test_each_timed_call_is_charged_at_least_the_cpu_time_its_job_used(grader, tmp_path, reference_text,
                                                                         monkeypatch):
    """Read by the test on its own, around each timed call of the student's and the reference's jobs: the CPU time
    of the job's runner (all its threads) over the call. Charged by the wall clock alone, as before, a call whose
    work ran on 8 threads at once was charged less than the CPU time it used."""
    from autograder.core import timing

    seen, real = [], timing.ServeChild.request

    def request(self, command, timeout):
        if command.get("command") != "call":
            return real(self, command, timeout)
        before = timing.settled_cpu_seconds(self.worker_pid)
        reply, charged = real(self, command, timeout)
        seen.append((self.reference, charged, timing.settled_cpu_seconds(self.worker_pid) - before))
        return reply, charged

    monkeypatch.setattr(timing.ServeChild, "request", request)
    test, ratios = _shaw(grader, tmp_path / "threaded.py", reference_text + SLOW
                         + MECHANISMS["torch.set_num_threads in each call"].format(threads=8))
    assert ratios, test.output
    assert {reference for reference, _, _ in seen} == {True, False}
    short = [(charged, used) for _, charged, used in seen if charged < used - 0.0005]
    assert not short, (short, test.output)
