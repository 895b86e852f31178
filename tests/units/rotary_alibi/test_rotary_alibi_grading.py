"""The second unit, graded by the same grader: the reference full, the stubs zero, every correct formulation
full marks, every typical mistake losing points in its own task only, and named where the grader knows it.

The submissions are files of tests/submissions/rotary_alibi/: each defines one function, appended after the
reference so that it replaces the reference's.
"""

from pathlib import Path

import pytest
import torch

from autograder.core import units
from autograder.course.build import make_stub, strip_markers
from autograder.core.grade import Grader

UNIT = units.get("rotary_alibi")
FOLDER = Path(__file__).parents[2] / "submissions" / "rotary_alibi"
ALTERNATIVES = sorted((FOLDER / "alternatives").glob("*.py"))
MISTAKES = sorted((FOLDER / "mistakes").glob("*.py"))
# Mistakes the feedback names in so many words (the others are caught, and told where and how they go wrong).
NAMED = {
    "alibi_bias__distance_key_minus_query": "the other way (j - i)",
    "alibi_bias__future_minus_inf": "-inf",
    "alibi_bias__blind_minus_inf_future": "the future keys get -inf",  # named since infinities match exactly
    "alibi_bias__sign_reversed": "the sign is reversed",
    "alibi_bias__symmetric_when_causal": "|i - j| is used where causal=True",
    "alibi_slopes__next_power_truncated": "the next power of two",
    "alibi_slopes__power_of_two_rule_for_every_n": "used for every n",
    "alibi_slopes__powers_from_zero": "the powers start at 0",
    "apply_rotary__always_rotate_half": "rotate half is used where interleaved=True",
    "apply_rotary__clockwise": "turns the wrong way",
    "apply_rotary__layouts_swapped": "layout",
    "apply_rotary__positions_ignored": "positions passed in are ignored",
    "apply_rotary__writes_into_x": "in place",
    "rope_scores__keys_not_rotated": "keys are not rotated",
    "rope_scores__scale_forgotten": "no scale",
    "rope_scores__queries_last_by_default": "the queries default to the last Lq",
    "rotary_angles__exponent_sign_lost": "grow instead of shrink",
    "rotary_angles__i_over_head_dim": "i/dh where pair i needs 2i/dh",
    "scaled_positions__floor_division": "integer division",
    "scaled_positions__multiplied": "multiplied by the factor",
    # The blind set (files *__blind_*: written by someone who had not read the grader, each with the mistake it
    # makes in its first line; the names below are those mistakes).
    "alibi_bias__blind_abs_even_when_causal": "|i - j| is used where causal=True",
    "alibi_bias__blind_cache_offset_rows": "the last Lq of a square (Lk, Lk) bias",
    "alibi_bias__blind_i_j_swapped": "the other way (j - i)",
    "alibi_slopes__blind_extra_even_powers": "starting from the second ([1::2])",
    "alibi_slopes__blind_geometric_for_any_n": "used for every n",
    "alibi_slopes__blind_next_power_of_two": "the next power of two",
    "alibi_slopes__blind_starts_at_head_zero": "the powers start at 0",
    "apply_rotary__blind_clockwise": "turns the wrong way",
    "apply_rotary__blind_layouts_swapped": "rotate half is used where interleaved=True",
    "rope_scores__blind_cache_default_positions_q": "the queries default to the last Lq",
    "rope_scores__blind_ignores_positions_k": "positions_k is ignored",
    "rope_scores__blind_keys_always_interleaved": "different layouts",
    "rope_scores__blind_keys_reshaped_not_transposed": "made with reshape",
    "rope_scores__blind_keys_turned_backwards": "the keys turn the other way",
    "rotary_angles__blind_exponent_i_over_d": "i/dh where pair i needs 2i/dh",
    "rotary_angles__blind_positions_cast_to_long": "fractional positions are cut to whole numbers",
    # Named from the outcomes' form (autograder/core/form_slips.py).
    "scaled_positions__blind_keeps_half_dtype": "your result's dtype is `positions`'s dtype where it is floating, "
                                                "else float32",
    "scaled_positions__blind_nan_accepted": "where it should raise ValueError: for `factor` NaN",
    "scaled_positions__blind_rejects_factor_below_one": "raises ValueError where the reference returns a result: "
                                                        "for `factor` between 0 and 1",
    "rotary_angles__blind_sin_cos_swapped": "cos and sin are swapped",
    "alibi_bias__heads_last": "laid out (batch, query, key, head) where the reference's is (batch, head, query, key)",
    "alibi_bias__blind_heads_last": "laid out (batch, query, key, head) where the reference's is (batch, head, query, "
                                    "key)",
    "rotary_angles__repeated_to_head_dim": "the reference's values 2 times over along the pair axis",
    "rotary_angles__blind_repeated_to_head_dim": "the reference's values 2 times over along the pair axis",
    "scaled_positions__blind_floor_division": "integer division",
    "scaled_positions__blind_multiplies": "multiplied by the factor",
    # Named by the error model (autograder/core/mutants.py), each checked against the file's code.
    "alibi_bias__blind_no_batch_axis": "the step `.unsqueeze(...)` left out",
    "alibi_slopes__blind_float64_result": "torch.float64 where the formula uses torch.float32",
    "alibi_slopes__blind_negative_not_rejected": "no check `if num_heads <= 0: raise ...`",
    "rotary_angles__blind_odd_head_dim_accepted": "the condition `head_dim % 2 != 0` left out",
    "rope_scores__blind_scale_twice": "a factor squared (`scale`)",
    "rope_scores__blind_scale_as_divisor": "`1 / scale` in place of `scale`",
    "apply_rotary__blind_no_cast_back": "the result cast to float32",
    # Named from the outcomes' form (autograder/core/form_slips.py): x written into, and the values wrong where a
    # step reads a slice of x that an earlier step wrote (its .to() of the same dtype is x's own storage).
    "apply_rotary__blind_in_place": "your function writes into `x` in place",
}
# What a failure says when it names no mistake: where and how the output goes wrong, or what is wrong with its form.
TOLD = ("Likely mistake", "How it goes wrong", "When it goes wrong", "only the dtype differs", "only the shape differs",
        "should raise", " raised ", "in place")
# The rubric's decision: BLOOM's slope * j is accepted where it is equivalent (causal, under the mask), with a note
# that says why; without the mask it is not, and fails there.
# (The layout test's case without the mask shows the same mistake, named in the bidirectional test: charged once.)
ACCEPTED = {stem: ("BLOOM's form", {"alibi_bias_bidirectional"})
            for stem in ("alibi_bias__key_position_form", "alibi_bias__blind_bloom_key_position")}


@pytest.fixture(scope="module")
def unit_grader():
    grader = Grader(UNIT, sandbox="auto", timing_mode="give")  # the timing tier has tests of its own
    yield grader
    grader.close()


@pytest.fixture(scope="module")
def reference():
    return strip_markers(UNIT.reference_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graded(unit_grader, reference, tmp_path_factory):
    folder = tmp_path_factory.mktemp("rotary_alibi")
    paths = []
    for source in ALTERNATIVES + MISTAKES:
        path = folder / source.name
        path.write_text(reference + "\n\n" + source.read_text(encoding="utf-8"))
        paths.append(path)
    (folder / "reference.py").write_text(reference)
    (folder / "stubs.py").write_text(make_stub(UNIT.reference_path.read_text(encoding="utf-8"), UNIT))
    paths += [folder / "reference.py", folder / "stubs.py"]
    return {result.name: result for result in unit_grader.grade_many(paths, jobs=2)}


def test_the_reference_scores_full_marks(graded):
    result = graded["reference"]
    assert result.unit == "rotary_alibi" and result.max_score == UNIT.rubric.MAX_SCORE == 100
    assert [test.id for test in result.tests if not test.passed] == []


def test_the_stubs_score_zero_and_say_which_task_is_not_written(graded):
    result = graded["stubs"]
    assert result.score == 0
    for test in result.tests:
        if test.task != "timing":
            assert "not implemented yet" in test.output, test.id


def test_there_is_an_alternative_and_a_mistake_for_every_task():
    assert {path.name.split("__")[0] for path in ALTERNATIVES} == set(UNIT.rubric.TASK_NAMES)
    assert {path.name.split("__")[0] for path in MISTAKES} == set(UNIT.rubric.TASK_NAMES)


@pytest.mark.parametrize("path", ALTERNATIVES, ids=[path.stem for path in ALTERNATIVES])
def test_every_correct_formulation_scores_full_marks(graded, path):
    result = graded[path.stem]
    assert {test.id: test.output for test in result.tests if not test.passed} == {}


@pytest.mark.parametrize("path", MISTAKES, ids=[path.stem for path in MISTAKES])
def test_every_mistake_loses_points_in_its_own_task_only(graded, path):
    result = graded[path.stem]
    task = path.stem.split("__")[0]
    failed = [test for test in result.tests if not test.passed and test.task != "timing"]
    if path.stem in ACCEPTED:
        said, failing = ACCEPTED[path.stem]
        assert {test.id for test in failed} == failing
        notes = " ".join(test.output for test in result.tests if test.task == task and test.passed)
        assert said in notes and "causal mask" in notes
        return
    assert failed, "the mistake went unseen"
    assert {test.task for test in failed} == {task}, [test.id for test in failed]
    said = "\n".join(test.output for test in failed)
    if path.stem in NAMED:
        assert NAMED[path.stem] in said, said
    else:
        assert "Likely mistake" not in said, said  # a name where none was expected: a wrong one, or a new one to list
    assert any(words in failed[0].output for words in TOLD), failed[0].output


def test_a_class_of_the_second_unit_gets_its_own_grades_csv_and_summary_and_the_unit_is_told_by_the_code(
        tmp_path, reference):
    import csv
    import subprocess
    import sys

    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ana.py").write_text(reference)  # named after nobody's module: the functions it defines tell
    (folder / "ben.py").write_text(reference + "\n\n" + (FOLDER / "mistakes" / "rope_scores__keys_not_rotated.py")
                                   .read_text(encoding="utf-8"))
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(tmp_path / "out"),
                          "--without-gpu", "give", "--jobs", "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    with open(tmp_path / "out" / "grades.csv", newline="") as file:
        rows = {row["submission"]: row for row in csv.DictReader(file)}
    assert list(rows["ana"])[3:] == [test.id for test in UNIT.rubric.TESTS]  # the second unit's tests, in order
    assert float(rows["ana"]["total"]) == 100 and float(rows["ben"]["rope_scores_values"]) == 0
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "rope_scores" in summary and "keys are not rotated" in summary


LOOPING_ALIBI = '''

def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be (H,)")
    rows = []
    for i in range(length_q):  # a Python loop over the query positions
        distance = i - torch.arange(length_k, device=slopes.device)
        distance = distance.clamp(min=0) if causal else distance.abs()
        rows.append(slopes[:, None] * (-distance).to(slopes.dtype))
    return torch.stack(rows, dim=1).unsqueeze(0)
'''


# The slopes in a Python list, one entry per head (as the ALiBi authors build them), from Python floats rounded once
# to float32 (a few ulps from BLOOM's float32 powers, which the cases allow).
SLOPES_IN_A_LIST = '''

def alibi_slopes(num_heads, *, device=None):
    if num_heads < 1:
        raise ValueError(f"need one head or more, got {num_heads}")
    closest = 1 << (num_heads.bit_length() - 1)
    slopes = [2.0 ** (-8.0 * (h + 1) / closest) for h in range(closest)]
    slopes += [2.0 ** (-4.0 * (2 * h + 1) / closest) for h in range(num_heads - closest)]
    return torch.tensor(slopes, dtype=torch.float32, device=device)
'''
# The slopes rebind the bias's helper through globals() while the path runs: the loop check cannot follow that.
SLOPES_THAT_REBIND = '''

def _penalty(distance, slopes):
    return slopes[:, None, None] * (-distance).to(slopes.dtype)


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    if slopes.dim() != 1:
        raise ValueError("slopes must be (H,)")
    distance = (torch.arange(length_q, device=slopes.device)[:, None]
                - torch.arange(length_k, device=slopes.device)[None, :])
    distance = distance.clamp(min=0) if causal else distance.abs()
    return _penalty(distance, slopes).unsqueeze(0)


def alibi_slopes(num_heads, *, device=None):
    globals()["_penalty"] = _penalty
    return 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, device=device) / num_heads)
'''
# Right on every valid call, but no ValueError for slopes of another shape.
BIAS_WITHOUT_ITS_VALUE_ERROR = '''

def alibi_bias(length_q, length_k, slopes, *, causal=True):
    distance = (torch.arange(length_q, device=slopes.device)[:, None]
                - torch.arange(length_k, device=slopes.device)[None, :])
    distance = distance.clamp(min=0) if causal else distance.abs()
    return (slopes.reshape(-1, 1, 1) * (-distance).to(slopes.dtype)).unsqueeze(0)
'''
# LLaMA's way: cos and sin of whole positions looked up in a table of 2^18 positions, built on the first call (about
# 70 MB at dh = 32, once), computed for positions the table does not hold.
ANGLE_TABLE = '''

_TABLES = {}


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be a positive even number, got {head_dim}")
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=positions.device) / head_dim)
    if positions.is_floating_point() or positions.numel() == 0 or not 0 <= int(positions.min()) <= int(positions.max()) < 1 << 18:
        angle = positions.to(torch.float64)[..., None] * theta
        return angle.cos().to(dtype), angle.sin().to(dtype)
    key = (head_dim, float(base), positions.device)
    if key not in _TABLES:
        angle = torch.arange(1 << 18, dtype=torch.float64, device=positions.device)[:, None] * theta
        _TABLES[key] = (angle.cos(), angle.sin())
    cos, sin = _TABLES[key]
    return cos[positions].to(dtype), sin[positions].to(dtype)
'''


def test_the_second_units_score_paths_are_timed_and_a_loop_over_positions_gets_no_timing_points(tmp_path, reference):
    variants = {"reference": reference, "looping": reference + LOOPING_ALIBI,
                "slopes_in_a_list": reference + SLOPES_IN_A_LIST, "slopes_that_rebind": reference + SLOPES_THAT_REBIND,
                "angle_table": reference + ANGLE_TABLE, "no_value_error": reference + BIAS_WITHOUT_ITS_VALUE_ERROR}
    for name, text in variants.items():
        (tmp_path / f"{name}.py").write_text(text)
    grader = Grader(UNIT, sandbox="auto", timing_mode="cpu")
    try:
        results = {result.name: result for result in grader.grade_many([tmp_path / f"{name}.py" for name in variants])}
    finally:
        grader.close()
    timed = {test.id: test for test in results["reference"].tests if test.task == "timing"}
    assert set(timed) == {"rope_speed", "alibi_speed"}
    for test in timed.values():
        assert test.score > 0 and "the reference" in test.output, test.output
    looping = {test.id: test for test in results["looping"].tests}
    assert looping["alibi_bias_causal"].passed  # right, and slow
    assert looping["alibi_speed"].score == 0 and "Python loop" in looping["alibi_speed"].output
    assert looping["rope_speed"].score > 0  # the other path is not its business
    # A loop over the heads in alibi_slopes is no loop over positions: its path keeps every timing point.
    listed = {test.id: test for test in results["slopes_in_a_list"].tests}
    assert results["slopes_in_a_list"].score == UNIT.rubric.MAX_SCORE, [(t.id, t.output) for t in listed.values()
                                                                        if not t.passed]
    # But what alibi_slopes binds while the path runs is still read: a binding the check cannot follow costs them.
    rebinding = {test.id: test for test in results["slopes_that_rebind"].tests}
    assert rebinding["alibi_bias_causal"].passed and rebinding["alibi_speed"].score == 0, rebinding["alibi_speed"].output
    assert "globals()" in rebinding["alibi_speed"].output, rebinding["alibi_speed"].output
    # What a path does once, on its first call (a table of cos and sin built, LLaMA's cache), is not memory that
    # each of its calls needs: the memory is measured on a call after the first.
    # A missing ValueError is charged once, in its own test: the path computes the same, and is timed.
    lost = {test.id for test in results["no_value_error"].tests if not test.passed}
    assert lost == {"alibi_bias_invalid_args"}, [(t.id, t.output) for t in results["no_value_error"].tests
                                                 if not t.passed]
    table = {test.id: test for test in results["angle_table"].tests}
    assert results["angle_table"].score == UNIT.rubric.MAX_SCORE, [(t.id, t.output) for t in table.values()
                                                                   if not t.passed]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
def test_on_a_gpu_half_precision_is_turned_in_float32_and_both_paths_are_timed_on_cuda(tmp_path, reference):
    """The contract: float16 and bfloat16 rows are turned in float32 and rounded once at the end; on a GPU both
    timed paths run on CUDA in float32 and bfloat16 (benchmarks/gpu_checks.sh runs this)."""
    from solutions import rotary_alibi as ref

    positions = torch.arange(1000, 1064, device="cuda")
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randn(2, 4, 64, 32, device="cuda").to(dtype)
        exact = ref.apply_rotary(x.double(), positions)  # the same rows, turned in float64
        got = ref.apply_rotary(x, positions)
        assert got.dtype == dtype and got.device.type == "cuda"
        eps = torch.finfo(dtype).eps  # one rounding at the end: within an ulp of the exact turn
        assert torch.allclose(got.double(), exact, atol=2 * eps * float(exact.abs().max()), rtol=0), dtype
    (tmp_path / "reference.py").write_text(reference)
    grader = Grader(UNIT, sandbox="auto")
    try:
        result = grader.grade(tmp_path / "reference.py")
    finally:
        grader.close()
    assert result.score == UNIT.rubric.MAX_SCORE, [(test.id, test.output) for test in result.tests if not test.passed]
    for test in (test for test in result.tests if test.task == "timing"):
        assert "cuda, float32" in test.output and "cuda, bfloat16" in test.output, test.output
