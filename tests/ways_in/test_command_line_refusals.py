"""The instructor's slips are refused before anything is graded: a limit, a job count, a seed or a step count out of
its range is exit status 2 with the flag named, never a class graded under it (a limit of -1 s failed every test of
every student, blamed on them). And a path with nothing readable in it says so, not that --unit is missing.

The ranges, and why each bound (docs/instructors.md, "Limits"): seconds above 0 and at most an hour (40000 is
milliseconds typed for seconds), memory above 0 and at most 1024 GiB (6144 is MiB typed for GiB), 1 to 256 jobs,
seeds 0 .. 2**31 - 1 (those a result records), 1 to 100000 training steps.
"""

import contextlib
import io
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, example, given, settings, strategies as st

from autograder.ways_in import cli

ROOT = Path(__file__).resolve().parents[2]

# (flag, parsed attribute, low, high, low itself allowed, whole numbers only): what every value must fall in.
GRADING = [("--timeout", "timeout", 0, 3600, False, False), ("--task-timeout", "task_timeout", 0, 3600, False, False),
           ("--memory-gb", "memory_gb", 0, 1024, False, False), ("--jobs", "jobs", 1, 256, True, True),
           ("-j", "jobs", 1, 256, True, True), ("--seed", "seed", 0, 2**31 - 1, True, True)]
CAPSTONE = [("--seed", "seed", 0, 2**31 - 1, True, True), ("--steps", "steps", 1, 100_000, True, True),
            ("--classifier-steps", "classifier_steps", 1, 100_000, True, True)]
FLAGS = ([("grade", *flag) for flag in GRADING] + [("demo", *flag) for flag in GRADING]
         + [("capstone", *flag) for flag in CAPSTONE])
FRONT = {"grade": ["grade", "alice.py"], "demo": ["demo"], "capstone": ["capstone"]}

# What an instructor might type: numbers of every form (and their text), the words floats parse, and anything.
VALUES = st.one_of(
    st.integers().map(str),
    st.integers(min_value=-5, max_value=300).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(min_value=-10, max_value=5000).map(str),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e999", "-1e999", "0", "-0", "0.0", "1e-320",
                     "3600", "3600.0000001", "1024", "256", "257", "2147483647", "2147483648", "1_000", " 7 ", "0x10",
                     "", " ", "١٢", "½", "40s", "1,5", "None", "True", "9" * 5000]),
    st.text(max_size=12),
)


def parse(argv):
    """(parsed arguments or None, exit status or None, what argparse wrote to stderr)."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
        try:
            return cli.build_parser().parse_args(argv), None, said.getvalue()
        except SystemExit as exit:
            return None, exit.code, said.getvalue()


@pytest.mark.parametrize("command, flag, attribute, low, high, low_allowed, whole", FLAGS,
                         ids=[f"{command} {flag}" for command, flag, *_ in FLAGS])
@settings(max_examples=150, deadline=None)
@given(value=VALUES, joined=st.booleans())
@example(value="-1", joined=False)
@example(value="0", joined=True)
@example(value="nan", joined=True)
@example(value="inf", joined=True)
def test_every_value_is_accepted_within_its_range_or_refused_with_the_flag_named(command, flag, attribute, low, high,
                                                                               low_allowed, whole, value, joined):
    written = [f"-j{value}"] if flag == "-j" else [f"{flag}={value}"] if joined else [flag, value]
    argv = FRONT[command] + written
    args, status, said = parse(argv)
    assert "Traceback" not in said
    if args is None:
        assert status == 2, (argv, status, said)
        named = {"-j": "--jobs/-j", "--jobs": "--jobs/-j"}.get(flag, flag)
        assert f"argument {named}" in said, said
        return
    got = getattr(args, attribute)
    assert isinstance(got, int if whole else float) and not isinstance(got, bool)
    assert math.isfinite(got) and (low <= got if low_allowed else low < got) and got <= high, (argv, got)


@pytest.mark.parametrize("command, flag, attribute, low, high, low_allowed, whole", FLAGS,
                         ids=[f"{command} {flag}" for command, flag, *_ in FLAGS])
@settings(max_examples=100, deadline=None)
@given(number=st.one_of(st.floats(), st.integers(min_value=-10, max_value=10**12), st.sampled_from([0.0, -0.0])))
def test_a_number_is_taken_as_typed_exactly_when_it_lies_in_its_range(command, flag, attribute, low, high,
                                                                     low_allowed, whole, number):
    written = str(number)
    args, status, said = parse(FRONT[command] + [f"{flag}={written}" if flag != "-j" else f"-j{written}"])
    inside = (math.isfinite(number) and (low <= number if low_allowed else low < number) and number <= high
              and (not whole or isinstance(number, int)))
    if inside:
        assert status is None and getattr(args, attribute) == number, (written, said)
    else:
        assert status == 2 and "must be" in said, (written, said)


@pytest.mark.parametrize("flags, named", [
    (["--timeout", "-1"], "--timeout"), (["--task-timeout", "0"], "--task-timeout"), (["--jobs", "0"], "--jobs"),
    (["--timeout", "40000"], "--timeout"), (["--memory-gb", "6144"], "--memory-gb"),
    (["--timeout", "nan"], "--timeout"), (["--memory-gb", "inf"], "--memory-gb"), (["--seed", "-5"], "--seed"),
    (["--jobs", "2.5"], "--jobs"),
])
def test_a_class_is_never_graded_under_a_limit_out_of_range(tmp_path, reference_text, flags, named):
    (tmp_path / "alice.py").write_text(reference_text)
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "alice.py"), "--out",
                          str(tmp_path / "results"), *flags], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and named in run.stderr.splitlines()[-1], run.stderr
    assert "must be" in run.stderr.splitlines()[-1]
    assert not (tmp_path / "results").exists()  # refused before anything was graded or written


def test_the_defaults_are_inside_the_ranges():
    args, status, said = parse(["grade", "alice.py"])
    assert status is None, said
    assert 0 < args.task_timeout <= args.timeout <= 3600 and 0 < args.memory_gb <= 1024 and 1 <= args.jobs <= 256


# --- nothing readable: said as such, not as a missing --unit -----------------------------------------------------

def _grade(*paths, unit=None):
    return subprocess.run([sys.executable, "-m", "autograder", "grade", *map(str, paths),
                           *(["--unit", unit] if unit else [])], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_an_empty_folder_is_nothing_to_grade_with_or_without_unit(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    for unit in (None, "rotary_alibi"):
        run = _grade(empty, unit=unit)
        assert run.returncode == 2 and "Traceback" not in run.stderr
        assert f"nothing to grade in {empty}" in run.stderr, run.stderr
        assert "--unit" not in run.stderr


def test_a_folder_of_entries_that_are_not_submissions_lists_each_with_why(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    run = _grade(tmp_path)
    assert run.returncode == 2 and f"nothing to grade in {tmp_path}" in run.stderr, run.stderr
    assert "notes.txt: not a .py or .ipynb file" in run.stderr and ".ipynb_checkpoints: its name starts" in run.stderr


def _is_utf8(data):
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=15, deadline=None)
@given(text=st.text(st.characters(min_codepoint=0xA0, max_codepoint=0xFF), min_size=1, max_size=20),
       notebook=st.booleans())
def test_a_file_that_is_not_utf8_is_said_so_in_loads_words_not_asked_for_unit(tmp_path_factory, text, notebook):
    folder = tmp_path_factory.mktemp("latin")
    name = "essay.ipynb" if notebook else "essay.py"
    data = f"def f():\n    return '{text}'\n".encode("latin-1")
    # Some latin-1 texts are UTF-8 too ("\xc2\xa0" is a no-break space in both): those are readable, not asked here.
    assume(not _is_utf8(data))
    (folder / name).write_bytes(data)
    run = _grade(folder / name)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "nothing could be read" in run.stderr and f"{name} is not UTF-8" in run.stderr, run.stderr
    assert "say which unit" not in run.stderr


def test_a_readable_file_of_no_unit_still_asks_for_unit(tmp_path):
    (tmp_path / "essay.py").write_text("x = 1\n")
    run = _grade(tmp_path / "essay.py")
    assert run.returncode == 2 and "--unit" in run.stderr and "nothing could be read" not in run.stderr, run.stderr
