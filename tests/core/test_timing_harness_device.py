"""The timed paths' own code (each unit's job.py) builds nothing on the CPU when the inputs are elsewhere.

On a GPU the grader times each path on CUDA: a tensor the harness makes on the CPU and mixes with the inputs fails
the call, in the reference's job and the student's alike (the second unit's ALiBi path did, found on an H200,
benchmarks/RESULTS.md 2026-12-04). These run every timed path of every unit, with the reference's functions, on
inputs on the ``meta`` device, which torch refuses to mix with CPU tensors as it refuses CUDA: a machine without a
GPU catches the mistake. The sizes are drawn (hypothesis), the layout is each unit's own.
"""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import units

# The first unit's Shaw reference reads values (torch.equal on a corner of the index table, to tell the helper from
# the grader's stand-in), which no meta kernel can: that path runs on CUDA in tests/core/test_timing_tier.py's GPU tests.
READS_VALUES = {("positional_encodings", "shaw")}
PATHS = [(unit, path) for unit in units.all_units() for path in unit.rubric.TIMED_PATHS
         if (unit.name, path.name) not in READS_VALUES]


def _draw_on_meta(dtype):
    def draw(*shape, dtype=dtype):
        return torch.empty(shape, dtype=dtype, device="meta")
    return draw


@pytest.mark.parametrize("unit,path", PATHS, ids=[f"{unit.name}-{path.name}" for unit, path in PATHS])
@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 3), heads=st.integers(1, 6), length=st.integers(1, 40), half_head_dim=st.integers(1, 8),
       dtype=st.sampled_from([torch.float32, torch.bfloat16]))
def test_a_timed_path_of_the_reference_runs_on_the_inputs_device(unit, path, batch, heads, length, half_head_dim,
                                                                  dtype):
    spec = {"path": path.name, "device": "meta", "dtype": str(dtype).removeprefix("torch."), "batch": batch,
            "heads": heads, "length": length, "head_dim": 2 * half_head_dim, **dict(path.settings)}
    reference = vars(unit.reference)
    inputs = unit.job.timing_inputs(spec, _draw_on_meta(dtype))
    scores = unit.job.score_path(reference, spec)(*inputs)
    assert scores.device.type == "meta", f"{unit.name}'s {path.name} path returned a tensor on {scores.device}"
    assert tuple(scores.shape) == (batch, heads, length, length)
