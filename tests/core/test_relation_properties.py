"""compare.relation, on generated tensors: it tells each simple relation it is built for, and claims none that
does not hold (issue 12: "never a wrong name" applies to relations too)."""

import math

import torch
from hypothesis import assume, given, settings, strategies as st

from autograder.core.compare import relation

AXES = ("batch", "head", "query", "key")


@st.composite
def scores(draw, square=False):
    """A (B, H, Lq, Lk) float64 tensor of generic values (no two entries alike), every size a different one."""
    batch, heads = draw(st.integers(1, 3)), draw(st.integers(2, 4))
    length_q = draw(st.integers(2, 7))
    length_k = length_q if square else draw(st.integers(2, 7))
    seed = draw(st.integers(0, 2**31 - 1))
    return torch.randn(batch, heads, length_q, length_k, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


@settings(max_examples=60, deadline=None)
@given(scores(), st.sampled_from(["sign", "factor", "offset", "softmax", "flip", "term"]),
       st.floats(0.1, 5.0).filter(lambda c: abs(c - 1) > 0.05))
def test_each_relation_it_is_built_for_is_told(expected, kind, c):
    term = torch.randn(expected.shape[-2:], dtype=torch.float64)  # a (Lq, Lk) part of the right output
    got = {"sign": -expected, "factor": c * expected, "offset": expected + c, "softmax": expected.softmax(-1),
           "flip": expected.flip(2), "term": expected + (c - 1) * term}[kind]
    words = {"sign": "opposite sign", "factor": "constant factor", "offset": "off by the same constant",
             "softmax": "softmax", "flip": "reversed along the query axis", "term": "the term bias enters"}[kind]
    said = relation(got, expected, axes=AXES, terms={"bias": (term, 1.0)})
    assert said is not None and words in said, (kind, said)


@settings(max_examples=40, deadline=None)
@given(scores(square=True))
def test_a_transposed_output_is_told_transposed(expected):
    said = relation(expected.transpose(-1, -2), expected, axes=AXES)
    assert said and "transposed" in said


@settings(max_examples=40, deadline=None)
@given(scores(), st.integers(0, 2**31 - 1))
def test_an_unrelated_output_gets_no_relation(expected, seed):
    got = torch.randn(expected.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    assert relation(got, expected, axes=AXES, factors={"1/sqrt(dh)": 1 / math.sqrt(8)}) is None


@settings(max_examples=40, deadline=None)
@given(scores())
def test_the_right_output_gets_no_relation(expected):
    assert relation(expected.clone(), expected, axes=AXES) is None


@settings(max_examples=60, deadline=None)
@given(scores(), st.data())
def test_where_it_says_the_output_is_right_it_is_right(expected, data):
    """Wrong on one head from some query on: the sentence names the head and the query, and both are true."""
    head = data.draw(st.integers(0, expected.shape[1] - 1))
    first = data.draw(st.integers(1, expected.shape[2] - 1))
    got = expected.clone()
    got[:, head, first:] += 1.0 + torch.rand(got[:, head, first:].shape, dtype=torch.float64)
    said = relation(got, expected, axes=AXES)
    assume(said is not None)
    assert f"from query {first} on" in said or f"head {head}" in said or (
        expected.shape[1] == 2 and f"head {1 - head}" in said), said
    assert "too high" not in said  # the errors are not whole numbers
    if "where the key index is below the query index" in said:  # a claim about j < i: true of every wrong entry
        assert all(j < i for i in range(first, expected.shape[2]) for j in range(expected.shape[3])), said
    if "where the key index is above the query index" in said:
        assert all(j > i for i in range(first, expected.shape[2]) for j in range(expected.shape[3])), said


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**31 - 1))
def test_integers_off_by_one_at_a_few_entries_are_told_so(length, seed):
    expected = torch.randint(0, 30, (length * 3,), generator=torch.Generator().manual_seed(seed))
    got = expected.clone()
    where = torch.randperm(got.numel(), generator=torch.Generator().manual_seed(seed + 1))[:max(1, length // 3)]
    got[where] += 1
    said = relation(got, expected, atol=0, rtol=0)
    assert said is not None and ("one too high" in said or "too high" in said), said


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_the_slices_a_permutation_is_read_from_are_those_a_pair_by_pair_search_finds(data):
    """compare._first_matches compares every pair of slices in one broadcast: for each slice of the output, the
    first slice of the expected one it agrees with, or None where one agrees with none, exactly as comparing the
    slices two at a time finds them (repeated slices included, where the first one found is the answer)."""
    from autograder.core.compare import _close, _first_matches

    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    axis = data.draw(st.integers(0, len(shape) - 1))
    pool = torch.randn(3, *shape[:axis], *shape[axis + 1:], dtype=torch.float64,
                       generator=torch.Generator().manual_seed(data.draw(st.integers(0, 2**31 - 1))))
    # Slices drawn from a pool of three: repeats are common, and now and then one agrees with no slice of the other.
    expected = torch.stack([pool[data.draw(st.integers(0, 2))] for _ in range(shape[axis])], axis)
    got = torch.stack([pool[data.draw(st.integers(0, 2))] + data.draw(st.sampled_from([0.0, 0.0, 1e-7, 0.5]))
                       for _ in range(shape[axis])], axis)
    pairwise = []
    for i in range(shape[axis]):
        match = [j for j in range(shape[axis]) if _close(got.select(axis, i), expected.select(axis, j), 1e-5, 1e-5)]
        if not match:
            pairwise = None
            break
        pairwise.append(match[0])
    assert _first_matches(got, expected, axis, 1e-5, 1e-5) == pairwise
