"""Invariant 2, the protocol side: whatever a job sends back is data, checked before use, never an exception.

The student's code runs in the job and can write anything to the worker's pipes. Every frame is decoded by
autograder/sandbox/protocol.py into plain data and plain tensors and checked against its schema; anything else is a
ProtocolError, which the grader turns into that submission's row. These tests throw generated frames at the
decoder, round-trip generated values through the worker's encoder, and let real submissions write generated
bytes to every descriptor they hold.
"""

import json
import struct
import sys

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from autograder.sandbox import protocol
from autograder.units.positional_encodings import rubric
from autograder.course.build import ROOT
from autograder.intake.inert import is_inert

sys.path.insert(0, str(ROOT / "autograder" / "sandbox"))
import worker  # noqa: E402  (the job's side, as the sandbox runs it: a file of its own)
from conftest import UNIT

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64]


@st.composite
def tensors(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    return (torch.randn(shape, dtype=torch.float64) * 10).to(dtype)


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60), st.floats(allow_nan=False), texts, tensors())
values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=20)


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return type(b) is torch.Tensor and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, str):
        return isinstance(b, str) and is_inert(b)  # text comes back inert, and otherwise as it was
    return a == b


@settings(max_examples=200, deadline=None)
@given(values)
def test_what_the_worker_packs_the_grader_unpacks_as_plain_data(value):
    back = protocol.unpack(worker.pack(value))
    assert _same(value, back)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_a_protocol_error_or_plain_data(data):
    for decode in (protocol.unpack, protocol.loaded, lambda d: protocol.task_results(d, {"x/1": "call"}),
                   lambda d: protocol.json_line(d, protocol.KEEPER, "a line")):
        try:
            decode(data)
        except protocol.ProtocolError:
            pass


@st.composite
def forged_frames(draw):
    """A frame with a well-formed length prefix and a header that is valid JSON, with hostile content."""
    header = draw(st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts,
                  st.fixed_dictionaries({"$tensor": st.lists(st.one_of(st.integers(-5, 2**40), texts,
                                                                       st.lists(st.integers(-3, 2**33), max_size=9)),
                                                             max_size=5)})),
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
        max_leaves=12))
    body = json.dumps(header).encode()
    tail = draw(st.binary(max_size=64))
    return struct.pack("<I", len(body)) + body + tail


@settings(max_examples=300, deadline=None)
@given(forged_frames())
@example(b'\x1a\x00\x00\x00{"$tensor": [[], 0, 0, 0]}')  # found by this test: a dtype that is a list
def test_forged_frames_are_refused_by_the_schema_never_by_an_exception(data):
    probes = {"sinusoidal_values/1": "call", "learned_add/1": "module"}
    for decode in (protocol.loaded, lambda d: protocol.task_results(d, probes)):
        try:
            value = decode(data)
        except protocol.ProtocolError:
            continue
        assert isinstance(value, dict)


def test_a_deep_header_is_refused_before_json_recurses():
    body = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(protocol.ProtocolError, match="nested"):
        protocol.unpack(struct.pack("<I", len(body)) + body)


def test_a_tensor_claiming_bytes_beyond_the_frame_is_refused():
    body = json.dumps({"$tensor": ["float32", [1000, 1000], 0, 4_000_000]}).encode()
    with pytest.raises(protocol.ProtocolError, match="outside the frame"):
        protocol.unpack(struct.pack("<I", len(body)) + body + b"\0" * 16)


def test_a_tensor_whose_size_does_not_match_its_shape_is_refused():
    body = json.dumps({"$tensor": ["float32", [3], 0, 8]}).encode()
    with pytest.raises(protocol.ProtocolError, match="shape"):
        protocol.unpack(struct.pack("<I", len(body)) + body + b"\0" * 8)


def test_text_from_a_job_arrives_inert():
    report = protocol.loaded(worker.pack({"errors": [{"type": "E\x1b]0;owned\x07", "mro": ["E"], "chunk": "c",
                                                       "message": "\r100/100 all tests pass\u202e", "where": ""}],
                                          "defined": []}))
    error = report["errors"][0]
    assert is_inert(error["type"]) and is_inert(error["message"])
    assert "\\x1b" in error["type"] and "\\r" in error["message"]


# --- through a real job: a submission that writes to every descriptor it holds --------------------------------

WRITER = '''
import os as _os

def _garbage():
    return {payload!r}

for _fd in range(3, 64):
    try:
        _os.write(_fd, _garbage())
    except OSError:
        pass
'''


@pytest.fixture(scope="module")
def protocol_grader():
    from autograder.core.grade import Grader
    from autograder.sandbox.server import Limits

    grader = Grader(UNIT, limits=Limits(wall_seconds=20, task_seconds=5), timing_mode="withhold", sandbox="auto")
    yield grader
    grader.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                               HealthCheck.too_slow])
@given(payload=st.one_of(st.binary(min_size=1, max_size=200), forged_frames().map(lambda body: b"L" + struct.pack(
    "<Q", len(body)) + body), forged_frames().map(lambda body: b"R" + struct.pack("<Q", len(body) + 11)
                                                   + b"sinusoidal\0" + body)))
def test_a_submission_writing_to_the_grader_s_pipes_gets_a_row_and_no_points(protocol_grader, tmp_path_factory,
                                                                           stub_text, payload):
    path = tmp_path_factory.mktemp("writer") / "writer.py"
    path.write_text(stub_text + WRITER.format(payload=payload))
    result = protocol_grader.grade(path)
    assert [test.id for test in result.tests] == [test.id for test in rubric.TESTS]
    assert result.score == 0
    assert not result.grader_fault, [test.output for test in result.tests][:2]


# --- a reply larger than any correct answer (issue 36, point 6) -----------------------------------------------

# The reference, with one task's function returning, on its first call, a tensor of ``elements`` float32 zeros: a
# results frame far larger than any correct answer of that task (the largest honest one is under 2 MB).
FLOODS = '''
import torch as _torch

_honest_{name} = {name}
_flooded = []


def {name}(*args, **kwargs):
    if not _flooded:
        _flooded.append(True)
        return _torch.zeros({elements})
    return _honest_{name}(*args, **kwargs)
'''
FLOODED = {"sinusoidal": "sinusoidal_table", "relative_positions": "clipped_relative_positions",
           "t5_bias": "t5_bias", "biased_scores": "biased_scores"}


def _peak_rss_since_restart():
    """This process's memory high-water mark in bytes (VmHWM), the grader being this process."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow])
@given(task=st.sampled_from(sorted(FLOODED)), megabytes=st.integers(40, 240))
def test_a_reply_larger_than_any_correct_answer_loses_its_task_and_never_the_grader_s_memory(
        protocol_grader, tmp_path_factory, reference_text, task, megabytes):
    """Before: a results frame was bounded only by the job's 256 MiB in all, and was read whole (then copied and
    decoded) before anything looked at its size: a function that returned a 240 MB tensor made the grader buffer
    it all. Now the frame's header is checked against the most one reply may hold before its body is read: that
    task loses its tests with a message that says why, every other task keeps the reference's verdicts, and the
    grader's memory grows by far less than the reply."""
    from autograder.sandbox import server

    path = tmp_path_factory.mktemp("flood") / "flood.py"
    path.write_text(reference_text + FLOODS.format(name=FLOODED[task], elements=megabytes * 2**20 // 4))
    with open("/proc/self/clear_refs", "w") as handle:  # restart this process's high-water mark
        handle.write("5")
    before = _peak_rss_since_restart()
    result = protocol_grader.grade(path)
    grown = _peak_rss_since_restart() - before
    assert grown < min(megabytes * 2**20, getattr(server, "REPLY_BYTES", 32 * 2**20)) // 2, \
        f"the grader's memory grew by {grown / 2**20:.0f} MiB for a reply of {megabytes} MiB"
    for test in result.tests:
        if test.task == task:
            assert test.score == 0 and "larger than any correct answer" in test.output, (test.id, test.output)
        elif test.task != "timing":
            assert test.score == test.max_score, (test.id, test.output)
    assert not result.grader_fault
