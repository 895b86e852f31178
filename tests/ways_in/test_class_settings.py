"""A result on disk is kept only where it was graded under the settings of the run that finds it.

Invariant (docs/threat-model.md, a class run's results folder): everything besides the submission that can change
a grade (the unit, the seed of the hidden cases, every limit of a job, the sandbox tier, the timing tier's mode, the
grader's code, the versions of Python and torch) keys a saved result; a run over a folder graded otherwise grades
those submissions again and says how many and what changed, from what to what.

The first test is the issue's case through the real command line and the real grader: a class graded with limits
too short for any test to finish, then graded again with the defaults, used to keep the first run's rows ("2
already graded ... were kept"). The others draw two sets of settings (hypothesis) and grade a class with each
through ``grade_class`` and a stand-in grader that records what it is asked to grade: the second run grades again
exactly when a setting differs, and names each setting that differs.
"""

import csv
import dataclasses
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from autograder.ways_in import cli
from conftest import UNIT


def _rows(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["submission"]: float(row["total"]) for row in csv.DictReader(handle)}


def test_a_class_graded_under_other_limits_is_graded_again_and_the_run_says_why(tmp_path, reference_text, capsys):
    folder, out = tmp_path / "class", tmp_path / "out"
    for student in ("ada", "bo"):
        (folder / student).mkdir(parents=True)
        (folder / student / f"{UNIT.module_name}.py").write_text(reference_text)
    common = ["grade", str(folder), "--out", str(out), "--unit", UNIT.name, "--jobs", "2", "--without-gpu", "give"]
    assert cli.main(common + ["--timeout", "0.5", "--task-timeout", "0.5"]) == 0
    capsys.readouterr()
    assert cli.main(common) == 0
    said = capsys.readouterr().err
    assert _rows(out) == {"ada": 100, "bo": 100}  # the reference's score, not what 0.5 s allowed
    assert "2 results were graded under other settings (" in said, said
    assert "--timeout 0.5 -> 40" in said and "--task-timeout 0.5 -> 15" in said, said
    assert "2 submission(s) graded" in said and "already graded" not in said, said
    saved = json.loads((out / "ada.json").read_text())["autograder"]["settings"]
    assert saved["limits"]["wall_seconds"] == 40 and saved["limits"]["task_seconds"] == 15
    assert cli.main(common) == 0  # and a third run, under the same settings, keeps them
    said = capsys.readouterr().err
    assert "2 already graded" in said and "other settings" not in said, said


# ---- Two runs under drawn settings, through grade_class with a stand-in grader ----

class StandInGrader:
    """Grades every submission with full marks and records which it was asked to grade; holds the settings a
    Grader holds (limits, sandbox tier, seed, timing mode)."""

    def __init__(self, limits, tier, seed, timing_mode):
        self.unit, self.limits, self.tier, self.seed, self.timing_mode = UNIT, limits, tier, seed, timing_mode
        self.course_secret, self.graded = None, []

    def grade_many(self, paths, jobs=1, on_result=None):
        from autograder.core.grade import Result, TestResult

        results = []
        for index, path in enumerate(paths):
            tests = [TestResult(test.id, test.task, test.points, test.points, "Passed.") for test in UNIT.rubric.TESTS]
            results.append(Result(Path(path).name, str(path), tests, unit=UNIT.name))
            self.graded.append(Path(path).name)
            on_result(index, results[-1])
        return results


GIB = 1024**3
# Each limit of a job (every field of Limits but the tier), two values each; the flag that sets it on the command
# line, as the instructor would write it (the others have none: the message names the field).
LIMIT_VALUES = {"wall_seconds": (40.0, 25.0), "task_seconds": (15.0, 6.0), "memory_bytes": (6 * GIB, 2 * GIB),
                "output_bytes": (65536, 4096), "processes": (64, 16), "cpus": (1.0, 2.0),
                "scratch_bytes": (128 * 1024**2, 32 * 1024**2), "processes_by_rlimit": (False, True)}
FLAG = {"wall_seconds": "--timeout", "task_seconds": "--task-timeout", "memory_bytes": "--memory-gb"}


def test_every_limit_a_job_has_is_drawn():
    from autograder.sandbox.server import Limits

    assert set(LIMIT_VALUES) == {field.name for field in dataclasses.fields(Limits)} - {"sandboxed"}


def _shown(field, value):
    return f"{value / GIB:g}" if field == "memory_bytes" else (f"{value:g}" if isinstance(value, float) else str(value))


grading = st.fixed_dictionaries({
    "limits": st.fixed_dictionaries({field: st.sampled_from(values) for field, values in LIMIT_VALUES.items()}),
    "tier": st.sampled_from(["bubblewrap, namespaces per job", "a user of its own per job"]),
    "seed": st.sampled_from([20261130, 7]),
    "timing_mode": st.sampled_from(["cpu", "give", "withhold"]),
})


def _grader(drawn):
    from autograder.sandbox.server import Limits

    return StandInGrader(Limits(**drawn["limits"]), drawn["tier"], drawn["seed"], drawn["timing_mode"])


def _class(folder, count=3):
    for number in range(count):  # what they hold does not matter to the stand-in
        (folder / f"student{number}").mkdir(parents=True)
        (folder / f"student{number}" / f"{UNIT.module_name}.py").write_text(f"ANSWER = {number}\n")
    return sorted(folder.iterdir())


def _said(capsys):
    """What the run told the instructor on stderr, line by line."""
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=grading, second=grading)
def test_a_result_is_kept_only_under_the_settings_it_was_graded_with(capsys, first, second):
    from autograder.ways_in.batch import grade_class

    with tempfile.TemporaryDirectory() as scratch:
        paths = _class(Path(scratch) / "class")
        out = Path(scratch) / "out"
        grade_class(_grader(first), paths, out)
        capsys.readouterr()
        again = _grader(second)
        _, kept = grade_class(again, paths, out)
        said = _said(capsys)
    if first == second:
        assert kept == 3 and again.graded == [] and said == []
        return
    assert kept == 0 and sorted(again.graded) == [path.name for path in paths]
    message = "\n".join(said)
    assert message.startswith("3 results were graded under other settings ("), message
    for field, before in first["limits"].items():
        after = second["limits"][field]
        if before != after:
            assert f"{FLAG.get(field, field)} {_shown(field, before)} -> {_shown(field, after)}" in message, message
    if first["seed"] != second["seed"]:
        assert f"seed {first['seed']} -> {second['seed']}" in message, message
    if first["tier"] != second["tier"]:
        assert f"sandbox {first['tier']} -> {second['tier']}" in message, message
    if first["timing_mode"] != second["timing_mode"]:
        assert f"--without-gpu {first['timing_mode']} -> {second['timing_mode']}" in message, message


def test_a_change_of_the_grader_or_of_torch_grades_again_and_says_so(tmp_path, monkeypatch, capsys):
    import torch

    from autograder.ways_in import batch

    drawn = {"limits": {field: values[0] for field, values in LIMIT_VALUES.items()}, "tier": "bubblewrap",
             "seed": 7, "timing_mode": "give"}
    paths = _class(tmp_path / "class", count=2)
    batch.grade_class(_grader(drawn), paths, tmp_path / "out")
    capsys.readouterr()
    monkeypatch.setattr(batch, "grader_sources", lambda unit: "another grader", raising=False)
    monkeypatch.setattr(batch, "grading_fingerprint", lambda *a, **k: "another grader")  # main's key of the grader
    _, kept = batch.grade_class(_grader(drawn), paths, tmp_path / "out")
    said = _said(capsys)
    assert kept == 0 and said == ["2 results were graded under other settings (the grader's code or the unit's "
                                  "rubric, cases or reference changed): graded again."], said
    monkeypatch.undo()
    monkeypatch.setattr(torch, "__version__", "99.0")
    _, kept = batch.grade_class(_grader(drawn), paths, tmp_path / "out")
    said = _said(capsys)
    assert kept == 0 and len(said) == 1 and "torch " in said[0] and " -> 99.0" in said[0], said


def test_results_of_an_earlier_grader_are_graded_again(tmp_path, capsys):
    from autograder.ways_in import batch

    drawn = {"limits": {field: values[0] for field, values in LIMIT_VALUES.items()}, "tier": "bubblewrap",
             "seed": 7, "timing_mode": "give"}
    paths = _class(tmp_path / "class", count=2)
    batch.grade_class(_grader(drawn), paths, tmp_path / "out")
    for path in (tmp_path / "out").glob("*.json"):  # as the grader before settings were recorded wrote them
        data = json.loads(path.read_text())
        data["autograder"]["format"] = 2
        data["autograder"].pop("settings", None)
        path.write_text(json.dumps(data))
    capsys.readouterr()
    _, kept = batch.grade_class(_grader(drawn), paths, tmp_path / "out")
    said = _said(capsys)
    assert kept == 0 and said == ["2 results were graded under other settings (graded by an earlier version of "
                                  "the grader): graded again."], said


def test_each_results_file_says_what_it_was_graded_with(tmp_path):
    from autograder.ways_in import batch

    drawn = {"limits": {field: values[1] for field, values in LIMIT_VALUES.items()}, "tier": "a user of its own",
             "seed": 7, "timing_mode": "withhold"}
    paths = _class(tmp_path / "class", count=1)
    batch.grade_class(_grader(drawn), paths, tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "student0.json").read_text())["autograder"]["settings"]
    assert saved["unit"] == UNIT.name and saved["seed"] == 7 and saved["sandbox"] == "a user of its own"
    assert saved["limits"] == drawn["limits"]
    assert saved["timing"]["without_gpu"] == "withhold"
    assert set(saved["grader"]) >= {"code", "python", "torch"}
