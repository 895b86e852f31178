"""The second unit's reference (solutions/rotary_alibi.py) has the properties its lesson claims, on generated inputs.

RoPE: a rotation of each pair (lengths kept, position 0 the identity, negative positions the inverse, two
rotations add their positions), the two layouts one rotation up to a fixed permutation, and scores that depend
on the positions only through their difference. ALiBi: slopes by the authors' rule, a bias equal to a plain double
loop. Position interpolation: every angle divided by the factor. Values are float64 where a property is exact in
exact arithmetic, so that the tolerances stay tight.
"""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from solutions.rotary_alibi import (
    alibi_bias,
    alibi_slopes,
    apply_rotary,
    rope_scores,
    rotary_angles,
    scaled_positions,
)

head_dims = st.integers(1, 12).map(lambda half: 2 * half)
seeds = st.integers(0, 2**31 - 1)
positions_of = st.integers(-5000, 5000)


def randn(seed, *shape, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@st.composite
def queries_and_keys(draw):
    """q (B, H, Lq, dh) and k (B, H, Lk, dh) in float64, with their own positions (any integers, not sorted)."""
    batch, heads = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    length_q, length_k, head_dim = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(head_dims)
    seed = draw(seeds)
    q = randn(seed, batch, heads, length_q, head_dim)
    k = randn(seed + 1, batch, heads, length_k, head_dim)
    positions_q = torch.tensor(draw(st.lists(positions_of, min_size=length_q, max_size=length_q)))
    positions_k = torch.tensor(draw(st.lists(positions_of, min_size=length_k, max_size=length_k)))
    return q, k, positions_q, positions_k


@st.composite
def rows_and_positions(draw):
    """x (..., L, dh) in float64 with one to three leading axes, and positions (L,)."""
    leading = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    length, head_dim = draw(st.integers(1, 6)), draw(head_dims)
    x = randn(draw(seeds), *leading, length, head_dim)
    positions = torch.tensor(draw(st.lists(positions_of, min_size=length, max_size=length)))
    return x, positions


# RoPE -----------------------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(queries_and_keys(), st.integers(-100_000, 100_000), st.booleans())
def test_rope_scores_are_unchanged_when_both_position_sets_shift_together(inputs, shift, interleaved):
    q, k, positions_q, positions_k = inputs
    before = rope_scores(q, k, positions_q=positions_q, positions_k=positions_k, interleaved=interleaved)
    after = rope_scores(q, k, positions_q=positions_q + shift, positions_k=positions_k + shift, interleaved=interleaved)
    # float64 angles near 1e5 carry an error near 1e-11 radians: far below this tolerance, far above rounding.
    torch.testing.assert_close(after, before, atol=1e-9, rtol=1e-9)


@settings(max_examples=60, deadline=None)
@given(queries_and_keys(), st.booleans())
def test_rope_scores_at_one_shared_position_are_plain_scaled_dot_products(inputs, interleaved):
    q, k, positions_q, _ = inputs
    same = positions_q[:1]  # every query and key at this one position
    got = rope_scores(q, k, positions_q=same.expand(q.shape[-2]), positions_k=same.expand(k.shape[-2]),
                      interleaved=interleaved)
    torch.testing.assert_close(got, q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), atol=1e-12, rtol=1e-10)


@settings(max_examples=60, deadline=None)
@given(queries_and_keys(), st.floats(0.1, 3.0))
def test_rope_scores_default_positions_count_from_zero_and_scale_is_one_over_root_dh(inputs, scale):
    q, k, _, _ = inputs
    length_q, length_k, head_dim = q.shape[-2], k.shape[-2], q.shape[-1]
    explicit = rope_scores(q, k, positions_q=torch.arange(length_q), positions_k=torch.arange(length_k), scale=scale)
    assert explicit.shape == (q.shape[0], q.shape[1], length_q, length_k)
    torch.testing.assert_close(rope_scores(q, k, scale=scale), explicit, atol=0, rtol=0)
    torch.testing.assert_close(rope_scores(q, k), explicit / scale / math.sqrt(head_dim), atol=1e-12, rtol=1e-12)


@settings(max_examples=80, deadline=None)
@given(rows_and_positions(), st.booleans())
def test_apply_rotary_keeps_the_length_of_every_pair(inputs, interleaved):
    x, positions = inputs
    out = apply_rotary(x, positions, interleaved=interleaved)

    def pair_lengths(tensor):
        if interleaved:
            return tensor.unflatten(-1, (-1, 2)).norm(dim=-1)  # (..., L, dh/2)
        first, second = tensor.chunk(2, dim=-1)
        return torch.hypot(first, second)  # (..., L, dh/2)

    torch.testing.assert_close(pair_lengths(out), pair_lengths(x), atol=1e-12, rtol=1e-12)


@settings(max_examples=80, deadline=None)
@given(rows_and_positions())
def test_the_two_layouts_are_one_rotation_up_to_a_fixed_permutation(inputs):
    x, positions = inputs
    head_dim = x.shape[-1]
    # Pair i is (2i, 2i + 1) interleaved and (i, i + dh/2) split: this permutation takes one to the other.
    to_half = torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))  # (dh,)
    interleaved = apply_rotary(x, positions, interleaved=True)
    half = apply_rotary(x[..., to_half], positions, interleaved=False)
    torch.testing.assert_close(half, interleaved[..., to_half], atol=0, rtol=0)


@settings(max_examples=60, deadline=None)
@given(rows_and_positions(), st.booleans(), st.sampled_from([torch.float16, torch.bfloat16, torch.float32]))
def test_apply_rotary_at_position_zero_is_the_identity(inputs, interleaved, dtype):
    x, positions = inputs
    x = x.to(dtype)
    out = apply_rotary(x, torch.zeros_like(positions), interleaved=interleaved)
    assert out.dtype == dtype
    assert torch.equal(out, x)  # cos 0 = 1 and sin 0 = 0 exactly


@settings(max_examples=80, deadline=None)
@given(rows_and_positions(), st.booleans())
def test_negative_positions_undo_the_rotation(inputs, interleaved):
    x, positions = inputs
    there = apply_rotary(x, positions, interleaved=interleaved)
    torch.testing.assert_close(apply_rotary(there, -positions, interleaved=interleaved), x, atol=1e-11, rtol=1e-11)


@settings(max_examples=60, deadline=None)
@given(rows_and_positions(), st.integers(-5000, 5000), st.booleans())
def test_two_rotations_add_their_positions(inputs, more, interleaved):
    x, positions = inputs
    twice = apply_rotary(apply_rotary(x, positions, interleaved=interleaved), torch.full_like(positions, more),
                         interleaved=interleaved)
    torch.testing.assert_close(twice, apply_rotary(x, positions + more, interleaved=interleaved), atol=1e-11,
                               rtol=1e-11)


@settings(max_examples=40, deadline=None)
@given(rows_and_positions(), st.booleans(), st.sampled_from([torch.float16, torch.bfloat16, torch.float32,
                                                            torch.float64]))
def test_apply_rotary_keeps_the_dtype_and_leaves_x_unchanged(inputs, interleaved, dtype):
    x, positions = inputs
    x = x.to(dtype)
    before = x.clone()
    out = apply_rotary(x, positions, interleaved=interleaved)
    assert out.dtype == dtype and out.shape == x.shape
    assert torch.equal(x, before)
    if dtype in (torch.float16, torch.bfloat16):  # computed in float32, rounded once at the end
        assert torch.equal(out, apply_rotary(x.float(), positions, interleaved=interleaved).to(dtype))


@settings(max_examples=40, deadline=None)
@given(rows_and_positions(), st.booleans())
def test_apply_rotary_takes_positions_per_sequence(inputs, interleaved):
    x, positions = inputs
    x = x.reshape(-1, 1, *x.shape[-2:])  # (B, 1, L, dh)
    offsets = torch.arange(x.shape[0])[:, None, None] * 37  # (B, 1, 1)
    together = apply_rotary(x, positions + offsets, interleaved=interleaved)  # positions (B, 1, L)
    one_by_one = torch.stack([apply_rotary(x[b], positions + 37 * b, interleaved=interleaved)
                              for b in range(x.shape[0])])
    torch.testing.assert_close(together, one_by_one, atol=0, rtol=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=3), head_dims, seeds, st.sampled_from([torch.float32, torch.float64]))
def test_rotary_angles_shape_is_the_positions_shape_then_half_the_head(shape, head_dim, seed, dtype):
    positions = torch.randint(-3000, 3000, shape, generator=torch.Generator().manual_seed(seed))
    cos, sin = rotary_angles(positions, head_dim, dtype=dtype)
    assert cos.shape == sin.shape == (*shape, head_dim // 2)
    assert cos.dtype == sin.dtype == dtype
    # One entry checked against math, in float64: t * base ** (-2i / dh).
    if positions.numel():
        t, i = int(positions.flatten()[0]), head_dim // 2 - 1
        angle = t * 10000.0 ** (-2 * i / head_dim)
        index = (0,) * len(shape) + (i,)
        assert abs(float(cos[index]) - math.cos(angle)) < 1e-6 and abs(float(sin[index]) - math.sin(angle)) < 1e-6


def test_rotary_angles_default_to_float32_and_accept_a_scalar_position():
    cos, sin = rotary_angles(torch.tensor(3), 4)
    assert cos.dtype == sin.dtype == torch.float32 and cos.shape == (2,)
    torch.testing.assert_close(cos, torch.tensor([math.cos(3), math.cos(0.03)]))
    torch.testing.assert_close(sin, torch.tensor([math.sin(3), math.sin(0.03)]))


# ALiBi ----------------------------------------------------------------------------------------------------------


def authors_slopes(n):
    """The ALiBi authors' rule in plain Python floats, written independently of the reference."""
    def power_of_two(m):
        return [2.0 ** (-8.0 * (h + 1) / m) for h in range(m)]

    closest = 1
    while closest * 2 <= n:
        closest *= 2
    return power_of_two(closest) + power_of_two(2 * closest)[0::2][: n - closest]


def float32_power_tolerance(num_heads):
    """Relative tolerance per head for BLOOM's slopes: ratio ** k, the ratio rounded to float32 first.

    Rounding the ratio costs up to 2**-24 relatively; raising it to the power k multiplies that by k, and
    torch.pow adds up to an ulp (2**-23) of its own.
    """
    closest = 1 << (num_heads.bit_length() - 1)
    power = torch.cat((torch.arange(1, closest + 1), torch.arange(num_heads - closest) * 2 + 1))  # (n,)
    return (power * 2.0**-24 + 2.0**-23).double()


@pytest.mark.parametrize("num_heads", [2**p for p in range(9)])
def test_alibi_slopes_are_geometric_for_a_power_of_two(num_heads):
    slopes = alibi_slopes(num_heads).double()
    first = 2.0 ** (-8.0 / num_heads)
    assert abs(float(slopes[0]) - first) <= 2.0**-24 * first  # the ratio, rounded once
    ratios = slopes[1:] / slopes[:-1]  # (n - 1,)
    assert ((ratios - first).abs() <= 4 * 2.0**-24 * first).all()  # each slope within an ulp of ratio ** k
    tolerance = float(float32_power_tolerance(num_heads)[-1])
    assert abs(float(slopes[-1]) - 2.0**-8) <= tolerance * 2.0**-8  # the last slope is 2 ** -8


@pytest.mark.parametrize("num_heads", list(range(1, 130)) + [255, 300, 513])
def test_alibi_slopes_follow_the_authors_rule_for_every_number_of_heads(num_heads):
    slopes = alibi_slopes(num_heads)
    assert slopes.dtype == torch.float32 and slopes.shape == (num_heads,)
    expected = torch.tensor(authors_slopes(num_heads), dtype=torch.float64)
    error = ((slopes.double() - expected) / expected).abs()  # (n,) relative
    worst = int((error / float32_power_tolerance(num_heads)).argmax())
    assert (error <= float32_power_tolerance(num_heads)).all(), (
        f"head {worst}: {float(slopes[worst])!r} against the rule's {float(expected[worst])!r}")


def test_alibi_slopes_are_float32_powers_of_a_rounded_ratio_not_the_rounded_exact_values():
    # They are BLOOM's bit for bit (test_rotary_alibi_agrees_with_hugging_face); the ratio's rounding error,
    # multiplied by the power, puts some heads a few ulps from 2 ** (-8 (h+1) / n) rounded to float32.
    assert torch.equal(alibi_slopes(8), torch.tensor(authors_slopes(8), dtype=torch.float32))  # exact powers of 2
    assert not torch.equal(alibi_slopes(16), torch.tensor(authors_slopes(16), dtype=torch.float32))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 6), st.integers(0, 7), st.integers(1, 4), st.booleans(), seeds)
def test_alibi_bias_equals_a_plain_double_loop(length_q, length_k, heads, causal, seed):
    slopes = randn(seed, heads).abs()  # float64 slopes: the loop's Python floats are the same numbers
    got = alibi_bias(length_q, length_k, slopes, causal=causal)
    expected = torch.zeros(1, heads, length_q, length_k, dtype=torch.float64)
    for h in range(heads):
        for i in range(length_q):
            for j in range(length_k):
                if j <= i:
                    expected[0, h, i, j] = -float(slopes[h]) * (i - j)
                elif not causal:
                    expected[0, h, i, j] = -float(slopes[h]) * (j - i)
    assert got.shape == expected.shape and got.dtype == torch.float64
    assert torch.equal(got, expected)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_alibi_bias_has_the_slopes_dtype_and_no_negative_zero(dtype):
    bias = alibi_bias(3, 5, alibi_slopes(4).to(dtype))
    assert bias.dtype == dtype and bias.shape == (1, 4, 3, 5)
    assert not torch.signbit(bias[bias == 0]).any()  # a -0.0 prints as "-0." in a student's notebook


# Position interpolation -----------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 100_000), min_size=1, max_size=6), st.floats(1.0, 64.0), head_dims)
def test_scaled_positions_divide_every_angle_by_the_factor(positions, factor, head_dim):
    scaled = scaled_positions(torch.tensor(positions, dtype=torch.float64), factor=factor)
    cos, sin = rotary_angles(scaled, head_dim, dtype=torch.float64)
    theta = [10000.0 ** (-2 * i / head_dim) for i in range(head_dim // 2)]
    angles = torch.tensor([[t * w / factor for w in theta] for t in positions], dtype=torch.float64)
    torch.testing.assert_close(cos, angles.cos(), atol=1e-10, rtol=0)
    torch.testing.assert_close(sin, angles.sin(), atol=1e-10, rtol=0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 16))
def test_an_integer_factor_maps_a_longer_context_onto_the_trained_range(trained, factor):
    long_context = torch.arange(trained * factor)  # (L * f,)
    scaled = scaled_positions(long_context, factor=factor)
    assert scaled.dtype == torch.float32
    assert float(scaled.max()) < trained
    # Every factor-th position lands exactly on a trained position.
    assert torch.equal(scaled[::factor], torch.arange(trained, dtype=torch.float32))


@pytest.mark.parametrize("dtype, expected", [(torch.int64, torch.float32), (torch.int32, torch.float32),
                                             (torch.float16, torch.float32), (torch.float32, torch.float32),
                                             (torch.float64, torch.float64)])
def test_scaled_positions_are_float32_unless_given_float64(dtype, expected):
    assert scaled_positions(torch.arange(5).to(dtype), factor=2.5).dtype == expected


# Invalid arguments ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, words", [
    (lambda: rotary_angles(torch.arange(3), 5), "head_dim"),
    (lambda: rotary_angles(torch.arange(3), 0), "head_dim"),
    (lambda: rotary_angles(torch.arange(3), -4), "head_dim"),
    (lambda: apply_rotary(torch.randn(2, 3, 7), torch.arange(3)), "head_dim"),
    (lambda: apply_rotary(torch.randn(2, 3, 8), torch.arange(4)), "one position per row"),
    (lambda: apply_rotary(torch.randn(2, 3, 8), torch.tensor(0)), "one position per row"),
    (lambda: rope_scores(torch.randn(1, 1, 3, 8), torch.randn(1, 1, 3, 8), positions_k=torch.arange(2)),
     "one position per row"),
    (lambda: alibi_slopes(0), "num_heads"),
    (lambda: alibi_slopes(-3), "num_heads"),
    (lambda: alibi_bias(3, 3, torch.ones(2, 2)), "one-dimensional"),
    (lambda: scaled_positions(torch.arange(3), factor=0), "factor"),
    (lambda: scaled_positions(torch.arange(3), factor=-2.0), "factor"),
    (lambda: scaled_positions(torch.arange(3), factor=float("nan")), "factor"),
    (lambda: scaled_positions(torch.arange(3), factor=float("inf")), "factor"),
], ids=["odd", "zero", "negative", "apply_odd", "too_many_positions", "scalar_position", "rope_k_positions",
        "no_heads", "negative_heads", "bias_2d_slopes", "factor_zero", "factor_negative", "factor_nan",
        "factor_inf"])
def test_invalid_arguments_raise_a_value_error_that_names_the_problem(call, words):
    with pytest.raises(ValueError, match=words):
        call()
