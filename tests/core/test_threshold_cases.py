"""Cases drawn near every threshold a formula has (issue 37, point 2): mutants of the reference at each threshold are
caught by the hidden cases, whatever seed draws them.

A mutant is the reference's own function with one comparison, division or rounding changed at a threshold (the
source text replaced, nothing else); it is run as the job runs a student's function and read as the grader reads it.
Seeds are drawn by hypothesis: each draws the threshold cases afresh (their neighbourhoods, not one example).

On main (before the threshold cases) Llama 3's thresholds by floor division passed every case at most seeds; the
other thresholds were already caught and stay caught. Where a changed comparison cannot change the answer (the
Llama 3 blend and T5's buckets are continuous at their thresholds) the mutant is equivalent: a test says so, so
that no case is asked to tell it apart.
"""

import inspect
import random
import sys
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import units
from autograder.course.build import ROOT
from autograder.sandbox import protocol
from solutions import long_context, positional_encodings, rotary_alibi

sys.path.insert(0, str(ROOT / "autograder" / "sandbox"))
import worker  # noqa: E402  (the job's side, as the sandbox runs it: a file of its own)

# task: (unit, reference module, function, [(the mistake, text of the reference, the text put in its place)])
MUTANTS = {
    "llama3_inverse_frequencies": ("long_context", long_context, "llama3_inverse_frequencies", [
        ("L // high_freq_factor", "wavelength < trained_length / high_freq_factor",
         "wavelength < trained_length // high_freq_factor"),
        ("L // low_freq_factor", "wavelength > trained_length / low_freq_factor",
         "wavelength > trained_length // low_freq_factor"),
    ]),
    "yarn_inverse_frequencies": ("long_context", long_context, "yarn_inverse_frequencies", [
        ("round(low)", "math.floor(low), math.ceil(high)", "round(low), math.ceil(high)"),
        ("round(high)", "math.floor(low), math.ceil(high)", "math.floor(low), round(high)"),
        ("round() for both", "math.floor(low), math.ceil(high)", "round(low), round(high)"),
        ("ceil(low)", "math.floor(low), math.ceil(high)", "math.ceil(low), math.ceil(high)"),
        ("floor(high)", "math.floor(low), math.ceil(high)", "math.floor(low), math.floor(high)"),
    ]),
    "t5_bucket": ("positional_encodings", positional_encodings, "t5_relative_position_bucket", [
        ("relative_position >= 0 in the upper half", "(relative_position > 0)", "(relative_position >= 0)"),
        ("max_exact = n // 2 + 1", "max_exact = n // 2\n", "max_exact = n // 2 + 1\n"),
        ("max_distance < max_exact refused only", "if max_distance <= max_exact:", "if max_distance < max_exact:"),
        ("the last bucket n - 2", "clamp(max=n - 1)", "clamp(max=n - 2)"),
    ]),
    "alibi_slopes": ("rotary_alibi", rotary_alibi, "alibi_slopes", [
        ("the next power of two", "closest = 1 << (num_heads.bit_length() - 1)",
         "closest = 1 << (num_heads - 1).bit_length()"),
        ("a power of two by num_heads % 2 == 0", "if closest == num_heads:", "if num_heads % 2 == 0:"),
    ]),
    "dynamic_ntk_inverse_frequencies": ("long_context", long_context, "dynamic_ntk_inverse_frequencies", [
        ("length // trained_length", "factor * length / trained_length", "factor * (length // trained_length)"),
        ("no floor of 1", "max(1.0, factor * length / trained_length - (factor - 1))",
         "factor * length / trained_length - (factor - 1)"),
        ("length < trained_length refused", "if length < 1 or trained_length < 1:",
         "if length < trained_length or trained_length < 1:"),
    ]),
}

# Comparisons whose change cannot change the answer: the formula is continuous where the branches meet.
EQUIVALENT = {
    "llama3_inverse_frequencies": [
        ("wavelength <= L / high", "wavelength < trained_length / high_freq_factor",
         "wavelength <= trained_length / high_freq_factor"),
        ("wavelength >= L / low", "wavelength > trained_length / low_freq_factor",
         "wavelength >= trained_length / low_freq_factor"),
    ],
    "t5_bucket": [("distance <= max_exact", "is_exact = distance < max_exact", "is_exact = distance <= max_exact")],
}


def _mutant(module, function, old, new):
    """``module``'s namespace with ``function`` rebuilt from its source with ``old`` replaced by ``new``."""
    source = textwrap.dedent(inspect.getsource(getattr(module, function)))
    assert source.count(old) == 1, (function, old)
    namespace = dict(vars(module))
    exec(compile(source.replace(old, new), f"<mutant of {function}>", "exec"), namespace)
    return namespace


def _cases(unit, task, seed):
    rubric = unit.rubric
    number = rubric.TASK_NAMES.index(task)
    return unit.cases_module(task).build(random.Random(f"{seed}:{task}"),
                                         torch.Generator().manual_seed(seed * 100 + number))


def _failed(unit, namespace, cases):
    """The labels of the scored ``cases`` that the code of ``namespace`` fails, as the grader reads its outcomes."""
    job = worker._unit_code({"unit_code": unit.job_source})
    failed = []
    for case in cases:
        outcome = worker.run_probe(namespace, {**case.probe, "id": "p"}, [], job)
        read = protocol.task_results(worker.pack({"p": outcome}), {"p": "call"})["p"]
        if case.scored and not case.check(read).passed:
            failed.append(case)
    return failed


SEEDS = st.integers(min_value=0, max_value=10**6)
FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("task", sorted(MUTANTS))
@FEW
@given(seed=SEEDS)
def test_the_reference_passes_every_case_at_any_seed(task, seed):
    unit_name, module, _, _ = MUTANTS[task]
    unit = units.get(unit_name)
    assert _failed(unit, dict(vars(module)), _cases(unit, task, seed)) == []


@pytest.mark.parametrize("task, mistake", [(task, what) for task, (_, _, _, made) in sorted(MUTANTS.items())
                                           for what, _, _ in made])
@FEW
@given(seed=SEEDS)
def test_a_mutant_at_a_threshold_fails_a_case_at_any_seed(task, mistake, seed):
    unit_name, module, function, made = MUTANTS[task]
    _, old, new = next(entry for entry in made if entry[0] == mistake)
    unit = units.get(unit_name)
    assert _failed(unit, _mutant(module, function, old, new), _cases(unit, task, seed)), \
        f"{mistake}: every case of {task} passed at seed {seed}"


@pytest.mark.parametrize("mistake", ["L // high_freq_factor", "L // low_freq_factor"])
@FEW
@given(seed=SEEDS)
def test_llama3_s_floor_division_fails_at_the_threshold_and_the_diagnosis_can_say_so(mistake, seed):
    """It fails on the cases with a wavelength in a threshold's floor gap and on no other (the "thresholds" feature
    separates them), so the condition told is the threshold's."""
    unit_name, module, function, made = MUTANTS["llama3_inverse_frequencies"]
    _, old, new = next(entry for entry in made if entry[0] == mistake)
    unit = units.get(unit_name)
    cases = [case for case in _cases(unit, "llama3_inverse_frequencies", seed) if "thresholds" in case.features]
    failed = _failed(unit, _mutant(module, function, old, new), cases)
    gap = "a wavelength between floor(L / f) and L / f"
    assert failed and {case.features["thresholds"] for case in failed} == {gap}
    assert [case for case in cases if case.features["thresholds"] == gap]


@pytest.mark.parametrize("task, mistake", [(task, what) for task, made in sorted(EQUIVALENT.items())
                                           for what, _, _ in made])
@FEW
@given(seed=SEEDS)
def test_a_comparison_where_the_branches_meet_changes_nothing(task, mistake, seed):
    """Both sides of the threshold give the same value there: the mutant passes every case, so its passing is no
    hole (and no case could tell it apart)."""
    unit_name, module, function, _ = MUTANTS[task]
    _, old, new = next(entry for entry in EQUIVALENT[task] if entry[0] == mistake)
    unit = units.get(unit_name)
    assert _failed(unit, _mutant(module, function, old, new), _cases(unit, task, seed)) == []


@FEW
@given(seed=SEEDS)
def test_yarn_s_rounding_case_has_low_just_below_and_high_just_above_a_whole_number(seed):
    unit = units.get("long_context")
    case = _cases(unit, "yarn_inverse_frequencies", seed)[-1]
    kwargs = case.probe["kwargs"]
    from autograder.units.long_context.cases.yarn_inverse_frequencies import _bounds

    low, high = _bounds(case.probe["args"][0], kwargs["base"], kwargs["trained_length"], 32.0, 1.0, False)
    assert 0.5 < low % 1 and high % 1 < 0.5 and 0 < low < high < case.probe["args"][0] // 2 - 1
    assert case.features["rounding"] == "a bound that round() moves the other way" and case.scored
