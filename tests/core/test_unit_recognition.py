"""A submission says which unit it is (autograder/core/recognize.py), and every way in listens.

Before, ``grade class_lc --unit rotary_alibi`` scored every third-unit notebook, a blank one included, 32/100:
the finished rotation the third unit hands its students earned the second unit's rotation tasks, and nothing said
these were long_context submissions. Here every ordered pair of units (X's reference and blank stubs, as .py and
as .ipynb, graded as Y) scores nothing and its row says what it looks like, through the command line; the
nbgrader route is tests/ways_in/test_nbgrader_wrong_unit.py. Code a unit hands out finished earns nothing in a submission
of the unit it comes from. The recognition itself is checked on generated mixes (hypothesis).
"""

import ast
import csv
import functools
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import recognize, units
from autograder.course.build import make_stub
from autograder.course.notebook import build_notebook, function_source, notebook_text
from autograder.intake.load import Submission, load

ROOT = Path(__file__).resolve().parents[2]
UNITS = units.all_units()
NAMES = [unit.name for unit in UNITS]
PAIRS = [(mine, graded_as) for mine, graded_as in itertools.permutations(NAMES, 2)]
# the unit that hands out another's functions finished, and that other: the case this issue found
BORROWER = next(unit for unit in UNITS if unit.borrowed)
LENDER = units.get(next(iter(BORROWER.borrowed)))


@functools.lru_cache(maxsize=None)
def reference_text(unit):
    return unit.finished_reference


@functools.lru_cache(maxsize=None)
def stub_text(unit):
    return make_stub(unit.reference_path.read_text(encoding="utf-8"), unit)


def notebook_of(unit, code):
    """The unit's course notebook (as `build` makes it) with each solution cell holding its function from
    ``code``: the reference's, or the blank stubs'."""
    return notebook_text(build_notebook(unit, unit.lesson_path.read_text(encoding="utf-8"), code))


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def entries(unit, folder, file_name=None):
    """{entry name: path} of ``unit``'s reference and blank stubs, as .py and as .ipynb, each in a student folder
    of its own; the files named ``file_name`` + suffix where given (a renamed file), else after the unit."""
    stem = file_name or unit.module_name
    made = {}
    for kind, code in (("reference", reference_text(unit)), ("blank", stub_text(unit))):
        made[f"{unit.name}-{kind}-py"] = write(folder / f"{unit.name}-{kind}-py" / f"{stem}.py", code)
        made[f"{unit.name}-{kind}-ipynb"] = write(folder / f"{unit.name}-{kind}-ipynb" / f"{stem}.ipynb",
                                                  notebook_of(unit, code))
    return made


# --- The rule, on the course's own files ---

@pytest.mark.parametrize("unit", NAMES)
@pytest.mark.parametrize("renamed", [False, True], ids=["own name", "renamed"])
def test_a_unit_s_reference_and_blank_stubs_are_recognised_as_it_and_refused_as_any_other(tmp_path, unit, renamed):
    unit = units.get(unit)
    others = [other for other in NAMES if other != unit.name]
    for name, path in entries(unit, tmp_path, file_name=others[0] if renamed else None).items():
        recognition = recognize.recognise(load(path))
        assert recognition.best() == unit.name, (name, recognition.evidence)
        assert recognition.says_other(unit.name) is None, (name, recognition.evidence)
        for other in others:  # graded as any other unit, even under that unit's file name
            assert recognition.says_other(other) == unit.name, (name, other, recognition.evidence)


def test_the_finished_code_a_unit_hands_out_is_no_evidence_for_the_unit_it_comes_from():
    """The borrowing unit's notebook defines the lender's functions in its given cell: that says the borrower."""
    given = "\n".join(BORROWER.given_code(other) for other in BORROWER.borrowed)
    submission = Submission("x", Path("x.py"), [{"label": "x.py", "source": given}], [])
    recognition = recognize.recognise(submission)
    assert recognition.evidence[LENDER.name] == 0
    assert recognition.evidence[BORROWER.name] > 0


def test_an_empty_or_unrecognisable_file_is_graded_as_the_unit_it_is_given(tmp_path):
    for text in ("", "x = 1\n", "def helper(a):\n    return a\n", "def broken(:\n"):
        recognition = recognize.recognise(load(write(tmp_path / "work.py", text)))
        assert recognition.best() is None
        assert all(recognition.says_other(name) is None for name in NAMES)


def test_a_cell_that_does_not_parse_still_says_what_it_defines():
    unit = UNITS[0]
    functions = list(unit.rubric.TASK_OF_FUNCTION)[:3]
    chunks = [{"label": f"cell {n}", "source": f"def {name}(x):\n    return (x\n"} for n, name in enumerate(functions)]
    recognition = recognize.recognise(Submission("s", Path("s.ipynb"), chunks, []))
    assert recognition.best() == unit.name
    assert recognition.evidence[unit.name] == len(functions)


@settings(max_examples=200, deadline=None)
@given(sources=st.lists(st.text(max_size=300) | st.sampled_from(
    ["def apply_rotary(x):\n    return " + "+".join(["x"] * 20000) + "\n", "def f(:\n", "\x00", "class rope_scores(\n"]),
    max_size=5))
def test_recognition_never_fails_on_what_a_file_holds(sources):
    chunks = [{"label": f"cell {n}", "source": source} for n, source in enumerate(sources)]
    submission = Submission("s", Path("s.ipynb"), chunks, [], grade_ids=("rope_scores_values", "x" * 50))
    recognition = recognize.recognise(submission)
    assert all(recognition.says_other(name) in [None, *NAMES] for name in NAMES)
    for unit in UNITS:
        assert isinstance(recognize.handed_out(unit, submission), dict)


# --- Generated mixes ---

def own_functions(unit):
    """The unit's task functions that no other unit hands out: the ones that speak for it alone."""
    lent = {name for lender, name in recognize.handed_out_forms() if lender == unit.name}
    return [name for name in unit.rubric.TASK_OF_FUNCTION if name not in lent]


@functools.lru_cache(maxsize=None)
def _given_cells(excluding):
    return tuple((f"given by {unit.name}", unit.given_code(other)) for unit in UNITS
                 if unit.name != excluding for other in unit.borrowed)


def given_cells(excluding):
    """Every given cell a borrowing unit other than ``excluding`` hands out, as a chunk."""
    return [{"label": label, "source": source} for label, source in _given_cells(excluding)]


identifiers = st.from_regex(r"[a-z][a-z0-9_]{2,12}", fullmatch=True).filter(
    lambda name: not any(name in unit.rubric.TASK_OF_FUNCTION for unit in UNITS) and name not in
    {"def", "class", "for", "and", "not", "with", "try", "else", "elif", "from", "pass", "del", "if", "in",
     "is", "or", "as", "None", "True", "False", "async", "await", "while", "raise", "return", "yield", "break",
     "import", "global", "lambda", "assert", "except", "finally", "continue", "nonlocal"})


@st.composite
def mixes(draw, least):
    """(unit, its own functions drawn, a Submission): at least ``least`` of the unit's own functions, each from
    its reference or its stubs, one maybe broken by a syntax error, with junk functions, maybe another unit's given
    cell, cells shuffled, and the file named after any unit or anything."""
    unit = draw(st.sampled_from(UNITS))
    own = own_functions(unit)
    chosen = draw(st.lists(st.sampled_from(own), min_size=min(least, len(own)), unique=True))
    chunks = []
    for name in chosen:
        code = draw(st.sampled_from([reference_text(unit), stub_text(unit)]))
        chunks.append({"label": name, "source": function_source(code, name)})
    if chunks and draw(st.booleans()):
        chunks[0]["source"] += "\n    return (\n"  # a syntax error in that cell
    for junk in draw(st.lists(identifiers, max_size=4, unique=True)):
        chunks.append({"label": junk, "source": f"def {junk}(x):\n    return x + 1\n"})
    if draw(st.booleans()):
        chunks += given_cells(excluding=unit.name)
    chunks = draw(st.permutations(chunks))
    stem = draw(st.sampled_from(NAMES + ["submission", "hw3", "my_work"]))
    suffix = draw(st.sampled_from([".py", ".ipynb"]))
    return unit, chosen, Submission(stem, Path(stem + suffix), list(chunks), [])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=mixes(least=1))
def test_a_unit_s_own_code_is_never_refused_under_that_unit(mix):
    unit, chosen, submission = mix
    assert recognize.recognise(submission).says_other(unit.name) is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=mixes(least=3))
def test_the_unit_whose_own_functions_dominate_is_the_one_recognised(mix):
    unit, chosen, submission = mix
    assert recognize.recognise(submission).best() == unit.name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=mixes(least=4))
def test_four_of_a_unit_s_own_functions_are_refused_under_any_other_unit(mix):
    """Whatever the file is called and whatever else it holds (junk, another unit's given cell)."""
    unit, chosen, submission = mix
    recognition = recognize.recognise(submission)
    for other in NAMES:
        if other != unit.name:
            assert recognition.says_other(other) == unit.name, (other, recognition.evidence)


# --- Code a unit hands out finished ---

class _Renamed(ast.NodeTransformer):
    def __init__(self, names):
        self.names = names

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.names.get(node.arg, node.arg)
        return node


def given_cell_renamed(names):
    """The lender's functions as the borrower hands them out, banner kept, their local names changed."""
    text = BORROWER.given_code(LENDER.name)
    lines = text.splitlines()
    banner = [line for line in lines if line.startswith("#")]
    tree = _Renamed(names).visit(ast.parse(text))
    return "\n".join(banner[:2]) + "\n" + ast.unparse(tree) + "\n" + recognize.GIVEN_END + "\n"


def lent_functions():
    return sorted(name for lender, name in recognize.handed_out_forms() if lender == LENDER.name)


@settings(max_examples=40, deadline=None)
@given(new=st.lists(identifiers, min_size=30, max_size=30, unique=True))
def test_the_given_cell_pasted_into_the_lending_unit_s_submission_earns_nothing_even_renamed(new):
    tree = ast.parse(BORROWER.given_code(LENDER.name))
    local = sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
                   | {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)})
    renamed = given_cell_renamed(dict(zip(local, new)))
    submission = Submission("s", Path("s.py"), [{"label": "cell 1", "source": stub_text(LENDER)},
                                               {"label": "cell 2", "source": renamed}], [])
    found = recognize.handed_out(LENDER, submission)
    assert set(found) == {LENDER.rubric.TASK_OF_FUNCTION[name] for name in lent_functions()}
    assert all(BORROWER.name in message for message in found.values())


def test_the_lending_unit_s_own_reference_and_a_changed_copy_are_the_student_s_own():
    assert recognize.handed_out(LENDER, load_text(reference_text(LENDER))) == {}
    changed = BORROWER.given_code(LENDER.name).replace("return out.to(x.dtype)", "return out.to(x.dtype) + 0")
    found = recognize.handed_out(LENDER, load_text(stub_text(LENDER) + changed))
    assert len(found) == len(lent_functions()) - 1


def load_text(text):
    return Submission("s", Path("s.py"), [{"label": "s.py", "source": text}], [])


# --- Through the command line: every ordered pair, .py and .ipynb ---

def _run(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("graded_as", NAMES)
def test_a_class_graded_as_one_unit_refuses_every_other_unit_s_reference_and_stubs_with_a_row_each(tmp_path,
                                                                                                   graded_as):
    unit = units.get(graded_as)
    folder = tmp_path / "class"
    made = {}
    for other in UNITS:
        if other.name != graded_as:
            made.update(entries(other, folder))  # named after their own unit
            renamed = entries(other, tmp_path / "renamed", file_name=unit.module_name)  # and after this one
            for name, path in renamed.items():
                target = folder / f"{name}-renamed" / path.name
                write(target, path.read_text(encoding="utf-8"))
                made[f"{name}-renamed"] = target
    write(folder / "own-blank" / f"{unit.module_name}.ipynb", notebook_of(unit, stub_text(unit)))
    pasted = None
    if unit.name == LENDER.name:  # this unit's blank stubs with the borrower's given cell pasted in at the end
        pasted = write(folder / "pasted-given" / f"{unit.module_name}.py",
                       stub_text(unit) + "\n\n" + BORROWER.given_code(unit.name))
    out = tmp_path / "out"
    run = _run("grade", str(folder), "--unit", graded_as, "--out", str(out), "--jobs", "2")
    assert run.returncode == 0, run.stderr[-3000:]
    with open(out / "grades.csv", newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {path.parent.name for path in made.values()} | {"own-blank"} | (
        {"pasted-given"} if pasted else set())
    for name in made:
        row = rows[name]
        assert float(row["total"]) == 0, (name, row)
        saved = json.loads((out / f"{name}.json").read_text())
        words = saved["output"]
        whose = name.split("-")[0]
        assert f"this looks like a {whose} submission" in words, (name, words)
        assert f"the class is graded as {graded_as}" in words, (name, words)
        assert all(test["score"] == 0 for test in saved["tests"])
    own = json.loads((out / "own-blank.json").read_text())
    assert "looks like" not in own["output"]
    if pasted:
        saved = json.loads((out / "pasted-given.json").read_text())
        lent = {LENDER.rubric.TASK_OF_FUNCTION[name] for name in lent_functions()}
        for test in saved["tests"]:
            if test["number"] in lent:
                assert test["score"] == 0 and "hands its students" in test["output"], test


# --- Without --unit: the same recognition ---

def test_without_unit_a_class_is_graded_as_the_unit_its_entries_say_whatever_their_names(tmp_path):
    from autograder.ways_in.cli import unit_of_paths

    for unit in UNITS:
        folder = tmp_path / unit.name
        for name, path in entries(unit, tmp_path / f"{unit.name}-made", file_name="homework").items():
            write(folder / name / path.name, path.read_text(encoding="utf-8"))
        assert unit_of_paths([str(folder)]).name == unit.name


def test_without_unit_a_class_of_several_units_or_of_none_is_refused_with_what_it_holds(tmp_path):
    from autograder.ways_in.cli import UnitUnknown, unit_of_paths

    mixed = tmp_path / "mixed"
    for unit in UNITS[:2]:
        for name, path in entries(unit, tmp_path / "made").items():
            write(mixed / name / path.name, path.read_text(encoding="utf-8"))
    with pytest.raises(UnitUnknown, match=rf"several units: 4 of {NAMES[0]}, 4 of {NAMES[1]}|several units: 4 of "
                                          rf"{NAMES[1]}, 4 of {NAMES[0]}"):
        unit_of_paths([str(mixed)])
    write(tmp_path / "none" / "a.py", "def helper():\n    return 1\n")
    with pytest.raises(UnitUnknown, match="no entry says which unit"):
        unit_of_paths([str(tmp_path / "none")])


# --- The platforms: the same recognition ---

@pytest.mark.parametrize("mine, graded_as", PAIRS)
def test_a_platform_refuses_another_unit_s_work_under_any_name_and_grades_its_own_under_another_s_name(
        tmp_path, mine, graded_as):
    from autograder.ways_in.platform import _find_file, _other_unit_held

    mine, graded_as = units.get(mine), units.get(graded_as)
    for kind, code in (("reference", reference_text(mine)), ("blank", stub_text(mine))):
        # another unit's work, renamed to this assignment's file: refused by what it holds
        upload = write(tmp_path / f"{kind}-renamed" / f"{graded_as.module_name}.ipynb", notebook_of(mine, code))
        path, refusal = _find_file(upload.parent, graded_as)
        assert refusal is None
        refused = _other_unit_held(graded_as, load(path), path.name)
        assert refused is not None and refused.score == 0
        assert f"the {mine.name} assignment's functions" in refused.notes[0], refused.notes
        # this assignment's own work saved under the other unit's name: graded, not refused
        own = write(tmp_path / f"{kind}-own" / f"{mine.module_name}.py",
                    reference_text(graded_as) if kind == "reference" else stub_text(graded_as))
        path, refusal = _find_file(own.parent, graded_as)
        assert refusal is None, refusal.notes
        assert _other_unit_held(graded_as, load(path), path.name) is None
