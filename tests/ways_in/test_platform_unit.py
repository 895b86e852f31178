"""A platform's assignment grades one unit: a bundle is made for one, and an upload of another unit's file gets
nothing and a message that says which assignment this is and which file it expects.

Gradescope: ``gradescope-bundle`` refuses to run without ``--unit``, and ``main_bundle`` requires a unit; in the
container the unit is the bundle's (``AUTOGRADER_UNIT`` in run_autograder), never the upload's file name.
PrairieLearn: each question names its unit in ``tests/unit`` (copied by PrairieLearn to ``/grade/tests``);
another unit's upload is ``gradable: false`` (it costs the student no attempt) with the same message.
The grading runs in process with a stand-in grader that gives full marks to whatever it is asked to grade: what
is tested is which unit the platform grades the upload as, and what it tells the student.
"""

import json
import zipfile

import pytest

from autograder.core import grade, units
from autograder.core.units import strip_markers
from autograder.ways_in import cli, gradescope, prairielearn
from conftest import notebook

FIRST, SECOND = units.get("positional_encodings"), units.get("rotary_alibi")
SECOND_FINISHED = strip_markers(SECOND.reference_path.read_text(encoding="utf-8"))
FIRST_FINISHED = strip_markers(FIRST.reference_path.read_text(encoding="utf-8"))


class FullMarks:
    """Stands in for Grader: full marks in the unit it was made for, whatever the file (so that a wrong unit
    shows as a full score)."""

    made = []
    tier = "fake"

    def __init__(self, unit, **_):
        self.unit = units.get(unit) if isinstance(unit, str) else unit
        self.made.append(self.unit.name)

    def grade(self, path, **_):
        tests = [grade.TestResult(test.id, test.task, test.points, test.points, "Passed.")
                 for test in self.unit.rubric.TESTS]
        return grade.Result("x", str(path), tests, unit=self.unit.name)

    def close(self):
        pass


@pytest.fixture()
def full_marks(monkeypatch):
    FullMarks.made = []
    monkeypatch.setattr("autograder.core.grade.Grader", FullMarks)
    return FullMarks


def _tree(root, folder, files):
    (root / folder).mkdir(parents=True)
    for name, text in files.items():
        (root / folder / name).parent.mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text(text, encoding="utf-8")
    return root


def _gradescope(root, files, monkeypatch, unit):
    if unit is None:
        monkeypatch.delenv(gradescope.UNIT_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(gradescope.UNIT_VARIABLE, unit)
    assert gradescope.run(_tree(root, "submission", files)) == 0
    return json.loads((root / "results" / "results.json").read_text())


# ---- Making a bundle ----

def test_gradescope_bundle_without_unit_exits_2_naming_unit_and_the_units(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["gradescope-bundle", "--out", str(tmp_path / "x.zip")])
    said = capsys.readouterr().err
    assert stopped.value.code == 2, f"exit status {stopped.value.code}: {said}"
    assert "--unit" in said and all(name in said for name in units.names()), said
    assert not (tmp_path / "x.zip").exists()


def test_main_bundle_requires_a_unit_and_writes_it_into_run_autograder(tmp_path):
    with pytest.raises(TypeError):
        gradescope.main_bundle(tmp_path / "none.zip")
    with zipfile.ZipFile(gradescope.main_bundle(tmp_path / "ag.zip", unit="rotary_alibi")) as archive:
        script = archive.read("run_autograder").decode()
    assert f"\nexport {gradescope.UNIT_VARIABLE}=rotary_alibi" in script
    with pytest.raises(KeyError, match="positional_encodings"):
        gradescope.main_bundle(tmp_path / "bad.zip", unit="no_such_unit")


def test_the_command_writes_a_bundle_for_the_unit_it_is_given(tmp_path, capsys):
    assert cli.main(["gradescope-bundle", "--out", str(tmp_path / "ag.zip"), "--unit", "positional_encodings"]) == 0
    with zipfile.ZipFile(tmp_path / "ag.zip") as archive:
        assert f"export {gradescope.UNIT_VARIABLE}=positional_encodings" in archive.read("run_autograder").decode()


# ---- Gradescope, in the container ----

def test_the_second_unit_s_finished_file_scores_0_in_the_first_assignment(tmp_path, monkeypatch, full_marks):
    results = _gradescope(tmp_path / "ag", {"rotary_alibi.py": SECOND_FINISHED}, monkeypatch, "positional_encodings")
    assert results["score"] == 0, results["output"]
    assert ("This is the positional_encodings assignment: upload positional_encodings.ipynb or .py; you uploaded "
            "rotary_alibi.py, which is the rotary_alibi assignment's.") in results["output"], results["output"]
    assert full_marks.made == []  # nothing graded
    assert {test["name"] for test in results["tests"]} >= {test.id for test in FIRST.rubric.TESTS}


def test_a_file_of_this_unit_s_name_holding_the_other_unit_s_functions_scores_0_and_says_so(
        tmp_path, monkeypatch, full_marks):
    results = _gradescope(tmp_path / "ag", {"positional_encodings.ipynb": notebook([SECOND_FINISHED])}, monkeypatch,
                          "positional_encodings")
    assert results["score"] == 0 and full_marks.made == []
    assert "This is the positional_encodings assignment" in results["output"]
    assert "rotary_alibi assignment's functions" in results["output"], results["output"]


def test_a_bundle_that_names_no_unit_grades_nothing(tmp_path, monkeypatch, full_marks):
    """A run_autograder without AUTOGRADER_UNIT (one edited by hand, or an old bundle) grades nothing: it must
    not guess the unit from what the student uploaded."""
    results = _gradescope(tmp_path / "ag", {"rotary_alibi.py": SECOND_FINISHED}, monkeypatch, None)
    assert results["score"] == 0 and full_marks.made == [], results
    assert "tell your instructor" in results["output"] and "--unit" in results["output"]


def test_this_unit_s_file_beside_the_other_s_is_graded_as_this_unit(tmp_path, monkeypatch, full_marks):
    results = _gradescope(tmp_path / "ag", {"positional_encodings.py": FIRST_FINISHED,
                                            "rotary_alibi.py": SECOND_FINISHED}, monkeypatch, "positional_encodings")
    assert full_marks.made == ["positional_encodings"] and results["score"] == FIRST.rubric.MAX_SCORE
    assert "Graded file: positional_encodings.py" in results["output"]


def test_a_file_of_another_name_is_graded_as_the_bundle_s_unit(tmp_path, monkeypatch, full_marks):
    results = _gradescope(tmp_path / "ag", {"mine.py": SECOND_FINISHED}, monkeypatch, "rotary_alibi")
    assert full_marks.made == ["rotary_alibi"] and results["score"] == SECOND.rubric.MAX_SCORE


# ---- PrairieLearn ----

@pytest.fixture(scope="module")
def questions(tmp_path_factory):
    return prairielearn.main_bundle(tmp_path_factory.mktemp("pl") / "pl", image="someone/grader") / "questions"


def test_each_prairielearn_question_names_its_unit(questions):
    for unit in units.all_units():
        assert (questions / unit.name / "tests" / "unit").read_text().strip() == unit.name


def _prairielearn(root, questions, unit, files):
    _tree(root, "student", files)
    if unit is not None:
        (root / "tests").mkdir()
        (root / "tests" / "unit").write_text((questions / unit / "tests" / "unit").read_text())
    assert prairielearn.run(root) == 0
    return json.loads((root / "results" / "results.json").read_text())


@pytest.mark.parametrize("files", [{"rotary_alibi.py": SECOND_FINISHED},
                                   {"positional_encodings.py": SECOND_FINISHED}], ids=["by_name", "by_functions"])
def test_a_prairielearn_question_of_one_unit_does_not_grade_the_other_s_file(tmp_path, questions, full_marks, files):
    results = _prairielearn(tmp_path / "grade", questions, "positional_encodings", files)
    assert results["gradable"] is False and results["score"] == 0, results
    assert full_marks.made == []
    assert "This is the positional_encodings assignment: upload positional_encodings.ipynb or .py" \
        in results["message"], results["message"]
    assert "rotary_alibi assignment's" in results["message"]


def test_a_prairielearn_question_grades_its_own_unit(tmp_path, questions, full_marks):
    results = _prairielearn(tmp_path / "grade", questions, "rotary_alibi", {"rotary_alibi.py": SECOND_FINISHED})
    assert results["gradable"] is True and results["score"] == 1 and full_marks.made == ["rotary_alibi"]


def test_a_prairielearn_question_that_names_no_unit_grades_nothing(tmp_path, questions, full_marks):
    results = _prairielearn(tmp_path / "grade", questions, None, {"rotary_alibi.py": SECOND_FINISHED})
    assert results["gradable"] is False and full_marks.made == [], results
    assert "tell your instructor" in results["message"] and "tests/unit" in results["message"]
