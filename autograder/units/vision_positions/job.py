"""The fourth unit's code that runs in a job, beside the student's: a view, a stand-in, the timed path.

It imports torch and nothing of the grader (see autograder/core/units.py).
"""

import math

import torch


def pair(value):
    """rope_2d_angles returns (cos, sin): both stacked on a new first axis, so the grader reads one tensor."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(part, torch.Tensor) for part in value) \
            and value[0].shape == value[1].shape and value[0].dtype == value[1].dtype:
        return torch.stack(tuple(value))
    return value


VIEWS = {"pair": pair}


# A stand-in for the helper task, so that window_scores is graded on its own: valid but scrambled indices (no
# reference values), and the grader knows what window_scores should make of them.

def scrambled_window_index(window_h, window_w, *, device=None, key=(3, 5, 1)):
    """Stand-in for window_relative_index: (N, N) int64, each entry in 0 .. (2Wh - 1)(2Ww - 1) - 1, N = Wh * Ww;
    valid, but not Swin's index. Each patch gets a code, r * (Ww + 1) + c, distinct modulo the number of offsets;
    an entry mixes the query's and the key's codes with multipliers of ``key`` that differ by one, so that
    index - index.T is code(n1) - code(n2), never 0 off the diagonal: the transposed index differs everywhere
    there. Built on ``device``, as the helper is."""
    if window_h < 1 or window_w < 1:  # the helper's contract, kept: only its values are scrambled
        raise ValueError(f"a window needs at least one row and one column, got window_h={window_h}, "
                         f"window_w={window_w}")
    a, b, c = key
    offsets = (2 * window_h - 1) * (2 * window_w - 1)
    rows = torch.arange(window_h, device=device).repeat_interleave(window_w)  # (N,)
    columns = torch.arange(window_w, device=device).repeat(window_h)  # (N,)
    code = rows * (window_w + 1) + columns  # (N,): below the number of offsets, so distinct modulo it
    mixed = (a + 1) * code[:, None] + a * code[None, :] + b * (columns[:, None] * columns[None, :]) + c  # (N, N)
    return mixed % offsets  # (N, N)


STAND_INS = {"scrambled_window_index": scrambled_window_index}


def window_of(length):
    """The window side and the number of windows a timed call has at the grader's drawn ``length``: an image of
    about 4 * length patches cut into square windows whose side grows as the fourth root of the length. Both grow
    with the length, so a loop over windows and a loop over the patches of a window each run a number of times
    that changes from one counted length to the next (the count of the timing tier), while the output, windows * N^2
    per head, stays near the first units' L^2 (at L = 384 on the CPU: 42 windows of 6 x 6; at L = 2048 on CUDA:
    32 windows of 16 x 16 an image)."""
    side = max(2, math.isqrt(length // 8))
    return side, max(1, 4 * length // (side * side))


def timing_inputs(spec, draw):
    """q and k of the timed path, (B * nW, H, N, dh) each with N = side * side, and the bias table,
    ((2 side - 1)^2, H): ``draw(*shape)`` gives a tensor of the spec's dtype on its device, in fresh storage, with
    values of its own for each call."""
    side, windows = window_of(spec["length"])
    batch, heads, head_dim = spec["batch"], spec["heads"], spec["head_dim"]
    q = draw(batch * windows, heads, side * side, head_dim)  # (B*nW, H, N, dh)
    k = draw(batch * windows, heads, side * side, head_dim)  # (B*nW, H, N, dh)
    return q, k, draw((2 * side - 1) ** 2, heads)  # the table: ((2Wh - 1)(2Ww - 1), H)


def score_path(namespace, spec):
    """A function of the inputs that runs the spec's path once, as the code of ``namespace`` wrote it."""
    window_scores = namespace["window_scores"]
    scale = 1.0 / math.sqrt(spec["head_dim"])

    def windows_path(q, k, table):
        side = math.isqrt(q.shape[-2])  # this call's window, drawn by the grader with its length
        return window_scores(q, k, table, side, side, scale=scale)

    return windows_path
