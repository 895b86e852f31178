"""Self-checks for task window_scores: window_scores. Run: pytest -k window_scores"""

import math

import pytest
import torch

from checks import assert_close, assert_no_loops, assert_raises
from vision_positions import window_scores

AXES = ("window", "head", "query patch", "key patch")
FORMULA = ("scores[w, h, n1, n2] = scale * q[w, h, n1] . k[w, h, n2] + bias_table[index[n1, n2], h], with Swin's "
           "index (r1 - r2 + Wh - 1)(2Ww - 1) + (c1 - c2 + Ww - 1), patch n at row n // Ww and column n % Ww; the "
           "scale (1/sqrt(dh) by default) on q @ k^T only, each head its own column of the table.")


def _bias(table, window_h, window_w):
    """(H, N, N) float64: head h's bias of query patch n1 and key patch n2, looked up offset by offset."""
    places = [(r, c) for r in range(window_h) for c in range(window_w)]  # patch n = r * Ww + c
    index = torch.tensor([[(r1 - r2 + window_h - 1) * (2 * window_w - 1) + (c1 - c2 + window_w - 1)
                           for (r2, c2) in places] for (r1, c1) in places])  # (N, N)
    return torch.stack([table[:, h].double()[index] for h in range(table.shape[1])])  # (H, N, N)


def _expected(q, k, table, window_h, window_w, scale=None):
    """The scores written out in float64."""
    used = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return used * (q.double() @ k.double().transpose(-2, -1)) + _bias(table, window_h, window_w)


def _inputs(windows, heads, window_h, window_w, head_dim, dtype=torch.float32):
    patches, offsets = window_h * window_w, (2 * window_h - 1) * (2 * window_w - 1)
    return (torch.randn(windows, heads, patches, head_dim, dtype=dtype),
            torch.randn(windows, heads, patches, head_dim, dtype=dtype), torch.randn(offsets, heads, dtype=dtype))


def test_window_scores_have_shape_windows_heads_patches_patches():
    q, k, table = _inputs(3, 1, 2, 3, 4)
    got = window_scores(q, k, table, 2, 3)
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (3, 1, 6, 6) and got.dtype == torch.float32, \
        (f"expected a float32 tensor of shape (B * nW, H, N, N) = (3, 1, 6, 6), got "
         f"{getattr(got, 'dtype', type(got).__name__)} {tuple(getattr(got, 'shape', ()))}")


def test_window_scores_stay_on_the_inputs_device():
    # The meta device holds no values and needs no GPU, and refuses to be mixed with the CPU, as CUDA does.
    q, k, table = (tensor.to("meta") for tensor in _inputs(2, 3, 2, 3, 4))
    got = window_scores(q, k, table, 2, 3)
    assert isinstance(got, torch.Tensor) and got.device.type == "meta" and tuple(got.shape) == (2, 3, 6, 6), \
        (f"expected scores of shape (2, 3, 6, 6) on the meta device, got {tuple(getattr(got, 'shape', ()))} on "
         f"{getattr(got, 'device', None)}: make every new tensor (the index, say) on q.device")


def test_window_scores_match_the_worked_example():
    q, k = torch.tensor([[[[1.0], [2.0]]]]), torch.tensor([[[[1.0], [1.0]]]])
    got = window_scores(q, k, torch.tensor([[0.0], [0.5], [1.0]]), 1, 2, scale=1.0)
    assert_close(got, torch.tensor([[[[1.5, 1.0], [3.0, 2.5]]]]), what="the worked example: one 1 x 2 window, "
                 "q = [[1], [2]], k = [[1], [1]], bias_table = [[0.0], [0.5], [1.0]], scale=1.0", atol=1e-6,
                 axes=AXES, hint="q k^T = [[1, 1], [2, 2]] plus the bias [[0.5, 0.0], [1.0, 0.5]]: query patch 0 "
                                 "and key patch 1 are at the offset (0, -1), row 0 of the table.")


@pytest.mark.parametrize("windows, heads, window_h, window_w, head_dim, scale",
                         [(2, 2, 2, 3, 5, None), (1, 2, 3, 2, 4, 0.5), (2, 3, 1, 3, 6, None)],
                         ids=["wide window", "tall window, scale 0.5", "heads == patches"])
def test_window_scores_add_each_heads_bias_for_the_offset_of_the_two_patches(windows, heads, window_h, window_w,
                                                                             head_dim, scale):
    q, k, table = _inputs(windows, heads, window_h, window_w, head_dim)
    kwargs = {} if scale is None else {"scale": scale}
    assert_close(window_scores(q, k, table, window_h, window_w, **kwargs),
                 _expected(q, k, table, window_h, window_w, scale).float(),
                 what=f"window_scores(q {tuple(q.shape)}, k, bias_table {tuple(table.shape)}, {window_h}, {window_w}"
                      + (f", scale={scale})" if scale is not None else ")"), atol=1e-5, rtol=1e-5, axes=AXES,
                 hint=FORMULA)


def test_window_scores_are_the_bias_alone_where_the_queries_are_zero():
    # q = 0: the product vanishes, and what is left is each head's bias, the same in every window, whatever the
    # scale (it multiplies q @ k^T, never the bias).
    _, k, table = _inputs(2, 2, 3, 2, 4)
    q = torch.zeros_like(k)
    expected = _bias(table, 3, 2).float().expand(2, 2, 6, 6)
    assert_close(window_scores(q, k, table, 3, 2, scale=0.25), expected, what="window_scores(q = 0, k, bias_table "
                 "(15, 2), 3, 2, scale=0.25): the bias alone", atol=1e-6, axes=AXES,
                 hint="bias[h, n1, n2] = bias_table[index[n1, n2], h]: bias_table[index] is (N, N, H), so move the "
                      "heads first with permute(2, 0, 1) (not reshape, and not .T, which swaps the patches too); "
                      "the scale never touches it.")


def test_window_scores_take_the_scale_as_given_zero_included():
    q, k, table = _inputs(2, 2, 2, 2, 8)
    assert_close(window_scores(q, k, table, 2, 2, scale=0.0), _bias(table, 2, 2).float().expand(2, 2, 4, 4),
                 what="window_scores(..., scale=0.0)", atol=1e-6, axes=AXES,
                 hint="with scale=0.0 the scores are the bias alone: the scale multiplies q @ k^T only, and 0.0 is a "
                      "scale like any other (test `scale is None`, not `if not scale` or `scale or ...`).")
    assert_close(window_scores(q, k, table, 2, 2, scale=2.0), _expected(q, k, table, 2, 2, 2.0).float(),
                 what="window_scores(..., scale=2.0)", atol=1e-5, rtol=1e-5, axes=AXES,
                 hint="the scale multiplies q @ k^T once, as it is given (no 1/sqrt(dh) on top of it).")


def test_window_scores_keep_float64():
    q, k, table = _inputs(1, 3, 2, 3, 4, dtype=torch.float64)
    got = window_scores(q, k, table, 2, 3)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64, \
        f"float64 q and k should give float64 scores, got {getattr(got, 'dtype', type(got).__name__)}"
    assert_close(got, _expected(q, k, table, 2, 3), what="window_scores of float64 q, k and bias_table, 2 x 3 window",
                 atol=1e-12, rtol=1e-12, axes=AXES, hint=FORMULA)


def test_window_scores_turn_a_float32_table_to_the_dtype_of_q():
    q, k, _ = _inputs(1, 3, 3, 2, 8, dtype=torch.bfloat16)
    table = torch.randn(15, 3)  # a float32 parameter, as under autocast
    got = window_scores(q, k, table, 3, 2)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16, \
        ("bfloat16 q and k with a float32 table should give bfloat16 scores (the table is cast to q's dtype), got "
         f"{getattr(got, 'dtype', type(got).__name__)}")
    expected = _expected(q, k, table, 3, 2)
    size = (q.double().abs() @ k.double().abs().transpose(-2, -1)) / math.sqrt(8) + _bias(table, 3, 2).abs()
    assert_close(got, expected.to(torch.bfloat16), what="window_scores of bfloat16 q and k, a float32 table",
                 atol=3 * torch.finfo(torch.bfloat16).eps * size, rtol=0.0, axes=AXES, hint=FORMULA)


def _window_inputs(length):
    """The timed path's inputs at a sequence length: about 4 * length patches in square windows of side
    sqrt(length / 8), so that both the number of windows and their size grow with the length."""
    side = max(2, math.isqrt(length // 8))
    windows = max(1, 4 * length // (side * side))
    q, k, table = _inputs(windows, 2, side, side, 8)
    return q, k, table, side, side


def test_window_scores_run_no_python_loop_over_windows_heads_or_patches():
    # Right first, on one small window; then counted at growing sizes: the grader times this path.
    q, k, table = _inputs(1, 2, 2, 2, 4)
    assert_close(window_scores(q, k, table, 2, 2), _expected(q, k, table, 2, 2).float(), what="window_scores(q "
                 "(1, 2, 4, 4), k, bias_table (9, 2), 2, 2)", atol=1e-5, rtol=1e-5, axes=AXES, hint=FORMULA)
    assert_no_loops(window_scores, inputs=_window_inputs)


@pytest.mark.parametrize("q_shape, table_shape, window, why", [
    ((1, 2, 7, 4), (21, 2), (2, 4), "q holds 7 patches a window where a 2 x 4 window has 8"),
    ((1, 2, 8, 4), (8, 2), (2, 4), "the table has 8 rows, one a patch: a 2 x 4 window has 3 * 7 = 21 offsets"),
    ((1, 2, 8, 4), (2, 21), (2, 4), "the table is (H, offsets) = (2, 21), not (21, 2)"),
    ((2, 1, 8, 4), (21,), (2, 4), "a one-dimensional table: it is (offsets, H), even for one head"),
    ((1, 2, 8, 4), (21, 1), (2, 4), "one column for two heads: the table is (offsets, H), a column per head (one "
                                    "column would be broadcast to every head without a word)"),
], ids=["patches", "table of patches", "table transposed", "table of one dimension", "one column for two heads"])
def test_window_scores_reject_what_the_docstring_calls_invalid(q_shape, table_shape, window, why):
    q = torch.randn(*q_shape)
    assert_raises(ValueError, window_scores, q, q.clone(), torch.randn(*table_shape), *window, hint=why)
