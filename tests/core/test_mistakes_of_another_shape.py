"""A declared mistake whose output has another shape than the right answer, under a tolerance given entry by entry.

A check's tolerance may be a tensor shaped for the right answer (the second unit's half-precision rotations: one
per coordinate, from the inputs). A mistake may change the output's shape (a class token's row dropped, a table
read at the wrong grid). Where a student's output has the mistake's shape, the check compared the two with the
answer's tolerance, which does not broadcast to them, and raised: the grader's fault on a student's file. Now the
tolerance is used whole where it fits, and its largest entry where it does not (cases.explanations); the mistake is
named when the output is the mistake's, and not when it is something else of that shape.
"""

import torch
from hypothesis import given, settings, strategies as st

from autograder.core.cases import Mistake, tensor_check


def _outcome(tensor):
    return {"value": {"tensor": tensor, "device": "cpu"}}


@st.composite
def _answers(draw):
    shape = tuple(draw(st.lists(st.integers(2, 6), min_size=1, max_size=4)))
    generator = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    expected = torch.randn(shape, generator=generator)
    per = draw(st.sampled_from(["entry", "row", "number"]))
    small = draw(st.floats(1e-7, 1e-4))
    atol = {"entry": torch.full(shape, small) * (1 + torch.rand(shape, generator=generator)),
            "row": torch.full(shape[:-1] + (1,), small), "number": small}[per]
    axis = draw(st.integers(0, len(shape) - 1))
    if draw(st.booleans()):  # a slice dropped
        wrong = expected.narrow(axis, 1, shape[axis] - 1).clone()
    else:  # a slice too many
        wrong = torch.cat((expected, expected.narrow(axis, 0, 1) + 1), dim=axis)
    return expected, atol, wrong, generator


@settings(max_examples=150, deadline=None)
@given(answers=_answers(), rtol_as_tensor=st.booleans())
def test_an_output_of_the_mistake_s_shape_is_named_when_it_is_the_mistake_s_and_never_crashes_the_check(
        answers, rtol_as_tensor):
    expected, atol, wrong, generator = answers
    rtol = torch.full(expected.shape, 1e-6) if rtol_as_tensor else 1e-6
    words = "a slice of the output is dropped or doubled."
    check = tensor_check("f(x)", expected, atol=atol, rtol=rtol, mistakes=[Mistake(words, lambda: wrong)])

    made = check(_outcome(wrong.clone()))
    assert not made.passed and made.mistake == words, made.message

    other = wrong.clone().reshape(-1)
    other[torch.randint(other.numel(), (), generator=generator)] += 1.0  # of the mistake's shape, not its output
    said = check(_outcome(other.reshape(wrong.shape)))
    assert not said.passed and said.mistake == "", said.message
    assert check(_outcome(expected.clone())).passed
