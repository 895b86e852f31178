"""Functions that take ``device=`` are run on the ``meta`` device, so that one which ignores it is caught on a
machine without a GPU (issue 24, item 2).

A probe passes the device as {"__device__": "meta"} (core/cases.device_arg), which the job turns into
torch.device("meta"). A meta tensor holds no data: the job sends its dtype, shape and device only
(worker._encode), and core/cases.device_check checks type, then device, then shape, then dtype.
"""

import sys

import pytest
import torch
from hypothesis import given, settings, strategies as st

from autograder.core import units
from autograder.core.cases import Returned, build_cases, computed_on_the_cpu, device_arg, device_check
from autograder.course.build import ROOT
from autograder.sandbox import protocol
from solutions import positional_encodings, rotary_alibi

sys.path.insert(0, str(ROOT / "autograder" / "sandbox"))
from conftest import correctness_grader, graded_with  # noqa: E402
import worker  # noqa: E402  (the job's side, as the sandbox runs it: a file of its own)

FIRST = units.get("positional_encodings")
SECOND = units.get("rotary_alibi")

# The table built on the CPU whatever device was asked for.
SINUSOIDAL_ON_THE_CPU = '''

_reference_sinusoidal_table = sinusoidal_table


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    return _reference_sinusoidal_table(num_positions, d_model, base, dtype=dtype)
'''

ON_THE_CPU = {  # (unit, module, function name, the same function with device= ignored)
    "sinusoidal": (FIRST, positional_encodings, "sinusoidal_table",
                   lambda n, d, base=10000.0, *, device=None, dtype=torch.float32:
                   positional_encodings.sinusoidal_table(n, d, base, dtype=dtype)),
    "relative_positions": (FIRST, positional_encodings, "clipped_relative_positions",
                           lambda lq, lk, k, *, device=None: positional_encodings.clipped_relative_positions(lq, lk, k)),
    "alibi_slopes": (SECOND, rotary_alibi, "alibi_slopes",
                     lambda n, *, device=None: rotary_alibi.alibi_slopes(n)),
}


def _outcome(namespace, probe, unit=None):
    """What the job sends back for ``probe`` run on ``namespace``'s functions, as the grader reads it (with ``unit``'s
    stand-ins where the probe swaps a helper for one)."""
    job = worker._unit_code({"unit_code": unit.job_source}) if unit is not None else None
    outcome = worker.run_probe(namespace, dict(probe), [], job)
    return protocol.task_results(worker.pack({"p": outcome}), {"p": "call"})["p"]


def _meta_cases(unit, task):
    return [case for case in build_cases(unit)[task]
            if any(value == device_arg("meta") for value in case.probe.get("kwargs", {}).values())]


# --- the plumbing -----------------------------------------------------------------------------------------------

def test_a_device_travels_in_a_probe_and_is_a_torch_device_in_the_job():
    assert worker._decode_argument({"__device__": "meta"}) == torch.device("meta")
    assert worker._decode_argument([{"__device__": "cpu"}, ({"__dtype__": "float64"},)]) == [
        torch.device("cpu"), (torch.float64,)]


def test_a_meta_tensor_is_sent_without_data_and_read_back_as_its_description():
    value = worker._encode(torch.empty(7, 4, dtype=torch.float64, device="meta"))
    assert value["device"] == "meta" and value["shape"] == [7, 4] and value["dtype"] == "float64"
    assert "tensor" not in value
    checked = protocol.task_results(worker.pack({"p": {"value": value}}), {"p": "call"})["p"]
    assert checked["value"]["shape"] == [7, 4] and checked["value"]["dtype"] == "float64"


@pytest.mark.parametrize("bad", [{"dtype": "object"}, {"shape": [-1]}, {"shape": [2**31]}, {"shape": [1] * 9},
                                 {"shape": [1.5]}, {"device": "x" * 65}, {"extra": 1}])
def test_the_protocol_refuses_a_description_out_of_its_schema(bad):
    value = {**worker._encode(torch.empty(2, device="meta")), **bad}
    with pytest.raises(protocol.ProtocolError):
        protocol.task_results(worker.pack({"p": {"value": value}}), {"p": "call"})


def test_the_device_check_checks_type_then_device_then_shape_then_dtype():
    check = device_check("f(device=meta)", "meta", (3, 4), torch.float32)

    def value(device="meta", shape=(3, 4), dtype=torch.float32):
        return {"value": worker._encode(torch.empty(shape, dtype=dtype, device=device))}

    assert check(value()).passed
    assert "should be a torch.Tensor" in check({"value": {"type_name": "list", "repr": "[]"}}).message
    wrong_device = check(value("cpu", (4, 3), torch.float64)).message
    assert "returned a tensor on cpu, expected meta" in wrong_device and "device=" in wrong_device
    assert "shape" in check(value(shape=(4, 3), dtype=torch.float64)).message
    assert "dtype" in check(value(dtype=torch.float64)).message
    assert "raised" in check({"error": {"type": "RuntimeError", "mro": ["RuntimeError"], "message": "no",
                                        "where": ""}}).message
    assert "is not defined" in check({"missing": "f"}).message


def test_a_meta_tensor_where_data_is_wanted_is_told_apart_from_a_tensor():
    from autograder.core.cases import returned_value

    got = returned_value({"value": worker._encode(torch.empty(2, device="meta"))})
    assert isinstance(got, Returned) and "meta" in got.type_name


# --- the cases --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("task", sorted(ON_THE_CPU))
def test_each_task_with_a_device_argument_has_a_scored_meta_case_the_reference_passes(task):
    unit, module, name, _ = ON_THE_CPU[task]
    cases = _meta_cases(unit, task)
    assert [case.scored for case in cases] == [True], f"{task}: one scored meta case"
    assert "device=torch.device('meta')" in cases[0].label
    verdict = cases[0].check(_outcome({name: getattr(module, name)}, cases[0].probe))
    assert verdict.passed, verdict.message


@pytest.mark.parametrize("task", sorted(ON_THE_CPU))
def test_a_function_that_ignores_its_device_fails_its_meta_case_with_a_message_that_teaches(task):
    unit, _, name, on_the_cpu = ON_THE_CPU[task]
    case = _meta_cases(unit, task)[0]
    verdict = case.check(_outcome({name: on_the_cpu}, case.probe))
    assert not verdict.passed
    assert f"{case.label} returned a tensor on cpu, expected meta: build new tensors on the device asked for" \
           in verdict.message


@pytest.fixture(scope="module")
def first_grader():
    yield from correctness_grader(FIRST)  # the timing tier has tests of its own


def test_a_sinusoidal_table_that_ignores_device_loses_its_edge_cases_test(first_grader, tmp_path):
    by_id = graded_with(first_grader, FIRST, SINUSOIDAL_ON_THE_CPU, tmp_path)
    edge = by_id["sinusoidal_edge_cases"]
    assert edge.score == 0, edge.output
    assert "returned a tensor on cpu, expected meta: build new tensors on the device asked for, device=" \
           in edge.output
    for test in by_id.values():  # charged once: the other tests ask for no device
        if test.id != "sinusoidal_edge_cases" and test.task != "timing":
            assert test.score == test.max_score, (test.id, test.output)


# --- tasks that take tensors: the inputs on the meta device ----------------------------------------------------

def _alibi_bias_on_the_cpu(length_q, length_k, slopes, *, causal=True):
    distance = torch.arange(length_q)[:, None] - torch.arange(length_k)[None, :]  # on the CPU, whatever slopes are on
    distance = distance.clamp(min=0) if causal else distance.abs()
    return (slopes.reshape(-1, 1, 1) * (-distance).to(slopes.dtype)).unsqueeze(0)


def _apply_rotary_on_the_cpu(x, positions, base=10000.0, *, interleaved=True):
    return rotary_alibi.apply_rotary(x.cpu(), positions.cpu(), base, interleaved=interleaved)


def _rope_scores_on_the_cpu(q, k, **settings):
    return rotary_alibi.rope_scores(q.cpu(), k.cpu(), **settings)


def _t5_bias_on_the_cpu(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    grid = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]  # on the CPU, whatever the table is on
    buckets = positional_encodings.t5_relative_position_bucket(grid, bidirectional=bidirectional,
                                                               num_buckets=num_buckets, max_distance=max_distance)
    return bias_table.cpu()[buckets].permute(2, 0, 1).unsqueeze(0)


def _biased_scores_on_the_cpu(q, k, bias, *, scale=None):
    return positional_encodings.biased_scores(q.cpu(), k.cpu(), bias.cpu(), scale=scale)


WITH_TENSORS = {  # task: (unit, module, function name, the same function with its work moved to the CPU)
    "alibi_bias": (SECOND, rotary_alibi, "alibi_bias", _alibi_bias_on_the_cpu),
    "apply_rotary": (SECOND, rotary_alibi, "apply_rotary", _apply_rotary_on_the_cpu),
    "rope_scores": (SECOND, rotary_alibi, "rope_scores", _rope_scores_on_the_cpu),
    "t5_bias": (FIRST, positional_encodings, "t5_bias", _t5_bias_on_the_cpu),
    "biased_scores": (FIRST, positional_encodings, "biased_scores", _biased_scores_on_the_cpu),
}


def _meta_input_cases(unit, task):
    return [case for case in build_cases(unit)[task] if case.label.endswith(" on the meta device")]


@pytest.mark.parametrize("task", sorted(WITH_TENSORS))
def test_a_task_that_takes_tensors_is_run_on_meta_inputs_and_the_reference_passes(task):
    unit, module, name, _ = WITH_TENSORS[task]
    cases = _meta_input_cases(unit, task)
    assert cases and all(case.scored for case in cases), f"{task}: a scored case on meta inputs"
    namespace = {function: getattr(module, function) for function in unit.rubric.TASK_OF_FUNCTION}
    for case in cases:
        verdict = case.check(_outcome(namespace, case.probe, unit))
        assert verdict.passed, verdict.message


@pytest.mark.parametrize("task", sorted(WITH_TENSORS))
def test_work_done_on_the_cpu_whatever_the_inputs_are_on_fails_and_says_where(task):
    unit, module, name, on_the_cpu = WITH_TENSORS[task]
    namespace = {function: getattr(module, function) for function in unit.rubric.TASK_OF_FUNCTION}
    for case in _meta_input_cases(unit, task):
        verdict = case.check(_outcome({**namespace, name: on_the_cpu}, case.probe, unit))
        assert not verdict.passed
        assert "meta" in verdict.message and ("device" in verdict.message), verdict.message


# --- the expected shape and dtype, computed on the CPU -----------------------------------------------------------

# That building every unit's cases makes no operation on the meta device (none imports torch._dynamo) is checked
# in a fresh process by tests/core/test_grader_start.py.


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 4), max_size=3),
                          st.sampled_from([torch.float32, torch.float16, torch.float64, torch.int64, torch.bool]),
                          st.booleans()), max_size=4),
       st.sampled_from(["meta", torch.device("meta"), "cpu", torch.device("cpu"), "interleaved"]))
def test_computed_on_the_cpu_gives_meta_tensors_as_zeros_there_and_leaves_the_rest(tensors, device):
    given = [torch.empty(shape, dtype=dtype, device="meta" if on_meta else "cpu") for shape, dtype, on_meta in tensors]
    args, kwargs = computed_on_the_cpu(lambda *args, **kwargs: (args, kwargs), *given, device=device, other=device)
    for before, after in zip(given, args, strict=True):
        assert after.device.type == "cpu" and after.shape == before.shape and after.dtype == before.dtype
        assert after is before if not before.is_meta else not after.any()
    meta = device == "meta" or isinstance(device, torch.device) and device.type == "meta"
    assert kwargs == {"device": torch.device("cpu"), "other": torch.device("cpu")} if meta \
        else kwargs == {"device": device, "other": device}
