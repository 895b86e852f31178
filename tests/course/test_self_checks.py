"""The student's `pytest -k <task>` self-checks: green on the reference, red and teaching on the stubs."""

import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import forked_pytest
from autograder.units.positional_encodings import rubric

from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES
from conftest import STUDENT_DIR


def _student_folder(tmp_path, module_text):
    folder = tmp_path / "student"
    shutil.copytree(STUDENT_DIR, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (folder / "positional_encodings.py").write_text(module_text)
    return folder


def _pytest(folder, *args):
    """pytest in ``folder`` with ``args``, forked from a process that has imported torch
    (tests/helpers/forked_pytest.py): the student's own pytest run, without a second's import of torch each time."""
    return forked_pytest.run(folder, "-p", "no:cacheprovider", *args)


def test_self_checks_all_pass_on_the_reference(tmp_path, reference_text):
    """As a student starts them: the command ``python -m pytest`` in the folder."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
                         cwd=_student_folder(tmp_path, reference_text), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


def _said(run):
    """pytest's last line without its time, and the ids of the failed checks: what a run says of the checks."""
    lines = run.stdout.strip().splitlines()
    return (re.sub(r" in [0-9.]+s.*", "", lines[-1] if lines else ""),
            sorted(line.split(" ")[1] for line in lines if line.startswith("FAILED ")))


def test_a_forked_run_says_what_the_command_a_student_types_says(tmp_path, stub_text, reference_text):
    """The forked runs the other tests use (tests/helpers/forked_pytest.py) against ``python -m pytest`` itself: the
    same exit code, the same checks selected, passed and failed, on the stubs and on the reference."""
    for text, args in ((stub_text, ("-k", "t5_bucket")), (stub_text, ("-k", "sinusoidal", "--collect-only", "-q")),
                       (reference_text, ("-k", "shaw"))):
        folder = _student_folder(tmp_path / str(len(args)) / ("stub" if text is stub_text else "reference"), text)
        typed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rf", *args], cwd=folder,
                               capture_output=True, text=True, timeout=120)
        forked = _pytest(folder, "-rf", *args)
        assert forked.returncode == typed.returncode, (forked.stdout[-2000:], typed.stdout[-2000:])
        assert _said(forked) == _said(typed), (forked.stdout[-2000:], typed.stdout[-2000:])


def test_each_task_word_selects_only_that_tasks_checks_and_they_fail_on_the_stub(tmp_path, stub_text):
    folder = _student_folder(tmp_path, stub_text)
    with ThreadPoolExecutor(2) as pool:  # each its own pytest, two at a time: most of each is importing torch
        collected = dict(zip(rubric.TASK_NAMES, pool.map(
            lambda task: _pytest(folder, "-k", task, "--collect-only", "-o", "addopts=", "-q"), rubric.TASK_NAMES)))
    for task, run in collected.items():
        selected = [line for line in run.stdout.splitlines() if "::" in line]
        assert selected, f"-k {task} selects nothing"
        assert all(line.split("::")[0] == f"test_{task}.py" for line in selected), (task, selected)
    run = _pytest(folder, "-k", "t5_bucket")
    assert run.returncode == 1
    assert "Task t5_bucket is not written yet" in run.stdout and "# YOUR CODE HERE" in run.stdout


@pytest.mark.parametrize("mistake_name, task, hint", [
    ("sin_cos_swapped", "sinusoidal", "sin and cos are swapped"),
    ("i_minus_j", "relative_positions", "the distance is i - j"),
    ("length_check_off_by_one", "learned", "L == max_len should work"),
    ("bucket_sign_flipped", "t5_bucket", "the direction is flipped"),
])
def test_a_typical_mistake_fails_its_own_checks_with_a_hint(tmp_path, reference_text, mistake_name, task, hint):
    mistake = next(m for m in MISTAKES if m.name == mistake_name)
    folder = _student_folder(tmp_path, apply(mistake, reference_text))
    run = _pytest(folder, "-k", task)
    assert run.returncode == 1 and hint in run.stdout, run.stdout[-3000:]
    other = next(t for t in rubric.TASK_NAMES if t != task and t != "shaw")
    assert _pytest(folder, "-k", other).returncode == 0


def test_a_table_of_the_wrong_dtype_is_told_its_dtype_not_a_crash_of_the_hint(tmp_path, reference_text):
    folder = _student_folder(tmp_path, reference_text + "\n\n_table = sinusoidal_table\n\n\n"
                             "def sinusoidal_table(*args, **kwargs):\n    return _table(*args, **kwargs).double()\n")
    run = _pytest(folder, "-k", "sinusoidal")
    assert run.returncode == 1
    assert "has dtype torch.float64, expected torch.float32" in run.stdout, run.stdout[-3000:]
    assert "did not match" not in run.stdout and "Likely cause: the values are right: only the dtype" in run.stdout


def test_a_task_whose_helper_is_not_written_says_which_helper(tmp_path, reference_text):
    unwritten = ("\n\ndef clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):\n"
                 "    raise NotImplementedError(\"clipped_relative_positions is not implemented yet\")\n")
    run = _pytest(_student_folder(tmp_path, reference_text + unwritten), "-k", "shaw")
    assert run.returncode == 1
    assert ("Task shaw calls clipped_relative_positions, of task relative_positions, which is not written yet"
            in run.stdout), run.stdout[-3000:]
    assert "Task shaw is not written yet" not in run.stdout


def test_a_cause_is_printed_only_where_the_output_shows_it(tmp_path, reference_text):
    """k/d for 2k/d: the worked example names it (w_1 = 0.1 is its mark); the base check, where it looks like
    nothing known, names no cause (it used to say "use the base argument"), and says what it expects."""
    mistake = next(m for m in MISTAKES if m.name == "k_over_d")
    run = _pytest(_student_folder(tmp_path, apply(mistake, reference_text)), "-k", "sinusoidal")
    assert run.returncode == 1
    assert "Likely cause: w_1 came out as 0.1" in run.stdout, run.stdout[-3000:]
    assert "the base argument is not used" not in run.stdout and "use the base argument" not in run.stdout
    assert "What this check expects: w_k = base ** (-2k / d_model), with the base given." in run.stdout


def test_a_mistake_no_check_knows_is_told_how_the_output_relates_to_the_expected_one(tmp_path, reference_text):
    """A bias of the wrong sign is in no check's list of causes: the check says how its output goes wrong."""
    negated = ("\n\n_bias = t5_bias\n\n\ndef t5_bias(*args, **kwargs):\n    return -_bias(*args, **kwargs)\n")
    run = _pytest(_student_folder(tmp_path, reference_text + negated), "-k", "t5_bias")
    assert run.returncode == 1
    assert "How it goes wrong: every entry has the opposite sign of the expected one" in run.stdout, \
        run.stdout[-3000:]
    assert not [line for line in run.stdout.splitlines() if line.startswith("E") and "Likely cause:" in line]


# The second unit's self-checks, built the same way: green on its reference, each task word its own checks,
# red and telling on the stubs, and the words the lesson gives (rotary, alibi) selecting whole families.
@pytest.fixture(scope="module")
def second_unit(tmp_path_factory):
    from autograder.core import units
    from autograder.course.build import make_stub, strip_markers, student_folder

    unit = units.get("rotary_alibi")
    source = unit.reference_path.read_text(encoding="utf-8")

    def folder(name, text):
        target = tmp_path_factory.mktemp(name) / "student"
        shutil.copytree(student_folder(unit), target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        (target / "rotary_alibi.py").write_text(text)
        return target

    return unit, folder("reference", strip_markers(source)), folder("stubs", make_stub(source, unit))


def test_the_second_units_self_checks_pass_on_its_reference(second_unit):
    _, reference, _ = second_unit
    run = _pytest(reference)
    assert run.returncode == 0 and " passed" in run.stdout and "failed" not in run.stdout, run.stdout[-3000:]


def test_the_second_units_task_words_select_their_own_checks_which_fail_on_the_stubs(second_unit):
    unit, _, stubs = second_unit
    listed = _pytest(stubs, "--collect-only", "-o", "addopts=", "-q")
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    assert ids
    for task in unit.rubric.TASK_NAMES:  # -k TASK matches a test id that holds TASK: its own file's, and no other
        assert [i for i in ids if task in i] == [i for i in ids if i.startswith(f"test_{task}.py::")] != [], task
    for word, tasks in (("rotary", {"rotary_angles", "apply_rotary"}), ("alibi", {"alibi_slopes", "alibi_bias"})):
        assert {i.split("::")[0][5:-3] for i in ids if word in i} == tasks, word
    run = _pytest(stubs)
    assert run.returncode == 1
    for task in unit.rubric.TASK_NAMES:
        assert f"Task {task} is not written yet" in run.stdout, (task, run.stdout[-2000:])


def test_a_task_word_inside_another_tasks_name_still_selects_its_own_checks_alone(tmp_path):
    """The third unit's ntk_inverse_frequencies is part of dynamic_ntk_inverse_frequencies: pytest's -k, which
    matches parts of names, would run both; the folder's conftest keeps a task word to its own file. Every task of
    every unit, on the blank stubs: its own checks only, and all of them."""
    from autograder.core import units
    from autograder.course.build import make_stub, student_folder

    runs = {}
    for unit in units.all_units():
        folder = tmp_path / unit.name
        shutil.copytree(student_folder(unit), folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        (folder / f"{unit.module_name}.py").write_text(make_stub(unit.reference_path.read_text(), unit))
        everything = _pytest(folder, "--collect-only", "-o", "addopts=", "-q")
        for task in unit.rubric.TASK_NAMES:
            runs[unit.name, task] = folder, [line for line in everything.stdout.splitlines()
                                             if line.startswith(f"test_{task}.py::")]
    assert any(a != b and a in b for _, a in runs for _, b in runs), "no task name is part of another's here"
    with ThreadPoolExecutor(2) as pool:
        collected = dict(zip(runs, pool.map(lambda key: _pytest(runs[key][0], "-k", key[1], "--collect-only", "-o",
                                                                  "addopts=", "-q"), runs)))
    for (name, task), run in collected.items():
        selected = [line for line in run.stdout.splitlines() if "::" in line]
        assert selected == runs[name, task][1] != [], (name, task, run.stdout[-2000:])
    run = _pytest(tmp_path / "long_context", "-k", "ntk_inverse_frequencies")
    assert run.returncode == 1 and "Task ntk_inverse_frequencies is not written yet" in run.stdout
    assert "dynamic_ntk_inverse_frequencies" not in run.stdout, run.stdout[-2000:]
