"""The fourth unit's timed path, window_scores, through the real grader: the reference keeps the tier, and a Python
loop over the windows, over the patches of a window or over its rows of patches loses it (issue 39: "a loop over
windows or positions loses the tier"), whatever the loop's body does right.

The verdict on a loop is the count's (autograder/core/loop_check.py): the timed call's windows and their side both
grow with the length the grader draws (job.window_of), so each loop runs a number of times that changes between the
counted lengths; no timing decides it. The reference's points are the timing's, far from every band (its ratios
against itself read 0.30x to 1.57x in 30 gradings on 2 busy cores, the full-points limit 4x: benchmarks/RESULTS.md).
"""

import pytest

from autograder.core import units
from autograder.core.grade import Grader

UNIT = units.get("vision_positions")

# The head of every looping window_scores: the reference's checks and its gathered bias, so that only the loop differs.
HEAD = '''

def window_scores(q, k, bias_table, window_h, window_w, *, scale=None):
    windows, heads, patches, head_dim = q.shape
    if patches != window_h * window_w:
        raise ValueError("q's patches are not Wh * Ww")
    if tuple(bias_table.shape) != ((2 * window_h - 1) * (2 * window_w - 1), heads):
        raise ValueError("bias_table is not ((2Wh - 1)(2Ww - 1), H)")
    if scale is None:
        scale = 1.0 / math.sqrt(head_dim)
    index = window_relative_index(window_h, window_w, device=q.device)
    bias = bias_table.to(q.dtype)[index].permute(2, 0, 1)  # (H, N, N)
'''
LOOPS = {
    "over_windows": HEAD + '''    out = torch.empty(windows, heads, patches, patches, dtype=q.dtype, device=q.device)
    for w in range(windows):
        out[w] = scale * (q[w] @ k[w].transpose(-2, -1)) + bias
    return out
''',
    "over_patches": HEAD + '''    out = torch.empty(windows, heads, patches, patches, dtype=q.dtype, device=q.device)
    for n in range(patches):
        out[:, :, n, :] = scale * (q[:, :, n, None, :] @ k.transpose(-2, -1))[:, :, 0, :] + bias[:, n, :]
    return out
''',
    "over_window_rows": HEAD + '''    out = scale * (q @ k.transpose(-2, -1))
    for r in range(window_h):
        rows = slice(r * window_w, (r + 1) * window_w)
        out[:, :, rows, :] = out[:, :, rows, :] + bias[:, rows, :]
    return out
''',
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("timed")
    files = {"reference": UNIT.finished_reference,
             **{name: UNIT.finished_reference + "\n\nimport math\n" + text for name, text in LOOPS.items()}}
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    grader = Grader(UNIT, sandbox="auto", timing_mode="cpu")
    try:
        return {result.name: result for result in grader.grade_many([folder / f"{name}.py" for name in files])}
    finally:
        grader.close()


def test_the_reference_keeps_the_timing_points(graded):
    timed = {test.id: test for test in graded["reference"].tests if test.task == "timing"}
    assert set(timed) == {"window_scores_speed"} and timed["window_scores_speed"].passed, \
        timed["window_scores_speed"].output


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_loop_over_windows_or_patches_is_right_and_loses_the_tier(graded, name):
    tests = {test.id: test for test in graded[name].tests}
    assert all(test.passed for test in tests.values() if test.task != "timing"), \
        [(test.id, test.output) for test in tests.values() if not test.passed and test.task != "timing"]
    speed = tests["window_scores_speed"]
    assert speed.score == 0 and "Python loop" in speed.output, speed.output


def test_the_timed_windows_and_their_side_both_grow_with_the_length():
    """What makes every such loop show in the count: between the counted lengths, the number of windows and the
    side of a window each change somewhere, and the output stays near the first units' L^2 entries per head."""
    from autograder.sandbox import limits

    lengths = sorted({*limits.TIMING_COUNT_LENGTHS, limits.TIMING_SIZES["cpu"]["length"]})
    made = [UNIT.job.window_of(length) for length in lengths]
    assert len({side for side, _ in made}) > 1 and len({windows for _, windows in made}) > 1, made
    for length, (side, windows) in zip(lengths, made):
        assert side >= 2 and windows >= 1
        assert 0.5 * length <= windows * side * side <= 4 * length, (length, side, windows)  # an image of ~4L patches
        assert windows * side ** 4 <= length * length, (length, side, windows)  # per head, N^2 a window: <= L^2
