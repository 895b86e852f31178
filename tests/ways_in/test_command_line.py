"""`python -m autograder grade` as an instructor or Gradescope calls it: exit status, JSON, CSV."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.units.positional_encodings import rubric

ROOT = Path(__file__).resolve().parents[2]
GRADESCOPE_KEYS = {"score", "max_score", "tests"}
TEST_KEYS = {"name", "score", "max_score", "status", "output"}


def _run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_json_for_one_submission_is_one_gradescope_object(tmp_path, reference_text):
    (tmp_path / "ref.py").write_text(reference_text)
    run = _run("grade", str(tmp_path / "ref.py"), "--json")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert GRADESCOPE_KEYS <= set(result) and result["score"] == result["max_score"] == 100
    assert all(TEST_KEYS <= set(test) and test["status"] == "passed" for test in result["tests"])


def test_several_submissions_give_a_line_each_and_out_writes_grades_csv(tmp_path, reference_text, stub_text):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ref.py").write_text(reference_text)
    (tmp_path / "subs" / "stub.py").write_text(stub_text)
    run = _run("grade", str(tmp_path / "subs"), "--json", "--out", str(tmp_path / "out"), "--jobs", "2")
    assert run.returncode == 0, run.stderr
    scores = [json.loads(line)["score"] for line in run.stdout.strip().splitlines()]
    assert scores == [100, 0]
    with open(tmp_path / "out" / "grades.csv") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert rows["ref"]["total"] == "100" and rows["stub"]["total"] == "0"
    assert rows["ref"]["sinusoidal_values"] == str(rubric.TEST_BY_ID["sinusoidal_values"].points)
    assert json.loads((tmp_path / "out" / "stub.json").read_text())["score"] == 0


def test_the_table_is_the_default_output_and_low_scores_still_exit_0(tmp_path, stub_text):
    (tmp_path / "stub.py").write_text(stub_text)
    run = _run("grade", str(tmp_path / "stub.py"))
    assert run.returncode == 0
    assert "0/100" in run.stdout and "FAIL sinusoidal_values" in run.stdout
    # The table's last column sums it up: every task unwritten (the timing tier waits for them, unmentioned).
    assert "not implemented: learned, sinusoidal, relative_positions, shaw, t5_bucket, t5_bias, biased_scores" \
        in run.stdout


def test_a_missing_path_is_the_graders_error_exit_2(tmp_path):
    run = _run("grade", str(tmp_path / "nope.py"))
    assert run.returncode == 2
    assert "no such file or folder" in run.stderr


def test_the_help_lists_every_command_on_a_line_of_its_own():
    shown = subprocess.run([sys.executable, "-m", "autograder", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert shown.returncode == 0
    parser_commands = {"grade", "demo", "build", "release", "gradescope-bundle", "prairielearn-bundle", "course-secret",
                       "capstone", "new-unit", "check-unit", "lms-export", "similarity"}
    listed = {line.split()[0]: line for line in shown.stdout.splitlines() if line.startswith("    ") and line.split()}
    assert set(listed) == parser_commands
    assert all(len(line.split()) >= 3 for line in listed.values()), "a command's help is not on its own line"


@pytest.mark.parametrize("command", ["grade", "release", "gradescope-bundle", "prairielearn-bundle"])
def test_the_same_meaning_has_the_same_flag_in_every_command(command):
    shown = subprocess.run([sys.executable, "-m", "autograder", command, "--help"], cwd=ROOT, capture_output=True,
                           text=True).stdout
    assert "--out" in shown  # where the command writes
    if command != "prairielearn-bundle":
        assert "--unit" in shown
