"""The count behind the timing tier's loop rule (issue 24, item 6): a loop is charged when what it runs over is the
sequence length, not because it is a loop.

The grader counts, in one call of the path at each of several lengths, the lines the submission runs and the
tensor operations (autograder/core/loop_check.py, ``counted``, which the timing job runs as the students' checks
do). Here the counter runs in this process on generated programs: every way of writing a loop (for, while, a
comprehension, map over a lambda, map over a torch function, recursion), over every kind of trip count. The expected
verdict comes from what the trip count is made of, not from the counter: a count fixed by the heads, the features or
a literal stays the same at every length; one made from the positions (all of them, in chunks, pairs of them, or at
some lengths only) changes.
"""

import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core.loop_check import count_changes as changes, count_in_process, counts_words

LENGTHS = (16, 32, 64, 128)
HEADS, FEATURES = 3, 4

# Trip counts, by what they are made of: (expression of q, whether it depends on the sequence length L = q.shape[1]).
TRIPS = {
    "heads": ("q.shape[0]", False),
    "features": ("q.shape[-1] // 2", False),
    "literal": ("5", False),
    "positions": ("q.shape[1]", True),
    "chunks of 8": ("(q.shape[1] + 7) // 8", True),
    "chunks of 100": ("(q.shape[1] + 99) // 100", True),  # one chunk up to L = 100, two at 128
    "long lengths only": ("q.shape[1] if q.shape[1] > 64 else 2", True),
    "short lengths only": ("q.shape[1] if q.shape[1] < 20 else 2", True),
    "pairs of positions": ("q.shape[1] * q.shape[1] // 64", True),
}
# The work of one trip: tensor operations, or Python arithmetic alone.
BODIES = {"tensor": "q[0, 0, 0] * i", "python": "i * 2"}


def _program(form, trip, body):
    """A path ``path(q)`` (q of shape (H, L, d)) that loops ``trip`` times, written as ``form``, each trip ``body``."""
    head = f"import torch\n\n\ndef path(q):\n    n = {trip}\n"
    if form == "for":
        return head + f"    acc = 0\n    for i in range(n):\n        acc = acc + {body}\n    return q.sum() + acc\n"
    if form == "while":
        return head + (f"    acc, i = 0, 0\n    while i < n:\n        acc = acc + {body}\n        i += 1\n"
                       "    return q.sum() + acc\n")
    if form == "comprehension":
        return head + f"    return q.sum() + sum([{body} for i in range(n)])\n"
    if form == "map over a lambda":
        return head + f"    return q.sum() + sum(map(lambda i: {body}, range(n)))\n"
    if form == "map over a torch function":  # no line of the submission per trip: only the operations show
        return head + "    return q.sum() + sum(map(torch.mul, [q[0, 0, 0]] * n, range(n)))\n"
    if form == "recursion":
        return (head + "    return q.sum() + step(q, 0, n)\n\n\n"
                f"def step(q, i, n):\n    if i >= n:\n        return 0\n    return {body} + step(q, i + 1, n)\n")
    raise AssertionError(form)


FORMS = ("for", "while", "comprehension", "map over a lambda", "map over a torch function", "recursion")


def _counts(text, lengths=LENGTHS):
    path = _path_of(text)
    counts = []
    for length in lengths:
        q = torch.randn(HEADS, length, FEATURES)
        value, count, intact = count_in_process(lambda: path(q), {"submission.py"}.__contains__)
        assert intact and torch.is_tensor(value)
        counts.append((length, count))
    return counts


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(form=st.sampled_from(FORMS), trip=st.sampled_from(sorted(TRIPS)), body=st.sampled_from(sorted(BODIES)))
def test_the_count_changes_exactly_when_the_trip_count_depends_on_the_length(form, trip, body):
    expression, on_positions = TRIPS[trip]
    counts = _counts(_program(form, expression, BODIES[body]))
    assert bool(changes(counts)) == on_positions, (form, trip, body, counts_words(counts))


@pytest.mark.parametrize("form", FORMS)
def test_a_loop_over_positions_is_seen_at_the_second_length(form):
    """The grader stops at the first length where the count changes: a loop over every position shows there."""
    counts = _counts(_program(form, TRIPS["positions"][0], BODIES["tensor"]), LENGTHS[:2])
    assert changes(counts) == counts[1]


def test_library_code_counts_by_its_operations_not_its_lines():
    """torch's own Python code (einsum's wrapper, say) is not the submission's: a call of it is its operations."""
    text = "import torch\n\n\ndef path(q):\n    return torch.einsum('hld,hmd->hlm', q, q)\n"
    counts = _counts(text)
    assert not changes(counts) and counts[0][1] <= 4, counts


def _counted(call):
    return count_in_process(call, {"submission.py"}.__contains__)


def test_a_changed_trace_function_spoils_the_count():
    def replaces():
        sys.settrace(lambda *arguments: None)
        return torch.zeros(1)

    def removes():
        sys.settrace(None)
        return torch.zeros(1)

    for call in (replaces, removes):
        before = sys.gettrace()
        _, _, intact = _counted(call)
        assert not intact
        assert sys.gettrace() is before  # the counter put back what it found


def _path_of(text):
    """The function ``path`` of a submission's ``text``, compiled as the submission's file."""
    namespace = {}
    exec(compile(text, "submission.py", "exec"), namespace)
    return namespace["path"]


def test_a_frame_that_stops_being_traced_spoils_the_count():
    """A frame whose f_trace is taken away runs its loop unseen: the count notices that it never saw it leave."""
    path = _path_of("import torch\n\n\ndef path(q):\n    try:\n        raise ValueError\n"
                    "    except ValueError as error:\n        error.__traceback__.tb_frame.f_trace = None\n"
                    "    rows = [i for i in range(q.shape[1])]\n    return torch.tensor(rows)\n")
    _, _, intact = _counted(lambda: path(torch.zeros(1, 8, 2)))
    assert not intact


def test_generators_and_exceptions_leave_the_count_intact():
    path = _path_of("import torch\n\n\ndef path(q):\n    def planes():\n        for h in range(q.shape[0]):\n"
                    "            yield q[h]\n    def fails():\n        raise KeyError\n    try:\n        fails()\n"
                    "    except KeyError:\n        pass\n    return torch.stack(list(planes()))\n")
    _, _, intact = _counted(lambda: path(torch.zeros(3, 8, 2)))
    assert intact


def test_the_counter_puts_back_the_trace_function_it_found():
    def mine(frame, event, argument):
        return None

    sys.settrace(mine)
    try:
        _counted(lambda: torch.zeros(1))
        assert sys.gettrace() is mine
    finally:
        sys.settrace(None)


# The students' own check (checks.py, built from compare.py and loop_check.py, standard library and torch only):
# given the arguments of a call at each length, it counts as the grader does, so that its verdict and the grade's
# agree (issue 24, item 7: a self-check must not fail where the grader gives the points, nor pass where it does not).
HEAD_LOOP = '''import torch


def alibi_bias(length_q, length_k, slopes):
    distance = (torch.arange(length_q)[:, None] - torch.arange(length_k)[None, :]).clamp(min=0).to(slopes.dtype)
    return torch.stack([-slope * distance for slope in slopes]).unsqueeze(0)
'''
ROW_LOOP = '''import torch


def alibi_bias(length_q, length_k, slopes):
    keys = torch.arange(length_k)
    rows = [(i - keys).clamp(min=0).to(slopes.dtype) for i in range(length_q)]
    return (-slopes[:, None, None] * torch.stack(rows)).unsqueeze(0)
'''


@pytest.fixture
def checks(tmp_path):
    from autograder.course.build import checks_text

    (tmp_path / "checks.py").write_text(checks_text())
    sys.path.insert(0, str(tmp_path))
    loaded = {}
    try:
        import importlib

        for name, text in {"head_loop": HEAD_LOOP, "row_loop": ROW_LOOP}.items():
            (tmp_path / f"{name}.py").write_text(text)
            loaded[name] = importlib.import_module(name)
        loaded["checks"] = importlib.import_module("checks")
        yield loaded
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("checks", "head_loop", "row_loop"):
            sys.modules.pop(name, None)


def test_the_students_check_counts_a_loop_as_the_grader_does(checks):
    assert_no_loops = checks["checks"].assert_no_loops
    inputs = lambda length: (length, length, torch.rand(4))  # noqa: E731
    assert_no_loops(checks["head_loop"].alibi_bias, inputs=inputs)  # over the heads: the same count at every length
    with pytest.raises(AssertionError, match=r"has a Python loop over positions: .*\nCounted .*L = 16: \d+; L = 32"):
        assert_no_loops(checks["row_loop"].alibi_bias, inputs=inputs)
    # Without the arguments of a call, the text alone cannot say what a loop runs over: any such loop fails.
    with pytest.raises(AssertionError, match="has a Python loop: "):
        assert_no_loops(checks["head_loop"].alibi_bias)


def test_what_a_path_does_on_its_first_call_alone_is_not_a_loop_over_positions(checks, tmp_path):
    """A table built on the first call (LLaMA's cache of cos and sin) adds lines to that call only: the count starts
    after a first call, so a loop over the heads beside such a cache is not charged."""
    import importlib

    (tmp_path / "cached.py").write_text(HEAD_LOOP + '''

_TABLE = {}


def cached_bias(length_q, length_k, slopes):
    if "ramp" not in _TABLE:
        _TABLE["ramp"] = torch.arange(4096)
        _TABLE["built"] = True
    return alibi_bias(length_q, length_k, slopes)
''')
    cached = importlib.import_module("cached")
    try:
        checks["checks"].assert_no_loops(cached.cached_bias, inputs=lambda length: (length, length, torch.rand(4)))
    finally:
        sys.modules.pop("cached", None)
