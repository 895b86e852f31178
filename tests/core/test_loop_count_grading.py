"""The timing tier charges a loop over positions, not a loop (issue 24, item 6): what a loop runs over is counted.

Each submission is a unit's reference with one function rewritten, correct, so that its path is timed. A loop over
the heads (alibi_bias one plane per head, t5_bias one head of the table at a time, a comprehension over the slopes)
keeps the path's timing points; before this change each of them lost all of them (the static check alone charged
every loop whose count came from the inputs). A loop over the positions loses them however it is written: a for
over the rows, in chunks, over a C function with no line of Python per trip (map over torch.rsub), or only at
short lengths. The feedback shows the counts. Graded by the real grader, in tier A (bubblewrap) and, as root, in
tier C (a user per job), where the platforms grade.

The second part sets the static check aside, as tests/core/test_timing_integrity.py does, so that the job's own defences
of the count are what is tested: a submission that takes the trace function away, or stops its frame being traced,
while it loops over positions gets no timing points.
"""

import os

import pytest
import torch

from autograder.core import units
from autograder.core.grade import Grader
from autograder.core.units import strip_markers
from autograder.sandbox.server import JOB_USERS, SandboxMissing

ROTARY = units.get("rotary_alibi")
FIRST = units.get("positional_encodings")
TIERS = ["auto"] + ([JOB_USERS] if os.geteuid() == 0 else [])

_ALIBI_HEAD = '''

def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be (H,)")
    distance = (torch.arange(length_q, device=slopes.device)[:, None]
                - torch.arange(length_k, device=slopes.device)[None, :])
    distance = (distance.clamp(min=0) if causal else distance.abs()).to(slopes.dtype)
'''
KEEP = {
    "head_loop": _ALIBI_HEAD + '''    planes = []
    for h in range(slopes.shape[0]):  # one plane per head
        planes.append(-slopes[h] * distance)
    return torch.stack(planes).unsqueeze(0)
''',
    "slope_comprehension": _ALIBI_HEAD + '''    return torch.stack([-slope * distance for slope in slopes]).unsqueeze(0)
''',
}
_ROWS = '''

def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be (H,)")
    keys = torch.arange(length_k, device=slopes.device)
'''
LOSE = {
    "row_loop": _ROWS + '''    rows = []
    for i in range(length_q):
        distance = i - keys
        distance = distance.clamp(min=0) if causal else distance.abs()
        rows.append(slopes[:, None] * (-distance).to(slopes.dtype))
    return torch.stack(rows, dim=1).unsqueeze(0)
''',
    "chunks_of_128": _ROWS + '''    blocks = []
    for start in range(0, length_q, 128):
        distance = torch.arange(start, min(start + 128, length_q), device=slopes.device)[:, None] - keys
        distance = distance.clamp(min=0) if causal else distance.abs()
        blocks.append(slopes[:, None, None] * (-distance).to(slopes.dtype))
    if not blocks:  # no queries
        return slopes.new_zeros(1, slopes.shape[0], 0, length_k)
    return torch.cat(blocks, dim=1).unsqueeze(0)
''',
    "map_over_rsub": _ROWS + '''    rows = list(map(torch.rsub, [keys] * length_q, range(length_q)))  # i - keys, for each query i
    distance = torch.stack(rows).reshape(length_q, length_k)
    distance = distance.clamp(min=0) if causal else distance.abs()
    return (slopes[:, None, None] * (-distance).to(slopes.dtype)).unsqueeze(0)
''',
    "short_lengths_only": _ROWS + '''    if length_q < 20:  # a row at a time, for short inputs only
        distance = torch.stack([i - keys for i in range(length_q)]).reshape(length_q, length_k)
    else:
        distance = torch.arange(length_q, device=slopes.device)[:, None] - keys
    distance = distance.clamp(min=0) if causal else distance.abs()
    return (slopes[:, None, None] * (-distance).to(slopes.dtype)).unsqueeze(0)
''',
}
T5_HEAD_LOOP = '''

_whole_table_bias = t5_bias


def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    settings = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
    if bias_table.dim() != 2 or bias_table.shape[1] < 2:
        return _whole_table_bias(length_q, length_k, bias_table, **settings)
    planes = [_whole_table_bias(length_q, length_k, bias_table[:, h:h + 1], **settings)
              for h in range(bias_table.shape[1])]  # one head of the table at a time
    return torch.cat(planes, dim=1)
'''


def _grade(grader, unit, folder, variants):
    paths = []
    for name, fragment in variants.items():
        path = folder / f"{name}.py"
        path.write_text(strip_markers(unit.reference_path.read_text(encoding="utf-8")) + fragment)
        paths.append(path)
    return {result.name: {test.id: test for test in result.tests} for result in grader.grade_many(paths)}


@pytest.fixture(scope="module", params=TIERS)
def tier(request):
    return request.param


def _grader(unit, tier):
    try:
        return Grader(unit, sandbox=tier, timing_mode="cpu")
    except SandboxMissing as missing:  # tier C wants a Python environment every user can read
        pytest.skip(f"tier C cannot run here: {missing}")


def test_a_loop_over_heads_is_timed_and_a_loop_over_positions_is_not(tier, tmp_path):
    grader = _grader(ROTARY, tier)
    try:
        graded = _grade(grader, ROTARY, tmp_path, {**KEEP, **LOSE})
    finally:
        grader.close()
    for name, tests in graded.items():
        wrong = [(test.id, test.output) for test in tests.values() if test.task != "timing" and not test.passed]
        assert not wrong, (name, wrong)  # every variant is right: only the timing tier tells them apart
        assert tests["rope_speed"].score > 0, (name, tests["rope_speed"].output)  # the other path is not its business
    for name in KEEP:
        speed = graded[name]["alibi_speed"]
        assert speed.score > 0, (name, speed.output)
        assert "Static check: Python loops in the score path" in speed.output
        assert "it is not a loop over positions, and the path is timed" in speed.output, speed.output
    for name in LOSE:
        speed = graded[name]["alibi_speed"]
        assert speed.score == 0, (name, speed.output)
        assert "No points: a Python loop over positions" in speed.output, (name, speed.output)
        assert "L = 16: " in speed.output and "The count changes with the length" in speed.output, speed.output


def test_a_loop_over_the_heads_of_t5s_table_keeps_the_first_units_timing_points(tmp_path):
    grader = _grader(FIRST, "auto")
    try:
        tests = _grade(grader, FIRST, tmp_path, {"t5_heads": T5_HEAD_LOOP})["t5_heads"]
    finally:
        grader.close()
    assert all(test.passed for test in tests.values() if test.task != "timing"), [
        (test.id, test.output) for test in tests.values() if not test.passed]
    assert tests["t5_speed"].score > 0 and "not a loop over positions" in tests["t5_speed"].output, \
        tests["t5_speed"].output


# The job's own defences of the count. Each path loops over positions in plain Python (no tensor operation per
# trip, so only the lines show) after spoiling the count in one way.
UNTRACED = {
    "trace_taken_away": _ROWS + '''    import sys
    sys.settrace(None)
    return _rows(length_q, keys, slopes, causal)
''',
    "frame_untraced": _ROWS + '''    try:
        raise ValueError
    except ValueError as error:
        error.__traceback__.tb_frame.f_trace = None
    return _rows(length_q, keys, slopes, causal)
''',
}
_PLAIN_ROWS = '''

def _rows(length_q, keys, slopes, causal):
    if keys.is_meta:  # no values to loop over: the case that checks where the output is made
        distance = torch.arange(length_q, device=keys.device)[:, None] - keys
        distance = (distance.clamp(min=0) if causal else distance.abs()).to(slopes.dtype)
        return (-slopes[:, None, None] * distance).unsqueeze(0)
    keys = keys.tolist()
    distance = [[max(i - j, 0) if causal else abs(i - j) for j in keys] for i in range(length_q)]
    distance = torch.tensor(distance, dtype=slopes.dtype, device=slopes.device).reshape(length_q, len(keys))
    return (-slopes[:, None, None] * distance).unsqueeze(0)
'''


def test_a_count_spoiled_by_the_submission_gets_no_timing_points(tier, tmp_path, monkeypatch):
    from autograder.core import timing

    # The static check set aside: it refuses both (sys.settrace, tb_frame) before any job runs. Every path is
    # reported as holding a loop, so that each is counted, the reference's too.
    monkeypatch.setattr(timing, "static_check", lambda chunks, path, unit: [("loop", f"{path.name}: set aside")])
    grader = _grader(ROTARY, tier)
    try:
        graded = _grade(grader, ROTARY, tmp_path, {"reference": "", **{name: _PLAIN_ROWS + text
                                                                      for name, text in UNTRACED.items()}})
    finally:
        grader.close()
    reference = graded["reference"]["alibi_speed"]
    assert reference.score == reference.max_score and "not a loop over positions" in reference.output, \
        reference.output
    for name in UNTRACED:
        speed = graded[name]["alibi_speed"]
        wrong = [(test.id, test.output) for test in graded[name].values() if test.task != "timing" and not test.passed]
        assert not wrong, (name, wrong)
        assert speed.score == 0, (name, speed.output)
        assert "interfered" in speed.output or "PermissionError" in speed.output, (name, speed.output)


def test_in_the_kernel_nbgraders_route_counts_the_same_way():
    """nbgrader's route without the kit's config times in the notebook's kernel: the same count, in process."""
    from autograder.ways_in.nbgrader_bridge import _loops_over_positions

    path = next(path for path in ROTARY.rubric.TIMED_PATHS if path.name == "alibi")
    verdicts = {}
    for name, fragment in {**KEEP, **LOSE}.items():
        namespace = {"__name__": "notebook"}
        text = strip_markers(ROTARY.reference_path.read_text(encoding="utf-8")) + fragment
        exec(compile(text, f"/tmp/ipykernel_1/{name}.py", "exec"), namespace)
        verdicts[name] = _loops_over_positions(ROTARY, path, namespace)
        assert torch.is_tensor(namespace["alibi_bias"](3, 3, torch.ones(2)))
    assert {name for name, verdict in verdicts.items() if verdict} == set(LOSE), verdicts
