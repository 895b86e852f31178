"""Self-checks for task rope_scores: rope_scores. Run: pytest -k rope_scores"""

import math

import pytest
import torch

from checks import assert_close
from rotary_alibi import rope_scores

AXES = ("batch", "head", "query", "key")


def _unit_pairs(batch, heads, length, dtype=torch.float32):
    """Every vector (1, 0): with dh = 2 (one pair, theta_0 = 1) the score of query m and key n is cos(m - n)."""
    x = torch.zeros(batch, heads, length, 2, dtype=dtype)
    x[..., 0] = 1.0
    return x


def test_rope_scores_have_shape_batch_heads_lq_lk():
    got = rope_scores(torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8))
    assert isinstance(got, torch.Tensor) and got.shape == (2, 3, 5, 7), \
        f"expected (B, H, Lq, Lk) = (2, 3, 5, 7), got {tuple(getattr(got, 'shape', ()))}"


def test_rope_scores_at_position_0_are_plain_scaled_scores():
    q, k = torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8)
    assert_close(rope_scores(q, k), (q @ k.transpose(-2, -1)) / 8 ** 0.5, what="scores of q and k at position 0",
                 atol=1e-5, hint="position 0 turns nothing; the scale is 1/sqrt(dh) by default.")


@pytest.mark.parametrize("length_q, length_k", [(2, 5), (4, 3)])
def test_rope_scores_default_positions_count_from_0_when_lq_differs_from_lk(length_q, length_k):
    q, k = _unit_pairs(1, 2, length_q), _unit_pairs(1, 2, length_k)
    m, n = torch.arange(length_q)[:, None], torch.arange(length_k)[None, :]
    expected = torch.cos((m - n).double()).float().expand(1, 2, length_q, length_k)
    at_end = torch.cos((m + length_k - length_q - n).double()).float().expand(1, 2, length_q, length_k)
    assert_close(rope_scores(q, k, scale=1.0), expected, what=f"rope_scores of (1, 0) vectors, dh = 2, Lq = {length_q}, "
                 f"Lk = {length_k}, scale=1.0", atol=1e-5, axes=AXES,
                 causes=[(at_end, "the queries default to the last Lq of the Lk positions (a cache's): both defaults "
                                  "count from 0, arange(Lq) and arange(Lk); a caller with a cache passes positions_q.")],
                 hint="query m and key n are at positions arange(Lq) and arange(Lk), so the score is cos(m - n).")


@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("length_q, length_k, given", [(3, 6, False), (5, 2, False), (3, 4, True)])
def test_rope_scores_of_a_query_and_a_key_at_the_same_position_are_plain_scaled_scores(length_q, length_k, given,
                                                                                        interleaved):
    # R(t) q . R(t) k = q . k: wherever query i and key j share a position, rotation changes nothing.
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(2, 2, length_q, 12, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 2, length_k, 12, generator=generator, dtype=torch.float64)
    kwargs = {"interleaved": interleaved, "base": 300.0}
    if given:
        kwargs.update(positions_q=torch.tensor([40, 41, 43]), positions_k=torch.tensor([43, 40, 42, 41]))
    positions_q = kwargs.get("positions_q", torch.arange(length_q))
    positions_k = kwargs.get("positions_k", torch.arange(length_k))
    same = positions_q[:, None] == positions_k[None, :]  # (Lq, Lk)
    got = rope_scores(q, k, **kwargs)
    plain = (q @ k.transpose(-2, -1)) / math.sqrt(12)
    shown = ", ".join(f"{key}={value.tolist() if torch.is_tensor(value) else value}" for key, value in kwargs.items())
    assert_close(got[..., same], plain[..., same], what=f"rope_scores(q, k, {shown}) where query and key share a "
                 "position", atol=1e-6, hint="both q and k turn by their own positions (default arange(Lq) and "
                 "arange(Lk)), with the same layout and base: at equal positions the turns cancel.")


def test_rope_scores_depend_on_the_positions_only_through_their_difference():
    # The property RoPE is built for: shift every query and every key by the same amount, nothing changes.
    q, k = torch.randn(1, 2, 4, 16, dtype=torch.float64), torch.randn(1, 2, 6, 16, dtype=torch.float64)
    for interleaved in (True, False):
        base = rope_scores(q, k, positions_q=torch.arange(4), positions_k=torch.arange(6), interleaved=interleaved)
        for shift in (1, 50, 1000):
            moved = rope_scores(q, k, positions_q=torch.arange(4) + shift, positions_k=torch.arange(6) + shift,
                                interleaved=interleaved)
            assert_close(moved, base, what=f"scores with every position shifted by {shift} (interleaved="
                         f"{interleaved})", atol=1e-8, axes=AXES,
                         hint="rotate q by its positions and k by its own, with the same layout, then q @ k^T.")


@pytest.mark.parametrize("interleaved", [True, False])
def test_rope_scores_of_a_worked_example_turn_each_pair_by_its_own_speed(interleaved):
    # dh = 4 and base = 100: pair 0 turns at theta_0 = 1 and pair 1 at theta_1 = 100 ** (-2 / 4) = 0.1 per position.
    # A query (1, 0) in each pair at position m against a key (0, 1) in each pair at position n: R(m) (1, 0) =
    # (cos m theta, sin m theta) and R(n) (0, 1) = (-sin n theta, cos n theta), whose dot is sin((m - n) theta). So
    # the score is sin(m - n) + sin(0.1 (m - n)). The pairs are (0, 1) and (2, 3) interleaved, (0, 2) and (1, 3)
    # in halves: where the first and second parts of each pair sit.
    first, second = ([0, 2], [1, 3]) if interleaved else ([0, 1], [2, 3])
    q, k = torch.zeros(1, 1, 3, 4, dtype=torch.float64), torch.zeros(1, 1, 4, 4, dtype=torch.float64)
    q[..., first], k[..., second] = 1.0, 1.0
    difference = (torch.arange(3)[:, None] - torch.arange(4)[None, :]).double()
    expected = (torch.sin(difference) + torch.sin(0.1 * difference)).expand(1, 1, 3, 4)
    assert_close(rope_scores(q, k, base=100.0, scale=1.0, interleaved=interleaved), expected,
                 what=f"rope_scores(q, k, base=100.0, scale=1.0, interleaved={interleaved}), dh = 4, q = (1, 0) and "
                 "k = (0, 1) in each pair, Lq = 3, Lk = 4", atol=1e-9, axes=AXES,
                 hint="each pair turns by position * base ** (-2i / dh), (x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 "
                      "cos), with the pairs laid out as interleaved says; so the score of query m and key n here is "
                      "sin(m - n) + sin(0.1 (m - n)).")


def test_rope_scores_change_when_only_the_keys_move():
    q, k = torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8)
    assert not torch.allclose(rope_scores(q, k), rope_scores(q, k, positions_k=torch.arange(3) + 5)), \
        "moving the keys alone changes every distance m - n, so the scores must change"


def test_rope_scores_multiply_by_an_explicit_scale():
    generator = torch.Generator().manual_seed(5)
    q, k = torch.randn(1, 2, 3, 8, generator=generator), torch.randn(1, 2, 5, 8, generator=generator)
    unscaled = rope_scores(q, k, scale=1.0)
    assert_close(rope_scores(q, k, scale=0.3), 0.3 * unscaled, what="rope_scores(q, k, scale=0.3)", atol=1e-5,
                 axes=AXES, causes=[(unscaled / 0.3, "the scale divides the scores; it multiplies them."),
                                    (unscaled / math.sqrt(8), "the scale argument is ignored: 1/sqrt(dh) is used.")],
                 hint="scores = scale * (R q) . (R k); the default 1/sqrt(dh) applies only when scale is None.")


def test_rope_scores_keep_float64():
    q, k = _unit_pairs(1, 1, 2, torch.float64), _unit_pairs(1, 1, 3, torch.float64)
    got = rope_scores(q, k, scale=1.0, positions_q=torch.tensor([2500, 2501]), positions_k=torch.tensor([7, 8, 9]))
    m, n = torch.tensor([2500.0, 2501.0], dtype=torch.float64)[:, None], torch.tensor([7.0, 8.0, 9.0],
                                                                                      dtype=torch.float64)[None, :]
    assert_close(got, torch.cos(m - n).expand(1, 1, 2, 3), what="rope_scores of float64 (1, 0) vectors at "
                 "positions 2500, 2501 against 7, 8, 9", atol=1e-9, axes=AXES,
                 hint="float64 q and k give float64 scores, computed in float64 (no float32 step on the way).")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rope_scores_keep_half_precision(dtype):
    got = rope_scores(torch.randn(1, 2, 3, 8).to(dtype), torch.randn(1, 2, 4, 8).to(dtype))
    assert isinstance(got, torch.Tensor) and got.dtype == dtype, \
        f"{dtype} q and k should give {dtype} scores (the dtype of q), got {getattr(got, 'dtype', type(got).__name__)}"
