"""The PrairieLearn bundle: what it holds, and run_prairielearn grading a simulated /grade tree on this machine.

The same entry point in a real container with Docker's defaults, for the whole sample class and the corpus, is
in test_platform_containers.py.
"""

import json
import os
import stat
import subprocess
import sys

import pytest

from autograder.ways_in import gradescope, prairielearn
from autograder.core import units
from autograder.units.positional_encodings import rubric
from autograder.sandbox.server import bubblewrap
from conftest import notebook

KIT = f"serverFilesCourse/{prairielearn.KIT_FOLDER}"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return prairielearn.main_bundle(tmp_path_factory.mktemp("pl") / "pl", image="someone/grader")


def test_the_bundle_holds_an_image_with_nothing_secret_the_kit_for_server_files_and_a_question(bundle):
    image = {path.name for path in (bundle / "image").iterdir()}
    assert image == {"Dockerfile", "setup.sh"}  # no reference, no hidden case: the image may be public
    assert "'torch==2.13.0'" in (bundle / "image" / "setup.sh").read_text()
    for name in gradescope.source_files():
        assert (bundle / KIT / name).is_file(), name
    assert not list((bundle / KIT).rglob("__pycache__")) and not (bundle / KIT / "tests").exists()
    entry = bundle / KIT / "run_prairielearn"
    assert entry.stat().st_mode & stat.S_IXUSR
    assert subprocess.run(["bash", "-n", str(entry)]).returncode == 0
    uuids = set()
    for unit in units.all_units():  # a question per unit, each asking for its own file names
        info = json.loads((bundle / "questions" / unit.name / "info.json").read_text())
        options = info["externalGradingOptions"]
        assert options["image"] == "someone/grader" and options["enabled"] is True
        assert options["entrypoint"] == f"/grade/{KIT}/run_prairielearn"
        assert options["serverFilesCourse"] == [f"{prairielearn.KIT_FOLDER}/"]
        assert info["gradingMethod"] == "External"
        assert f'file-names="{unit.name}.ipynb, {unit.name}.py"' in (bundle / "questions" / unit.name /
                                                                       "question.html").read_text()
        assert (bundle / "questions" / unit.name / "tests" / prairielearn.UNIT_FILE).read_text() == unit.name + "\n"
        uuids.add(info["uuid"])
    assert len(uuids) == len(units.names())


def grade_tree(bundle, root, student_files, unit="positional_encodings", **env):
    """run_prairielearn on a /grade tree at ``root`` (the kit copied where PrairieLearn puts it, and the question's
    tests/ of ``unit``'s question where PrairieLearn copies them)."""
    import shutil

    shutil.copytree(bundle / "serverFilesCourse", root / "serverFilesCourse")
    shutil.copytree(bundle / "questions" / unit / "tests", root / "tests")
    (root / "student").mkdir(parents=True)
    for name, text in student_files.items():
        (root / "student" / name).write_text(text, encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update({"AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable, **env})
    ran = subprocess.run([str(root / KIT / "run_prairielearn")], env=environment, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr  # PrairieLearn reads the results only after exit 0
    return json.loads((root / "results" / "results.json").read_text()), ran.stdout


@pytest.mark.skipif(bubblewrap() is None, reason="bubblewrap (bwrap) is not installed")
def test_the_reference_in_a_notebook_gets_score_1_with_a_test_per_rubric_test(bundle, tmp_path, reference_text):
    results, stdout = grade_tree(bundle, tmp_path / "grade", {"positional_encodings.ipynb": notebook([reference_text])})
    assert f"Kit: {tmp_path / 'grade' / KIT / 'autograder'}" in stdout  # the copy in serverFilesCourse
    assert results["gradable"] is True and results["score"] == 1
    assert [test["name"] for test in results["tests"]] == [test.id for test in rubric.TESTS]
    assert all(test["points"] == test["max_points"] for test in results["tests"])
    assert not stat.S_IMODE((tmp_path / "grade" / KIT / "solutions" / "positional_encodings.py").stat().st_mode) & 0o077


def test_nothing_to_grade_is_not_gradable_and_says_what_to_upload(bundle, tmp_path):
    results, _ = grade_tree(bundle, tmp_path / "grade", {"notes.txt": "hello"})
    assert results["gradable"] is False and results["score"] == 0
    assert "positional_encodings.ipynb" in results["message"] and "notes.txt" in results["message"]


def test_a_python_that_cannot_start_still_leaves_results_that_say_so(bundle, tmp_path):
    results, _ = grade_tree(bundle, tmp_path / "grade", {"positional_encodings.py": "x = 1\n"},
                            AUTOGRADER_PYTHON=str(tmp_path / "no-python"))
    assert results["gradable"] is False and "tell your instructor" in results["message"]


def test_a_failed_test_s_message_keeps_the_hidden_case_out_of_sight(reference_text):
    from autograder.core import voice
    from autograder.core.grade import Result, TestResult

    tests = [TestResult(test.id, test.task, test.points, test.points, "Passed.") for test in rubric.TESTS]
    where = [test.id for test in rubric.TESTS].index("sinusoidal_values")
    tests[where] = TestResult("sinusoidal_values", "sinusoidal", 0, 7, "sinusoidal_table(50, 16) is wrong at [0, 1]: "
                              "expected 1, got 0.\nLikely mistake: sin and cos are swapped.", kind=voice.WRONG,
                              diagnosis=voice.Diagnosis(mistakes=("sin and cos are swapped.",)))
    results = prairielearn.to_results(Result("x", "x.py", tests, []), "x.py")
    message = results["tests"][where]["message"]
    assert "Likely mistake: sin and cos are swapped." in message and "sinusoidal_table(50" not in message
    assert results["score"] == pytest.approx((rubric.MAX_SCORE - 7) / rubric.MAX_SCORE)
    speed = next(test for test in results["tests"] if test["name"] == "shaw_speed")
    assert speed["message"] == "Passed."
