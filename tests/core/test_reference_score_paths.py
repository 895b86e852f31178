"""The reference's score paths (shaw_scores, t5_bias, biased_scores) against slow, obviously correct formulations.

The reference builds Shaw's relative term from strided views of its output (a diagonal strip and two constant
triangles) and T5's bias from a strided view of one row per head; these tests hold it to the formulas themselves,
written here the plain way: the (Lq, Lk, dh) relative keys rel_k[clip(j - i, -k, k) + k] and an einsum; a bucket
for every (query, key) pair; scale * q @ k^T + bias in float64. On generated shapes (every size its own, lengths
below k and of 1, Lq above and below Lk), dtypes, clipping distances and scales; the inputs left as they were and
the output in memory of its own.
"""

import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from solutions import positional_encodings
from solutions.positional_encodings import biased_scores, shaw_scores, t5_bias, t5_relative_position_bucket

DTYPES = (torch.float32, torch.float64)


def tolerance(dtype):
    return 1e-10 if dtype == torch.float64 else 5e-5  # the grader's, for scores of this dtype


def slow_shaw(q, k, rel_k, max_relative_position, scale=None):
    """scale * q_i . (k_j + rel_k[clip(j - i, -k, k) + k]), every (i, j) pair's relative key built, in float64."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    query = torch.arange(q.shape[-2])[:, None]
    key = torch.arange(k.shape[-2])[None, :]
    index = (key - query).clamp(-max_relative_position, max_relative_position) + max_relative_position  # (Lq, Lk)
    relative_keys = rel_k.double()[index]  # (Lq, Lk, dh)
    content = torch.einsum("bhid,bhjd->bhij", q.double(), k.double())
    relative = torch.einsum("bhid,ijd->bhij", q.double(), relative_keys)
    return scale * (content + relative)


def slow_t5_bias(length_q, length_k, bias_table, **settings):
    """bias_table[bucket(j - i), h] with a bucket computed for each (query, key) pair."""
    distance = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]  # (Lq, Lk)
    buckets = t5_relative_position_bucket(distance, **settings)  # (Lq, Lk)
    return bias_table[buckets].permute(2, 0, 1).unsqueeze(0)  # (1, H, Lq, Lk)


def slow_biased(q, k, bias, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    return scale * (q.double() @ k.double().transpose(-2, -1)) + bias.double()


def assert_close(got, expected, dtype, what):
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}, expected {dtype}"
    assert got.shape == expected.shape, f"{what}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    if got.numel():
        error = (got.double() - expected).abs()
        limit = tolerance(dtype) * (1 + expected.abs())
        first = tuple(int(i) for i in (error > limit).nonzero()[0]) if (error > limit).any() else None
        assert first is None, (f"{what}: first wrong entry {first}: got {got[first].item()}, expected "
                               f"{expected[first].item()}; largest error {error.max().item():.3g}")


def assert_fresh_and_inputs_kept(out, inputs, copies):
    """The inputs are as they were, and the output is memory of its own: writing into it changes no input."""
    for tensor, copy in zip(inputs, copies):
        assert torch.equal(tensor, copy), "an input was changed in place"
        assert out.untyped_storage().data_ptr() != tensor.untyped_storage().data_ptr(), "the output aliases an input"
    out.add_(1)  # also fails on a view whose entries share memory (an expanded or overlapping tensor)
    for tensor, copy in zip(inputs, copies):
        assert torch.equal(tensor, copy), "writing into the output changed an input"


def randn(generator, *shape, dtype=torch.float32, contiguous=True):
    if contiguous or len(shape) < 4:
        return torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)
    # As a model has them: (B, L, H, dh) seen as (B, H, L, dh), not contiguous.
    b, h, length, d = shape
    return torch.randn(b, length, h, d, generator=generator, dtype=torch.float64).to(dtype).transpose(1, 2)


@st.composite
def attention_inputs(draw, long=False):
    """Sizes, dtypes and a seed; ``long``: lengths well past k, so that every region of the Shaw term appears."""
    high = 130 if long else 24
    return dict(batch=draw(st.integers(1, 3)), heads=draw(st.integers(1, 3)),
                length_q=draw(st.integers(1, high)), length_k=draw(st.integers(1, high)),
                head_dim=draw(st.sampled_from([1, 2, 3, 4, 8])), dtype=draw(st.sampled_from(DTYPES)),
                contiguous=draw(st.booleans()), seed=draw(st.integers(0, 2**31 - 1)))


@settings(max_examples=300, deadline=None)
@given(attention_inputs(), st.integers(0, 12), st.sampled_from(DTYPES),
       st.one_of(st.none(), st.floats(0.05, 3.0)))
def test_shaw_scores_equals_the_einsum_over_built_relative_keys(sizes, max_rel, rel_dtype, scale):
    generator = torch.Generator().manual_seed(sizes["seed"])
    b, h, lq, lk, dh, dtype = (sizes[key] for key in ("batch", "heads", "length_q", "length_k", "head_dim", "dtype"))
    q = randn(generator, b, h, lq, dh, dtype=dtype, contiguous=sizes["contiguous"])
    k = randn(generator, b, h, lk, dh, dtype=dtype, contiguous=sizes["contiguous"])
    rel_k = randn(generator, 2 * max_rel + 1, dh, dtype=rel_dtype)  # cast to q's dtype by shaw_scores
    copies = [t.clone() for t in (q, k, rel_k)]
    out = shaw_scores(q, k, rel_k, max_rel, **({} if scale is None else {"scale": scale}))
    expected = slow_shaw(q.to(dtype), k, rel_k.to(dtype), max_rel, scale)
    assert_close(out, expected, dtype, f"shaw_scores B={b} H={h} Lq={lq} Lk={lk} dh={dh} k={max_rel}")
    assert_fresh_and_inputs_kept(out, (q, k, rel_k), copies)


@settings(max_examples=60, deadline=None)
@given(attention_inputs(long=True), st.integers(1, 24))
def test_shaw_scores_on_long_rows_has_the_strip_and_both_far_triangles_right(sizes, max_rel):
    generator = torch.Generator().manual_seed(sizes["seed"])
    b, h, lq, lk, dh, dtype = (sizes[key] for key in ("batch", "heads", "length_q", "length_k", "head_dim", "dtype"))
    q, k = randn(generator, b, h, lq, dh, dtype=dtype), randn(generator, b, h, lk, dh, dtype=dtype)
    rel_k = randn(generator, 2 * max_rel + 1, dh, dtype=dtype)
    assert_close(shaw_scores(q, k, rel_k, max_rel), slow_shaw(q, k, rel_k, max_rel), dtype,
                 f"shaw_scores B={b} H={h} Lq={lq} Lk={lk} dh={dh} k={max_rel}")


def test_shaw_scores_on_every_small_shape_and_clipping_distance():
    """Each (Lq, Lk, k) up to 13 x 13 x 7: every way the strip can meet the matrix's edges."""
    generator = torch.Generator().manual_seed(0)
    for length_q in range(1, 14):
        for length_k in range(1, 14):
            for max_rel in range(8):
                q = randn(generator, 2, 3, length_q, 4, dtype=torch.float64)
                k = randn(generator, 2, 3, length_k, 4, dtype=torch.float64)
                rel_k = randn(generator, 2 * max_rel + 1, 4, dtype=torch.float64)
                assert_close(shaw_scores(q, k, rel_k, max_rel), slow_shaw(q, k, rel_k, max_rel), torch.float64,
                             f"shaw_scores Lq={length_q} Lk={length_k} k={max_rel}")


@settings(max_examples=40, deadline=None)
@given(attention_inputs(), st.integers(0, 6))
def test_shaw_scores_gradients_equal_those_of_the_einsum(sizes, max_rel):
    """The capstone trains through shaw_scores: q, k and rel_k get the gradients of the formula."""
    generator = torch.Generator().manual_seed(sizes["seed"])
    b, h, lq, lk, dh = (sizes[key] for key in ("batch", "heads", "length_q", "length_k", "head_dim"))
    inputs = [randn(generator, *shape, dtype=torch.float64).requires_grad_()
              for shape in ((b, h, lq, dh), (b, h, lk, dh), (2 * max_rel + 1, dh))]
    weights = randn(generator, b, h, lq, lk, dtype=torch.float64)
    got = torch.autograd.grad((shaw_scores(*inputs, max_rel) * weights).sum(), inputs)
    expected = torch.autograd.grad((slow_shaw(*inputs, max_rel) * weights).sum(), inputs)
    for name, mine, theirs in zip(("q", "k", "rel_k"), got, expected):
        assert_close(mine, theirs, torch.float64, f"gradient of {name}, Lq={lq} Lk={lk} k={max_rel}")


def scrambled_table(length_q, length_k, max_relative_position, *, device=None):
    """Valid rows of rel_k, but not the clipped table: what the grader's stand-in for a wrong helper gives."""
    query = torch.arange(length_q, device=device)[:, None]
    key = torch.arange(length_k, device=device)[None, :]
    return (3 * key + 5 * query + 1) % (2 * max_relative_position + 1)


@settings(max_examples=60, deadline=None)
@given(attention_inputs(), st.integers(0, 8))
def test_shaw_scores_follows_the_table_of_the_helper_in_its_place(sizes, max_rel):
    """With another clipped_relative_positions in scope (the grader's stand-in for a wrong one), shaw_scores gives
    the scores of that helper's table, as the timing tier needs when it times a path with the stand-in."""
    generator = torch.Generator().manual_seed(sizes["seed"])
    b, h, lq, lk, dh, dtype = (sizes[key] for key in ("batch", "heads", "length_q", "length_k", "head_dim", "dtype"))
    q, k = randn(generator, b, h, lq, dh, dtype=dtype), randn(generator, b, h, lk, dh, dtype=dtype)
    rel_k = randn(generator, 2 * max_rel + 1, dh, dtype=dtype)
    index = scrambled_table(lq, lk, max_rel)
    scale = 1 / math.sqrt(dh)
    expected = scale * (q.double() @ k.double().transpose(-2, -1)
                        + torch.einsum("bhid,ijd->bhij", q.double(), rel_k.double()[index]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(positional_encodings, "clipped_relative_positions", scrambled_table)
        out = shaw_scores(q, k, rel_k, max_rel)
    assert_close(out, expected, dtype, f"shaw_scores with a scrambled helper, Lq={lq} Lk={lk} k={max_rel}")


def test_shaw_scores_with_its_own_helper_never_builds_the_whole_index_table():
    """The fast route: with the genuine helper only a (k+2, k+2) corner of the table is asked for, not (Lq, Lk)."""
    asked, genuine = [], positional_encodings.clipped_relative_positions

    def spy(length_q, length_k, max_relative_position, *, device=None):
        asked.append((length_q, length_k))
        return genuine(length_q, length_k, max_relative_position, device=device)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(positional_encodings, "clipped_relative_positions", spy)
        shaw_scores(torch.randn(1, 2, 300, 8), torch.randn(1, 2, 200, 8), torch.randn(9, 8), 4)
    assert asked == [(6, 6)]


def test_shaw_scores_rejects_a_negative_clipping_distance():
    with pytest.raises(ValueError, match="max_relative_position"):
        shaw_scores(torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4), torch.zeros(1, 4), -1)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 4), st.sampled_from(DTYPES),
       st.sampled_from([dict(), dict(bidirectional=False), dict(num_buckets=16, max_distance=64),
                        dict(bidirectional=False, num_buckets=8, max_distance=20), dict(num_buckets=64)]),
       st.integers(0, 2**31 - 1))
def test_t5_bias_equals_the_table_looked_up_per_pair(length_q, length_k, heads, dtype, settings_, seed):
    table = randn(torch.Generator().manual_seed(seed), settings_.get("num_buckets", 32), heads, dtype=dtype)
    copy = table.clone()
    out = t5_bias(length_q, length_k, table, **settings_)
    expected = slow_t5_bias(length_q, length_k, table, **settings_)
    assert out.dtype == dtype and out.shape == (1, heads, length_q, length_k)
    assert torch.equal(out, expected), f"t5_bias Lq={length_q} Lk={length_k} {settings_}"
    assert out.is_contiguous()
    assert_fresh_and_inputs_kept(out, (table,), (copy,))


def test_t5_bias_gradient_reaches_each_table_entry_once_per_pair_in_its_bucket():
    table = torch.randn(32, 3, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(1, 3, 40, 70, dtype=torch.float64)
    (got,) = torch.autograd.grad((t5_bias(40, 70, table) * weights).sum(), table)
    (expected,) = torch.autograd.grad((slow_t5_bias(40, 70, table) * weights).sum(), table)
    assert_close(got, expected, torch.float64, "gradient of bias_table")


BIAS_SHAPES = ("(1, H, Lq, Lk)", "(Lq, Lk)", "(B, 1, 1, Lk)", "(B, H, Lq, Lk)")


@settings(max_examples=300, deadline=None)
@given(attention_inputs(), st.sampled_from(BIAS_SHAPES), st.sampled_from(DTYPES),
       st.one_of(st.none(), st.floats(0.05, 3.0)))
def test_biased_scores_equals_scale_times_q_k_plus_the_unscaled_bias(sizes, bias_shape, bias_dtype, scale):
    generator = torch.Generator().manual_seed(sizes["seed"])
    b, h, lq, lk, dh, dtype = (sizes[key] for key in ("batch", "heads", "length_q", "length_k", "head_dim", "dtype"))
    q = randn(generator, b, h, lq, dh, dtype=dtype, contiguous=sizes["contiguous"])
    k = randn(generator, b, h, lk, dh, dtype=dtype, contiguous=sizes["contiguous"])
    shape = {"(1, H, Lq, Lk)": (1, h, lq, lk), "(Lq, Lk)": (lq, lk), "(B, 1, 1, Lk)": (b, 1, 1, lk),
             "(B, H, Lq, Lk)": (b, h, lq, lk)}[bias_shape]
    bias = randn(generator, *shape, dtype=bias_dtype)
    copies = [t.clone() for t in (q, k, bias)]
    out = biased_scores(q, k, bias, **({} if scale is None else {"scale": scale}))
    # A float64 bias is rounded to q's dtype where it is added: that much more room in float32.
    expected = slow_biased(q, k, bias.to(dtype), scale)
    assert_close(out, expected, dtype, f"biased_scores B={b} H={h} Lq={lq} Lk={lk} bias {bias_shape}")
    assert_fresh_and_inputs_kept(out, (q, k, bias), copies)


def test_biased_scores_never_scales_the_bias():
    bias = torch.randn(1, 2, 5, 7)
    out = biased_scores(torch.zeros(3, 2, 5, 4), torch.randn(3, 2, 7, 4), bias, scale=0.25)
    assert torch.equal(out, bias.expand(3, 2, 5, 7))


@settings(max_examples=40, deadline=None)
@given(attention_inputs(), st.integers(0, 2**31 - 1))
def test_the_t5_path_gradients_equal_those_of_the_formula(sizes, seed):
    """biased_scores(q, k, t5_bias(...)) as the capstone trains it: gradients for q, k and the table."""
    generator = torch.Generator().manual_seed(seed)
    b, h, lq, lk, dh = (sizes[key] for key in ("batch", "heads", "length_q", "length_k", "head_dim"))
    inputs = [randn(generator, *shape, dtype=torch.float64).requires_grad_()
              for shape in ((b, h, lq, dh), (b, h, lk, dh), (32, h))]
    weights = randn(generator, b, h, lq, lk, dtype=torch.float64)
    q, k, table = inputs
    got = torch.autograd.grad((biased_scores(q, k, t5_bias(lq, lk, table)) * weights).sum(), inputs)
    expected = torch.autograd.grad((slow_biased(q, k, slow_t5_bias(lq, lk, table)) * weights).sum(), inputs)
    for name, mine, theirs in zip(("q", "k", "bias_table"), got, expected):
        assert_close(mine, theirs, torch.float64, f"gradient of {name}, Lq={lq} Lk={lk}")
