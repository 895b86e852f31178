"""What a failed check tells, where a task has two right answers or the meta device refused the work.

* A task that may call a helper has two right answers while it is graded: the reference's, and what it gives with
  the grader's stand-in in the helper's place (``tensor_check``'s ``also_accept``). A wrong output is told against
  the answer it is near, and says which that is: a slip of 1e-5 in a function that calls its helper once read
  "expected 1, got 0.21", the reference's value against the stand-in's.
* An error on the meta device is told by what torch says went wrong: a tensor copied off the device (a default
  ``torch.arange`` made on the CPU, then an input moved to its device), a CPU tensor met, or values read.
"""

import re

import torch
from hypothesis import given, settings, strategies as st

from autograder.core.cases import device_check, tensor_check
from autograder.sandbox import worker

NOTE = "(Expected here: what this function gives when it calls its helper right"


def _outcome(tensor):
    return {"value": worker._encode(tensor)}


def _quoted_expected(message):
    return float(re.search(r"expected (-?[\d.e+-]+), got", message).group(1))


@settings(max_examples=60, deadline=None)
@given(size=st.integers(2, 9), seed=st.integers(0, 2**31 - 1), slip=st.floats(1e-3, 1e-2), near_stand_in=st.booleans())
def test_a_wrong_output_is_told_against_the_right_answer_it_is_near(size, seed, slip, near_stand_in):
    generator = torch.Generator().manual_seed(seed)
    reference = torch.rand(size, generator=generator, dtype=torch.float64).float() + 0.5  # (size,) in [0.5, 1.5)
    stand_in = reference + 0.3 + torch.rand(size, generator=generator, dtype=torch.float64).float()  # far from it
    near = stand_in if near_stand_in else reference
    got = near * (1 + slip)  # every entry off by a relative slip far beyond the tolerance, far short of the other
    check = tensor_check("f(x)", reference, atol=1e-6, rtol=1e-6, also_accept=stand_in)
    verdict = check(_outcome(got))
    assert not verdict.passed
    entry = int(re.search(r"wrong at \[(\d+)\]", verdict.message).group(1))
    assert abs(_quoted_expected(verdict.message) - float(near[entry])) <= 1e-5 * abs(float(near[entry])), \
        verdict.message
    assert (NOTE in verdict.message) == near_stand_in, verdict.message
    assert check(_outcome(stand_in)).passed and check(_outcome(reference)).passed


def _raised_on_meta(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001  (torch's own error, as a job reports it)
        return {"error": {"type": type(error).__name__, "mro": [type(error).__name__], "message": str(error),
                          "where": ""}}
    raise AssertionError("no error")


def test_an_error_on_the_meta_device_is_told_by_what_torch_says_went_wrong():
    check = device_check("f(q) on the meta device", "meta", (3,), torch.float32)
    q = torch.empty(3, device="meta")
    copied = check(_raised_on_meta(lambda: q.to(torch.arange(3).device))).message  # q moved to a CPU tensor's device
    assert "copied off it" in copied and "device=q.device" in copied and "reads a tensor's values" not in copied
    mixed = check(_raised_on_meta(lambda: q + torch.arange(3))).message  # a CPU tensor met
    assert "met one on meta" in mixed and "device=q.device" in mixed
    read = check(_raised_on_meta(lambda: q[0].item())).message  # values read
    assert "reads a tensor's values into Python" in read
