"""The third unit, graded by the same grader: the reference full, the stubs zero, the second unit's rotation given
(the grader runs its reference whatever the student's file holds under its name), each mistake of issue 26 losing
points in its own task only and named, and a loop over positions losing the timing points.

Each mistake is the finished reference with one line changed, as the unit's samples are.
"""

import pytest
import torch

from autograder.core import units
from autograder.core.grade import Grader
from autograder.course.build import make_stub

UNIT = units.get("long_context")

# (name, task, the reference's line, the student's, words the feedback must say): the mistakes of issue 26 that the
# unit's samples (samples.py, graded by check-unit) do not already make.
MISTAKES = (
    ("ntk_pair_index_in_the_exponent", "ntk_inverse_frequencies",
     "two_i = torch.arange(0, head_dim, 2, dtype=torch.float64)  # (dh/2,): 0, 2, 4, ...",
     "two_i = torch.arange(head_dim // 2, dtype=torch.float64)", "i/dh where pair i needs 2i/dh"),
    ("ntk_base_times_factor", "ntk_inverse_frequencies",
     "scaled_base = base * factor ** (head_dim / (head_dim - 2))", "scaled_base = base * factor",
     "multiplied by the factor itself"),
    ("yarn_interpolates_every_pair", "yarn_inverse_frequencies",
     "return ((1 - ramp) * theta + ramp * theta / factor).to(torch.float32)  # (dh/2,)",
     "return (theta / factor).to(torch.float32)", "as position interpolation divides the positions"),
    ("yarn_ramp_over_dimensions", "yarn_inverse_frequencies",
     "ramp = ((pair - low) / (high - low)).clamp(0, 1)", "ramp = ((2 * pair - low) / (high - low)).clamp(0, 1)",
     "the dimension 2i"),
    ("llama3_every_pair_divided", "llama3_inverse_frequencies",
     "return torch.where(wavelength < trained_length / high_freq_factor, theta, scaled).to(torch.float32)",
     "return (theta / factor).to(torch.float32)", "as position interpolation divides the positions"),
    ("scores_without_the_temperature", "scaled_rope_scores",
     "return (q_turned * (attention_scale / math.sqrt(head_dim))) @ k_turned.transpose(-2, -1)",
     "return (q_turned / math.sqrt(head_dim)) @ k_turned.transpose(-2, -1)", "applied to the values"),
    ("scores_interleaved_pairs", "scaled_rope_scores",
     "pairs = torch.stack(x.chunk(2, dim=-1), dim=-1).transpose(-3, -2)",
     "pairs = x.unflatten(-1, (-1, 2)).transpose(-3, -2)", "the interleaved layout"),
)

# What a student's file may hold in place of the given code: their own apply_rotary from the second unit, wrong here.
OWN_ROTATION = '''

def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    return x.clone()  # forgot to turn: the grader must not charge this unit for it
'''

# scaled_rope_scores with a Python loop over the positions: right, and slow.
LOOPING = '''

def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    head_dim = q.shape[-1]
    if head_dim % 2 != 0 or k.shape[-1] != head_dim:
        raise ValueError("q and k must share an even dh")
    if tuple(inverse_frequencies.shape) != (head_dim // 2,):
        raise ValueError("inverse_frequencies must be (dh/2,)")
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)
    for x, positions in ((q, positions_q), (k, positions_k)):
        if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
            raise ValueError("one position per row")
    theta = inverse_frequencies.to(device=q.device, dtype=torch.float64)

    def turned(x, positions):
        rows = []
        for row in range(x.shape[-2]):  # one position at a time
            angle = positions[..., row].to(torch.float64)[..., None] * theta
            a, b = x[..., row, :].to(torch.float64).chunk(2, dim=-1)
            rows.append(torch.cat((a * angle.cos() - b * angle.sin(), a * angle.sin() + b * angle.cos()), dim=-1))
        return torch.stack(rows, dim=-2).to(x.dtype)

    scale = attention_scale / math.sqrt(head_dim)
    return (turned(q, positions_q) * scale) @ turned(k, positions_k).transpose(-2, -1)
'''


@pytest.fixture(scope="module")
def reference():
    return UNIT.finished_reference


def _changed(reference, old, new):
    assert reference.count(old) == 1, old
    return reference.replace(old, new)


@pytest.fixture(scope="module")
def graded(reference, tmp_path_factory):
    folder = tmp_path_factory.mktemp("long_context")
    files = {"reference": reference, "stubs": make_stub(UNIT.reference_path.read_text(encoding="utf-8"), UNIT),
             "own_rotation": reference + OWN_ROTATION}
    files.update({name: _changed(reference, old, new) for name, _, old, new, _ in MISTAKES})
    for name, text in files.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    grader = Grader(UNIT, sandbox="auto", timing_mode="give")  # the timing tier has a test of its own below
    try:
        results = grader.grade_many([folder / f"{name}.py" for name in files], jobs=2)
    finally:
        grader.close()
    return {result.name: result for result in results}


def test_the_reference_scores_full_marks_and_the_stubs_zero(graded):
    result = graded["reference"]
    assert result.unit == "long_context" and result.max_score == 100
    assert {test.id: test.output for test in result.tests if not test.passed} == {}
    stubs = graded["stubs"]
    assert stubs.score == 0
    assert all("not implemented yet" in test.output for test in stubs.tests if test.task != "timing")


def test_the_students_file_holds_the_second_units_rotation_not_an_import(reference):
    stub = make_stub(UNIT.reference_path.read_text(encoding="utf-8"), UNIT)
    for text in (reference, stub):
        assert "solutions" not in text and "\ndef apply_rotary(" in text and "\ndef rotary_angles(" in text
    assert [chunk["label"] for chunk in UNIT.given_chunks] == ["the given code of rotary_alibi"]


def test_the_grader_runs_the_second_units_reference_whatever_the_file_holds(graded):
    result = graded["own_rotation"]
    assert {test.id: test.output for test in result.tests if not test.passed} == {}


def test_nbgrader_s_hidden_check_runs_the_second_units_reference_too(reference):
    from autograder.ways_in import nbgrader_bridge

    namespace = {"__name__": "notebook"}
    exec(compile(reference + OWN_ROTATION, "notebook", "exec"), namespace)
    assert nbgrader_bridge.run_test("scaled_rope_scores_values", namespace).passed


@pytest.mark.parametrize("name, task, says", [(name, task, says) for name, task, _, _, says in MISTAKES],
                         ids=[mistake[0] for mistake in MISTAKES])
def test_each_mistake_loses_points_in_its_own_task_only_and_is_named(graded, name, task, says):
    failed = [test for test in graded[name].tests if not test.passed and test.task != "timing"]
    assert failed and {test.task for test in failed} == {task}, [(test.id, test.output) for test in failed]
    feedback = "\n".join(test.output for test in failed)
    assert says in feedback, feedback


def test_the_score_path_is_timed_and_a_loop_over_positions_gets_no_timing_points(reference, tmp_path):
    files = {"reference": reference, "looping": reference + LOOPING}
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
    grader = Grader(UNIT, sandbox="auto", timing_mode="cpu")
    try:
        results = {result.name: result for result in grader.grade_many([tmp_path / f"{name}.py" for name in files])}
    finally:
        grader.close()
    timed = {test.id: test for test in results["reference"].tests if test.task == "timing"}
    assert set(timed) == {"scaled_rope_speed"} and timed["scaled_rope_speed"].score > 0, \
        timed["scaled_rope_speed"].output
    looping = {test.id: test for test in results["looping"].tests}
    assert all(test.passed for test in looping.values() if test.task != "timing"), \
        [(test.id, test.output) for test in looping.values() if not test.passed]
    assert looping["scaled_rope_speed"].score == 0 and "Python loop" in looping["scaled_rope_speed"].output, \
        looping["scaled_rope_speed"].output


def test_the_reference_agrees_with_its_worked_examples():
    from solutions import long_context as ref

    torch.testing.assert_close(ref.ntk_inverse_frequencies(4, factor=4.0), torch.tensor([1.0, 0.0025]))
    torch.testing.assert_close(ref.yarn_inverse_frequencies(8, factor=4.0, trained_length=2048),
                               torch.tensor([1.0, 0.1, 0.00625, 0.00025]))
    torch.testing.assert_close(ref.llama3_inverse_frequencies(8),
                               torch.tensor([1.0, 0.037606, 0.00052485, 6.6479e-06]), rtol=1e-4, atol=0)
    assert abs(ref.yarn_attention_scale(4.0) - 1.296477) < 1e-6
