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

from autograder.core import timing, units
from autograder.sandbox import limits, worker

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
    # The same call on CPU inputs of the same shapes: the shape does not depend on where the inputs are (a score
    # path's output is (B, H, L, L) in the first units, (B * windows, H, N, N) in the fourth).
    on_cpu = unit.job.score_path(reference, spec)(*(torch.randn(tuple(tensor.shape)).to(tensor.dtype)
                                                   for tensor in inputs))
    assert on_cpu.device.type == "cpu" and tuple(scores.shape) == tuple(on_cpu.shape)


TIMED = [(unit, path) for unit in units.all_units() for path in unit.rubric.TIMED_PATHS]


@pytest.mark.parametrize("device", sorted(limits.TIMING_SIZES))
@pytest.mark.parametrize("unit,path", TIMED, ids=[f"{unit.name}-{path.name}" for unit, path in TIMED])
def test_the_pool_of_a_timed_path_holds_every_input_it_draws_at_every_length(unit, path, device):
    """The pool a timing job cuts each call's inputs from is sized by what the unit's ``timing_inputs`` draws at the
    spec's length (the longest of the calls), not by a (B, H, L, dh) shape the core would assume: the fourth unit
    draws windows of patches, (B * windows, H, N, dh), more numbers than B * H * L * dh. Every call the tier makes
    (the timed lengths, and the counted ones up to TIMING_COUNT_LENGTHS' longest) draws from it, on meta tensors."""
    sizes = limits.TIMING_SIZES[device]
    for longest in (sizes["length"], max(limits.TIMING_COUNT_LENGTHS)):
        spec = {"path": path.name, "device": "meta", "dtype": "float32", "batch": sizes["batch"],
                "heads": sizes["heads"], "length": longest, "head_dim": sizes["head_dim"], **dict(path.settings)}
        pool = torch.empty(worker._SANDBOX["pool_size"](torch, unit.job, spec), device="meta")
        for length in (*limits.TIMING_COUNT_LENGTHS, *timing.timed_range(spec)):
            if length <= longest:
                drawn = unit.job.timing_inputs({**spec, "length": length},
                                               worker._SANDBOX["Draw"](pool, length, "meta", torch.float32))
                # room for POOL_FACTOR inputs of the largest's size: each draw starts at an offset of its own
                largest = max(tensor.numel() for tensor in drawn)
                assert pool.numel() >= worker._SANDBOX["POOL_FACTOR"] * largest, (length, largest, pool.numel())
