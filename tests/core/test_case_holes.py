"""Cases that leave no place to hide (issue 12): wrong variants that the cases let through before, each caught now.

Each variant below is the reference with one plausible slip. Before these cases, each of them passed the test
named here: the fixed settings never showed it (max_distance ignored by t5_bias counted only modulo
num_buckets in the grader's stand-in; every max_distance was a multiple of max_exact; no distance fell on a
bucket's edge, where the log's precision decides).
"""


import pytest
import torch

from autograder.core.cases import build_cases
from autograder.units.positional_encodings.job import scrambled_buckets
from conftest import UNIT

BUCKET_HEADER = "\n\ndef t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):\n"
BUCKET_BODY = """\
    n = num_buckets // 2 if bidirectional else num_buckets
    if bidirectional:
        offset = (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        offset = torch.zeros_like(relative_position)
        distance = (-relative_position).clamp(min=0)
    max_exact = n // 2
    if max_exact == 0 or max_distance <= max_exact:
        raise ValueError(f"no exact buckets: num_buckets={{num_buckets}}, max_distance={{max_distance}}")
    far = max_exact + (torch.log(distance.{dtype}() / max_exact) / math.log({ratio}) * (n - max_exact)).long()
    return offset + torch.where(distance < max_exact, distance, far.clamp(max=n - 1))
"""
VARIANTS = {
    # name: (source appended to the reference, the test it must fail, words its feedback must hold)
    "t5_bias_ignores_max_distance": ("""

def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
    relative = torch.arange(length_k)[None, :] - torch.arange(length_q)[:, None]
    buckets = t5_relative_position_bucket(relative, bidirectional=bidirectional, num_buckets=num_buckets)
    return bias_table[buckets].permute(2, 0, 1).unsqueeze(0)
""", "t5_bias_values", ""),
    "bucket_integer_division": (BUCKET_HEADER + BUCKET_BODY.format(dtype="float", ratio="max_distance // max_exact"),
                                "t5_bucket_settings", "divided as integers"),
    "bucket_log_in_float64": (BUCKET_HEADER + BUCKET_BODY.format(dtype="double", ratio="max_distance / max_exact"),
                              "t5_bucket_settings", "another precision than T5's float32"),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_slip_the_old_cases_let_through_is_caught_and_named(grader, tmp_path, reference_text, name):
    source, test_id, words = VARIANTS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(reference_text + "\nimport math\n" + source)
    tests = {test.id: test for test in grader.grade(path).tests}
    assert not tests[test_id].passed, f"{name} passes {test_id}"
    assert words in tests[test_id].output, tests[test_id].output
    # The slip costs its own test, not the others of the task (one mistake, charged once).
    task = tests[test_id].task
    assert [t.id for t in tests.values() if t.task == task and not t.passed] == [test_id], \
        {t.id: t.output[:200] for t in tests.values() if t.task == task and not t.passed}


def test_the_stand_in_helper_shows_every_setting_in_every_t5_bias_case():
    """Whatever setting a t5_bias fails to pass on, the stand-in's buckets change where it is not the default."""
    defaults = {"bidirectional": True, "num_buckets": 32, "max_distance": 128}
    # A behaviour contract's case is a sequence of calls (autograder/core/behaviour.py): each of them.
    probes = [probe for case in build_cases(UNIT, 0)["t5_bias"] for probe in case.probe.get("calls", [case.probe])]
    for probe in probes:
        settings = {**defaults, **{key: value for key, value in probe.get("kwargs", {}).items()
                                   if key in defaults}}  # the table itself may go by keyword
        key = tuple(probe["substitute"]["key"])
        grid = torch.arange(7)[None, :] - torch.arange(5)[:, None]
        given = scrambled_buckets(grid, **settings, key=key)
        for name, default in defaults.items():
            if settings[name] != default:
                dropped = scrambled_buckets(grid, **{**settings, name: default}, key=key)
                assert not torch.equal(given, dropped), (probe["args"], name)


# --- One mistake, charged once: a wrong helper costs the timing tier nothing -------------------------------------

@pytest.mark.parametrize("mistake_name, helper_task, path_test", [
    ("i_minus_j", "relative_positions", "shaw_speed"),
    ("bucket_sign_flipped", "t5_bucket", "t5_speed"),
])
def test_a_wrong_helper_costs_its_own_points_and_not_the_timing_of_the_path_that_calls_it(
        grader, tmp_path, reference_text, mistake_name, helper_task, path_test):
    from autograder.ways_in.demo import apply
    from autograder.units.positional_encodings.samples import MISTAKES

    mistake = next(m for m in MISTAKES if m.name == mistake_name)
    path = tmp_path / f"{mistake_name}.py"
    path.write_text(apply(mistake, reference_text))
    tests = {test.id: test for test in grader.grade(path).tests}
    assert any(not test.passed for test in tests.values() if test.task == helper_task)
    timed = tests[path_test]
    assert timed.passed, timed.output
    assert "Timed with the grader's stand-in" in timed.output and "The rest of the path is yours" in timed.output


def test_a_mistake_is_charged_once_within_its_task(grader, tmp_path, reference_text):
    """Swapped sin and cos fail the value test, and the edge cases too; it cost 9 of the task's 13 points. Now
    the edge-case test, where the swap is all that is wrong, keeps its points and says why."""
    from autograder.units.positional_encodings import rubric
    from autograder.ways_in.demo import apply
    from autograder.units.positional_encodings.samples import MISTAKES

    mistake = next(m for m in MISTAKES if m.name == "sin_cos_swapped")
    path = tmp_path / "swapped.py"
    path.write_text(apply(mistake, reference_text))
    tests = {test.id: test for test in grader.grade(path).tests}
    assert not tests["sinusoidal_values"].passed and mistake.says in tests["sinusoidal_values"].output
    edge = tests["sinusoidal_edge_cases"]
    assert edge.passed and "already counted in sinusoidal_values" in edge.output, edge.output
    # A passed test's text shows at once, before the hidden cases are released: it names none of their calls.
    assert not any(case.label in edge.output for case in grader.cases["sinusoidal"]), edge.output
    assert sum(t.score for t in tests.values() if t.task == "sinusoidal") == \
        rubric.task_points("sinusoidal") - rubric.TEST_BY_ID["sinusoidal_values"].points


def test_an_edge_case_mistake_of_its_own_still_costs_the_edge_case_points(grader, tmp_path, reference_text):
    path = tmp_path / "one_position.py"
    path.write_text(reference_text + "\n\n_table = sinusoidal_table\n\n\ndef sinusoidal_table(num_positions, d_model, "
                    "base=10000.0, *, dtype=torch.float32):\n    if num_positions == 1:\n"
                    "        return torch.ones(1, d_model, dtype=dtype)\n"
                    "    return _table(num_positions, d_model, base, dtype=dtype)\n")
    tests = {test.id: test for test in grader.grade(path).tests}
    assert tests["sinusoidal_values"].passed and not tests["sinusoidal_edge_cases"].passed
