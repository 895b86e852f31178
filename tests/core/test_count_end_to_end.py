"""The count is the verdict, graded end to end (issue 36): 50 submissions drawn from the grammar of
tests/core/test_count_grammar.py, each the second unit's reference with a drawn path run inside its ``alibi_bias``, graded
by the real Grader (sandbox, correctness tests, timing tier on the CPU).

The drawn path adds work, never a change of the output: every correctness test passes, and only the count tells the
submissions apart. One whose trip count grows with the length (positions, chunks of them, positions above a
threshold of its own below the longest length counted) loses ``alibi_speed``; one whose trip count is the heads or
a constant keeps points there. Most mechanisms hold no loop the static check reads as one (a sort key, a sequence
protocol, recursion through an operator or copy.deepcopy, Tensor.apply_): before this issue those were never
counted, and a chunked loop over positions cost 1.3 to 2x the reference on two cores, inside the full-points band.
"""

import random

import pytest
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.grade import Grader
from autograder.core.units import strip_markers
from test_count_grammar import BODIES, MECHANISMS, TRIPS, path_source

ROTARY = units.get("rotary_alibi")
SUBMISSIONS = 50
LONGEST = max(set(ROTARY.rubric.TIMING_COUNT_LENGTHS) | {ROTARY.rubric.TIMING_SIZES["cpu"]["length"]})

WRAPPED = '''

_reference_alibi_bias = alibi_bias


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() == 1 and not slopes.is_meta and slopes.shape[0] > 0:
        _drawn_path(slopes.new_zeros(length_q, slopes.shape[0]))  # work on (L, H), never a change of the output
    return _reference_alibi_bias(length_q, length_k, slopes, causal=causal)


'''


@st.composite
def submissions(draw):
    mechanism = draw(st.sampled_from(sorted(MECHANISMS)))
    body = draw(st.sampled_from(sorted(BODIES)))
    if draw(st.integers(0, 4)) == 0:
        threshold = draw(st.integers(ROTARY.rubric.TIMING_COUNT_LENGTHS[0], LONGEST + 64))
        trip, grows = f"(L if L > {threshold} else 0)", threshold < LONGEST
    else:
        kind = draw(st.sampled_from(sorted(TRIPS)))
        trip, grows = TRIPS[kind]
    source = path_source(mechanism, trip, body).replace("def path(x):", "def _drawn_path(x):", 1)
    return mechanism, trip, body, source, grows


@pytest.fixture(scope="module")
def grader():
    grader = Grader(ROTARY, sandbox="auto", timing_mode="cpu")
    yield grader
    grader.close()


@settings(max_examples=1, deadline=None, database=None)
@given(st.lists(submissions(), min_size=SUBMISSIONS, max_size=SUBMISSIONS))
def test_a_drawn_path_loses_the_tier_exactly_when_its_count_grows_with_the_length(grader, tmp_path_factory, drawn):
    folder = tmp_path_factory.mktemp("drawn")
    reference = strip_markers(ROTARY.reference_path.read_text(encoding="utf-8"))
    paths = []
    for number, (_, _, _, source, _) in enumerate(drawn):
        path = folder / f"drawn{number:02}.py"
        path.write_text(reference + WRAPPED + source, encoding="utf-8")
        paths.append(path)
    results = grader.grade_many(paths, jobs=2)
    for (mechanism, trip, body, _, grows), result in zip(drawn, results):
        tests = {test.id: test for test in result.tests}
        said = (mechanism, trip, body)
        wrong = [(test.id, test.output) for test in tests.values() if test.task != "timing" and not test.passed]
        assert not wrong, (said, wrong)  # the drawn path changes no output: only the count tells them apart
        speed = tests["alibi_speed"]
        if grows:
            assert speed.score == 0 and "a Python loop over positions" in speed.output, (said, speed.output)
        else:
            assert speed.score > 0, (said, speed.output)
            assert "it is not a loop over positions, and the path is timed" in speed.output, (said, speed.output)


def test_the_drawn_lengths_differ_from_one_count_to_the_next():
    from autograder.core import timing

    seen = {timing.count_lengths(ROTARY.rubric, "cpu", random.SystemRandom()) for _ in range(10)}
    assert len(seen) > 1
