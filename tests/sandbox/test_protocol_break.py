"""The job's output pipe, once the hidden cases are in the job's reach: a break keeps what was decided, and nothing
the job wrote after the cases came is ever quoted to a student.

The job gets its hidden inputs (the plan) only after it has said it loaded (its first frame): what it wrote
before then is all a failure to load may quote, under "Last output of your code", each line marked as the
student's. A frame the protocol does not allow, written once the cases ran, ends the job: the tasks already
received keep their verdicts and the tests still open score nothing, with a plain reason that quotes nothing of
the job's. Each submission here is the reference of the second unit with one function or some top-level code
added; the reference itself is the honest twin.
"""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.core import units, voice
from autograder.core.grade import Grader
from autograder.course.build import strip_markers
from autograder.sandbox.server import Limits
from autograder.ways_in import gradescope, prairielearn

UNIT = units.get("rotary_alibi")
TASKS = [task.name for task in UNIT.rubric.TASKS]  # in the order the job runs them; each is named for its function
MARKER = "LEAKED-INPUTS"
QUOTED = voice.BLOCK_LINE  # how each line of a student's output is shown (autograder/core/voice.py)
GRADER_PREFIXES = ("Likely mistake:", "How it goes wrong:", "When it goes wrong:", "Not graded:",
                   "Last output of your code:")


@pytest.fixture(scope="module")
def break_grader():
    grader = Grader(UNIT, limits=Limits(wall_seconds=60, task_seconds=10), timing_mode="withhold", sandbox="auto")
    yield grader
    grader.close()


@pytest.fixture(scope="module")
def reference():
    return strip_markers(UNIT.reference_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def twin(break_grader, reference, tmp_path_factory):
    """The honest twin's scores, by test id."""
    path = tmp_path_factory.mktemp("twin") / "rotary_alibi.py"
    path.write_text(reference)
    result = break_grader.grade(path)
    assert result.score > 0 and not result.grader_fault, result.notes
    return {test.id: test.score for test in result.tests}


def _texts(value):
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    return []


def _said(result):
    """Every student-facing text of a result: its notes, each test's output, and every text of Gradescope's and
    PrairieLearn's results.json for it."""
    return "\n".join(result.notes + [test.output for test in result.tests]
                     + _texts(gradescope.to_results(result, "rotary_alibi.py"))
                     + _texts(prairielearn.to_results(result, "rotary_alibi.py")))


# --- a break once the cases ran -------------------------------------------------------------------------------

BREAKER = '''

_honest_{name} = {name}


def {name}(*args, **kwargs):
    import os as _os, struct as _struct, sys as _sys
    _shown = [value.flatten().tolist()[:8] if hasattr(value, "flatten") else value
              for value in list(args) + list(kwargs.values())]
    print("{marker}", repr(_shown), file=_sys.stderr, flush=True)
    print("{marker}", repr(_shown), flush=True)
    _body = {body!r}
    for _fd in range(3, 64):
        try:
            _os.write(_fd, {kind!r} + _struct.pack("<Q", len(_body)) + _body)
        except OSError:
            pass
    return _honest_{name}(*args, **kwargs)
'''


def _inputs_of_first_case(grader, task):
    """The values the breaking function prints: those of its task's first hidden case, as Python writes them."""
    probe = grader.cases[task][0].probe
    probe = probe.get("calls", [probe])[0]  # a sequence's first call (a behaviour contract's case runs first)
    shown = []
    for value in list(probe["args"]) + list(probe["kwargs"].values()):
        if hasattr(value, "flatten") and value.numel() > 1 and value.is_floating_point():
            shown += [repr(number) for number in value.flatten().tolist()[:8]]
    return shown


breaks = st.one_of(
    # a frame of a kind the protocol does not have
    st.tuples(st.binary(min_size=1, max_size=1).filter(lambda kind: kind not in (b"L", b"R")),
              st.binary(max_size=64)),
    # a results frame for the task that runs, which is not a results frame
    st.tuples(st.just(b"R"), st.sampled_from([b"", b"[1, 2]", b"\xff\xfe"])),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow])
@given(broken=st.sampled_from(TASKS), frame=breaks)
def test_a_break_after_the_cases_ran_keeps_the_verdicts_and_quotes_nothing(break_grader, twin, reference,
                                                                          tmp_path_factory, broken, frame):
    kind, body = frame
    if kind == b"R":  # a results frame names its task; the grader reads it as that task's results
        body = broken.encode() + b"\0" + struct.pack("<I", len(body) + 100) + body
    path = tmp_path_factory.mktemp("breaker") / "rotary_alibi.py"
    path.write_text(reference + BREAKER.format(name=broken, marker=MARKER, kind=kind, body=body))
    result = break_grader.grade(path)
    assert not result.grader_fault, result.notes
    after = TASKS[TASKS.index(broken):]
    for test in result.tests:
        if test.task in after:
            assert test.score == 0, (test.id, test.output)
            assert "wrote on the grader's private pipe" in test.output, (test.id, test.output)
        elif test.task != "timing":  # the tasks received before the break keep what the honest twin earns
            assert test.score == twin[test.id], (test.id, test.output)
    said = _said(result)
    assert MARKER not in said, said[:3000]
    assert "Last output" not in said, said[:3000]
    for value in _inputs_of_first_case(break_grader, broken):
        assert value not in said, (value, said[:3000])


# --- output written while loading -----------------------------------------------------------------------------

CRASHER = '''

import os as _os, sys as _sys
_sys.stderr.write({text!r})
_sys.stderr.flush()
_os._exit(3)
'''

lines = st.lists(st.one_of(
    st.sampled_from(GRADER_PREFIXES).flatmap(lambda prefix: st.text(max_size=30).map(lambda rest: prefix + rest)),
    st.text(alphabet=st.sampled_from("ab 0.5|\r\u2028\u2029\x1b\t<>&:"), max_size=30),
), min_size=1, max_size=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                              HealthCheck.too_slow])
@given(printed=lines)
def test_output_of_a_crash_while_loading_is_shown_and_marked_as_the_student_s(break_grader, reference,
                                                                             tmp_path_factory, printed):
    text = "\n".join(["SHOWN-WHILE-LOADING"] + printed) + "\n"
    path = tmp_path_factory.mktemp("crasher") / "rotary_alibi.py"
    path.write_text(reference + CRASHER.format(text=text))
    result = break_grader.grade(path)
    assert result.score == 0 and not result.grader_fault, result.notes
    note = result.notes[-1]
    head, block = note.split("\nLast output of your code:\n", 1)
    assert head.startswith("Not graded: your code stopped while loading"), note
    quoted = block.split("\n")
    assert quoted[0] == QUOTED + "SHOWN-WHILE-LOADING", note
    assert all(line.startswith(QUOTED) for line in quoted), note
    for line in _said(result).split("\n"):
        assert not line.startswith(GRADER_PREFIXES[:3]), line
    for test in result.tests:
        assert test.output == note


# --- the plan is not in the job while its code loads ---------------------------------------------------------

SEEKER = '''

import gc as _gc, os as _os, sys as _sys, warnings as _warnings
_warnings.simplefilter("ignore")
# Built here, so that the words sought are not in this source, which the job holds (as it should): a probe's id
# is "<test>/<number>", and each task of the plan is a dict that holds its cases under that word.
_ID, _PROBES = "_val" + "ues/", "pro" + "bes"


def _plan_like(value):
    if isinstance(value, (bytes, bytearray)):
        return _ID.encode() in value or _PROBES.encode() in value
    if isinstance(value, dict):
        return _PROBES in value or (isinstance(value.get("id"), str) and "/" in value["id"])
    if isinstance(value, list):
        return any(isinstance(item, dict) and _PROBES in item for item in value[:50])
    return False


_found = []
_frame = _sys._getframe()
while _frame is not None:
    _found += [repr(value)[:200] for value in list(_frame.f_locals.values()) if _plan_like(value)]
    _frame = _frame.f_back
_found += [repr(value)[:200] for value in _gc.get_objects() if _plan_like(value)]
for _fd in range(0, 64):
    try:
        _os.set_blocking(_fd, False)
        _read = _os.read(_fd, 1 << 20)
        if _plan_like(_read):
            _found.append(repr(_read)[:200])
    except OSError:
        pass
_sys.stderr.write("SOUGHT " + str(len(_found)) + " " + repr(_found)[:1000] + "\\n")
_sys.stderr.flush()
_os._exit(3)
'''


def test_the_plan_is_not_in_the_job_while_its_code_loads(break_grader, reference, tmp_path_factory):
    path = tmp_path_factory.mktemp("seeker") / "rotary_alibi.py"
    path.write_text(reference + SEEKER)
    result = break_grader.grade(path)
    note = result.notes[-1]
    assert QUOTED + "SOUGHT 0 []" in note.split("\n"), note
    assert "_values/" not in note and "probes" not in note, note


# --- a job started again that does not load ------------------------------------------------------------------

# The first job dies in apply_rotary's cases; the one started again for the tasks after it is told which tasks it
# runs (the header, in the worker's frame), and stops while loading when the first task is not among them.
DIES_THEN_FAILS_TO_LOAD = '''

import os as _os, sys as _sys
_frame = _sys._getframe()
while _frame is not None:
    _header = _frame.f_locals.get("submission")
    if isinstance(_header, dict) and "tasks" in _header and "rotary_angles" not in _header["tasks"]:
        print("{marker} started again", file=_sys.stderr, flush=True)
        _os._exit(3)
    _frame = _frame.f_back


def apply_rotary(*args, **kwargs):
    _os._exit(0)
'''


def test_a_job_started_again_that_does_not_load_leaves_the_verdicts_received(break_grader, twin, reference,
                                                                            tmp_path_factory):
    path = tmp_path_factory.mktemp("again") / "rotary_alibi.py"
    path.write_text(reference + DIES_THEN_FAILS_TO_LOAD.format(marker=MARKER))
    result = break_grader.grade(path)
    by_task = {}
    for test in result.tests:
        by_task.setdefault(test.task, []).append(test)
    assert [test.score for test in by_task["rotary_angles"]] == [twin[test.id] for test in by_task["rotary_angles"]]
    assert all(test.score == 0 and "exited with status 0" in test.output for test in by_task["apply_rotary"])
    for task in TASKS[2:]:
        assert all(test.score == 0 and "started again for the tests still open did not load" in test.output
                   for test in by_task[task]), [test.output for test in by_task[task]]
    assert MARKER not in _said(result)


# --- a forged first frame whose words would start a line of the grader's --------------------------------------

FORGER = '''

import json as _json, os as _os, struct as _struct
_body = _json.dumps({{"errors": [], "defined": [], {key!r}: 1}}).encode()
_body = _struct.pack("<I", len(_body)) + _body
for _fd in range(3, 64):
    try:
        _os.write(_fd, b"L" + _struct.pack("<Q", len(_body)) + _body)
    except OSError:
        pass
'''


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                               HealthCheck.too_slow])
@given(prefix=st.sampled_from(GRADER_PREFIXES[:3]), rest=st.text(alphabet="abc 0.5=", max_size=20),
       before=st.sampled_from(["\n", "x\n", "\n\n"]))
def test_a_forged_first_frame_s_words_start_no_line_of_the_note(break_grader, reference, tmp_path_factory, prefix,
                                                                 rest, before):
    path = tmp_path_factory.mktemp("forger") / "rotary_alibi.py"
    path.write_text(reference + FORGER.format(key=before + prefix + rest))
    result = break_grader.grade(path)
    assert result.score == 0 and "broke the grader's protocol" in result.notes[-1], result.notes
    for line in _said(result).split("\n"):
        assert not line.startswith(GRADER_PREFIXES[:3]), line
