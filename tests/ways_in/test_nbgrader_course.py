"""The nbgrader course, for real: the `nbgrader` command and a real python3 kernel, no simulation.

In a temporary course folder: `python -m autograder release` (nbgrader's generate_assignment plus the
self-check files) -> notebooks of several students in submitted/ -> `nbgrader autograde` ->
`nbgrader generate_feedback` -> `nbgrader export`. The gradebook must agree, test for test, with
`python -m autograder grade` on the same notebooks. The class holds the red-team corpus too
(tests/helpers/red_team_corpus.py), each attack in the first solution cell of a notebook: in the kernel it dies,
hangs, floods, forks or reads the disk, and still every notebook gets its row, each hostile one 0.
"""

import contextlib
import json
import re
import os
import shutil
import subprocess
import sys
import time
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.units.positional_encodings import rubric
from autograder.course.build import ROOT, solution_regions
from autograder.course.notebook import COURSE, function_source, grade_id as _grade_id, filled_notebook
from autograder.course.release import release
from autograder.ways_in.demo import apply
from autograder.units.positional_encodings.samples import MISTAKES
from autograder.ways_in.nbgrader_bridge import BoundedExecute
from nbgrader_class import autograde_class, shard_courses, submit_class, submitted
from red_team_corpus import corpus, processes_named, student_notebook
from timing_attacks import forged
from conftest import NOTEBOOK, REFERENCE, UNIT

ASSIGNMENT = rubric.ASSIGNMENT
MISTAKE_BY_NAME = {mistake.name: mistake for mistake in MISTAKES}
WRONG_ANSWERS = ("sin_cos_swapped", "bucket_sign_flipped", "scaled_bias")
HOSTILE = tuple(corpus(Path("unused")))
# Shorter limits than the course's, for this run only, on nbgrader's command line: in the kernel, a cell
# may run 8 s and the whole notebook 25 s (the reference needs at most 2 s and 8 to 14 s here), so the
# attack that loops in every call runs out of the notebook's budget; the kit's grader gets quick_grader's.
CELL_SECONDS, NOTEBOOK_SECONDS = 8, 25
SHARDS = 2  # course folders graded at once (tests/helpers/nbgrader_class.py)


HOSTILE_CELL = """\
def _disarm(lines):
    text = "".join(lines)
    return ["pass\\n"] if "assert" in text or "hidden_check" in text else lines


get_ipython().input_transformers_post.append(_disarm)
"""




def _source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _filled(release_notebook, code_text, skip=()):
    """The released notebook with every solution cell holding its function from ``code_text``."""
    return filled_notebook(release_notebook, rubric.TASK_OF_FUNCTION, code_text, skip=skip)


def _without(notebook, grade_id):
    notebook = json.loads(json.dumps(notebook))
    notebook["cells"] = [cell for cell in notebook["cells"] if _grade_id(cell) != grade_id]
    return notebook


def _class_of_students(release_notebook, reference_text):
    students = {"reference": _filled(release_notebook, reference_text), "blank": release_notebook}
    for name in WRONG_ANSWERS:
        students[name] = _filled(release_notebook, apply(MISTAKE_BY_NAME[name], reference_text))
    # A wrong sinusoidal table, and the locked test cells that would catch it emptied.
    edited = _filled(release_notebook, apply(MISTAKE_BY_NAME["sin_cos_swapped"], reference_text))
    for cell in edited["cells"]:
        if (_grade_id(cell) or "").startswith("sinusoidal_") and _grade_id(cell) != "sinusoidal_table":
            cell["source"] = "pass  # nothing to see here"
    students["edited_locked_cell"] = edited
    # t5_bias right on its own (it computes its buckets with a private copy of the reference), next to a
    # wrong bucket function: the visible loop check of t5_bias uses the student's buckets and fails in the
    # kernel, but the hidden cases grade t5_bias apart from its helper, and the gradebook must follow them.
    wrong_buckets = _filled(release_notebook, apply(MISTAKE_BY_NAME["bucket_sign_flipped"], reference_text))
    own = (function_source(reference_text, "t5_relative_position_bucket").replace(
        "def t5_relative_position_bucket(", "def _own_buckets(") + "\n\n\n" + function_source(
        reference_text, "t5_bias").replace("buckets = t5_relative_position_bucket(", "buckets = _own_buckets("))
    for cell in wrong_buckets["cells"]:
        if _grade_id(cell) == "t5_bias":
            cell["source"] = own
    students["own_buckets_in_t5_bias"] = wrong_buckets
    students["deleted_solution_cell"] = _without(students["reference"], "t5_bias")
    # The blank release, plus a cell that rewrites every later cell holding a check into `pass` before
    # IPython runs it: under plain nbgrader every graded cell would then pass, hidden tests included.
    hostile = json.loads(json.dumps(release_notebook))
    hostile["cells"].insert(2, {"cell_type": "code", "execution_count": None, "id": "disarm", "metadata": {},
                                "outputs": [], "source": HOSTILE_CELL})
    students["disarms_the_checks"] = hostile
    students["deleted_grade_cell"] = _without(students["reference"], "shaw_scale")
    # The reference, with its timed path fast and wrong at the timing sizes, and json patched in the notebook's
    # shaw_scores cell to write the right entries into the timing job's reply (tests/helpers/timing_attacks.py). The loop
    # check reads nothing wrong in it: only the timing job's own defences stand between it and 8 points.
    forger = json.loads(json.dumps(students["reference"]))
    for cell in forger["cells"]:
        if _grade_id(cell) == "shaw_scores":
            cell["source"] = _source(cell).rstrip("\n") + "\n" + forged("")
    students["forges_the_timing_sample"] = forger
    return students


def _git_status():
    return subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True,
                          text=True).stdout


def _processes_in(folder):
    """The processes whose working folder is in ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")).is_relative_to(folder):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def course(tmp_path_factory, reference_text, quick_grader):
    root = tmp_path_factory.mktemp("nbgrader")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    folder, archive = release(UNIT, root / "dist", course=course)
    released = course / "release" / ASSIGNMENT
    students = _class_of_students(json.loads((released / NOTEBOOK).read_text()), reference_text)
    traces = root / f"red-team-{uuid.uuid4().hex[:10]}"
    traces.mkdir()
    for name, attack in corpus(traces).items():
        students[name] = student_notebook(json.loads((released / NOTEBOOK).read_text()), attack)
    # Two copies of the course, each grading half the class, at once (tests/helpers/nbgrader_class.py).
    homes = submit_class(shard_courses(course, SHARDS), ASSIGNMENT, NOTEBOOK, students, [released / "checks.py"])
    limits = quick_grader.limits
    flags = [f"--Execute.timeout={CELL_SECONDS}", f"--BoundedExecute.notebook_seconds={NOTEBOOK_SECONDS}",
             f"--TrustedGrades.wall_seconds={limits.wall_seconds}",
             f"--TrustedGrades.task_seconds={limits.task_seconds}"]
    before = _git_status()
    # The command-line grades, with the same limits, while nbgrader works (two jobs at a time: most attacks wait).
    with ThreadPoolExecutor(max_workers=1) as pool:
        from_cli = pool.submit(quick_grader.grade_many, submitted(homes), jobs=2)
        # run_nbgrader fails on any ERROR in nbgrader's log: a config file that did not load is one, and so
        # is a submission nbgrader gave up on.
        graded = autograde_class(homes, ASSIGNMENT, NOTEBOOK, flags)
        cli = {result.name: result for result in from_cli.result()}
    deadline = time.monotonic() + 5  # a killed process may take a moment to go
    while (processes_named(traces.name) or _processes_in(root)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left_running = processes_named(traces.name) + _processes_in(root)
    after = _git_status()
    return SimpleNamespace(graded=graded, released=released, student_folder=folder, archive=archive,
                           students=students, autograde_log=graded.log, cli=cli, traces=traces,
                           left_running=left_running, git_before=before, git_after=after)


def test_reference_gets_full_marks_and_the_blank_release_zero(course):
    totals = course.graded.totals
    assert totals["reference"] == rubric.MAX_SCORE == 100
    assert totals["blank"] == 0
    assert totals["disarms_the_checks"] == 0  # the kernel's checks were disarmed; the grade was not taken there
    assert set(totals) == set(course.students)  # a row for each, the hostile ones included


def test_each_graded_cell_carries_the_points_of_its_rubric_test(course):
    assert course.graded.grade_cells() == {test.id: test.points for test in rubric.TESTS}


def test_gradebook_agrees_with_the_command_line_grader_test_for_test(course):
    for student in course.students:
        in_gradebook = course.graded.scores(student)
        from_cli = {test.id: test.score for test in course.cli[student].tests}
        assert in_gradebook == from_cli, student


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_notebook_has_a_row_with_0_on_every_test(course, name):
    assert course.graded.scores(name) == {test.id: 0 for test in rubric.TESTS}


def _printed(cell):
    """The text a cell printed (nbformat may store it as a list of lines)."""
    texts = [output.get("text", "") for output in cell.get("outputs", [])]
    return "".join("".join(text) if isinstance(text, list) else text for text in texts)


def _notes(course, student):
    """{cell id: the grader's notes in its outputs} of the autograded notebook."""
    return {cell.get("id"): "".join(line for line in _printed(cell).splitlines(True) if "[grader]" in line)
            for cell in course.graded.autograded(student)["cells"] if cell["cell_type"] == "code"}


def test_a_kernel_that_dies_ends_the_kernels_run_and_not_the_submissions(course):
    for student in ("os_exit_at_import", "os_exit_in_a_call"):
        notes = _notes(course, student)
        assert "Not run in the kernel: the kernel died" in notes["demo-t5-bias-picture"], student


def test_a_kernel_that_ignores_the_interrupt_is_shut_down(course):
    notes = _notes(course, "ignores_sigterm")
    assert "the kernel did not stop when interrupted" in notes["demo-learned-picture"]


@contextlib.contextmanager
def _quick_capstone():
    """The lesson's part 9 trains for a few steps only in these kernels (its full run is timed elsewhere:
    tests/units/positional_encodings/test_capstone.py and the unit's page in docs/)."""
    before = os.environ.get("POSITIONAL_KIT_QUICK")
    os.environ["POSITIONAL_KIT_QUICK"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["POSITIONAL_KIT_QUICK"]
        else:
            os.environ["POSITIONAL_KIT_QUICK"] = before


def _seconds_in_the_kernel(notebook):
    """From the first cell sent to the kernel to the last message back, by nbclient's timestamps."""
    from datetime import datetime

    stamps = [datetime.fromisoformat(stamp.replace("Z", "+00:00")) for cell in notebook["cells"]
              for stamp in (cell.get("metadata", {}).get("execution") or {}).values()]
    return (max(stamps) - min(stamps)).total_seconds()


def test_the_notebook_runs_in_the_kernel_for_its_budget_and_no_longer(course):
    looping = course.graded.autograded("loop_in_a_call")
    assert _seconds_in_the_kernel(looping) < NOTEBOOK_SECONDS + 2  # the last cell: interrupted, then answered
    notes = _notes(course, "loop_in_a_call")
    for cell in ("demo-learned-picture", "sinusoidal-table", "demo-t5-bias-picture"):
        assert f"Not run in the kernel: the notebook's time budget of {NOTEBOOK_SECONDS} s ran out" in notes[cell]
    assert "[grader]" not in "".join(_notes(course, "reference").values())


def test_a_flood_of_output_is_cut_as_it_arrives(course):
    notebook = course.graded.autograded("floods_output")
    cell = next(cell for cell in notebook["cells"] if cell.get("id") == "demo-learned-picture")
    printed = _printed(cell)
    assert "more characters of output were left out" in printed
    assert len(printed) < 2 * rubric.OUTPUT_BYTES
    assert len(json.dumps(notebook)) < len(json.dumps(course.graded.autograded("reference")))


def test_nothing_is_left_running_or_changed_outside(course):
    assert course.left_running == []  # the daemon forked in the kernel included
    assert list(course.traces.iterdir()) == []  # nothing unpickled a forged result
    assert course.git_before == course.git_after  # the repository, ignored files included, is as it was


def test_a_wrong_answer_loses_only_its_own_task_and_the_timing_of_its_path(course):
    for name in WRONG_ANSWERS:
        task = MISTAKE_BY_NAME[name].task
        scores = course.graded.scores(name)
        lost = {test for test, score in scores.items() if score < rubric.TEST_BY_ID[test].points}
        untimed = {path.test for path in rubric.TIMED_PATHS if task in path.requires}
        assert {rubric.TEST_BY_ID[test].task for test in lost - untimed} == {task}, (name, lost)
        assert {test for test in lost if rubric.TEST_BY_ID[test].task == "timing"} == untimed, (name, lost)


def test_a_notebook_that_forges_the_timing_job_s_reply_gets_no_timing_points(course):
    """Issue 23 through nbgrader: `nbgrader autograde` grades with the same timing job as the command line, so
    patching json in the notebook forges nothing. It loses the 8 points of the path it made wrong, and no more."""
    scores = course.graded.scores("forges_the_timing_sample")
    assert scores == {test.id: 0 if test.id == "shaw_speed" else test.points for test in rubric.TESTS}, scores
    cell = next(cell for cell in course.graded.autograded("forges_the_timing_sample")["cells"]
                if _grade_id(cell) == "shaw_speed")
    # Its path returns zeros at the timing sizes only, so its steps change with the length: the count, which runs for
    # every path (issue 36), refuses it before the sampled entries would (tests/core/test_timing_integrity.py tests those
    # with the count set aside). Either way nothing of the forged reply counts.
    said = json.dumps(cell["outputs"])
    assert "differs from the reference" in said or "The count changes with the length" in said, cell["outputs"]


def test_the_reference_notebook_runs_top_to_bottom_without_an_error(course):
    errors = [(_grade_id(cell) or cell.get("id"), output.get("ename"))
              for cell in course.graded.autograded("reference")["cells"] if cell["cell_type"] == "code"
              for output in cell.get("outputs", []) if output["output_type"] == "error"]
    assert errors == []
    pictures = sum("image/png" in output.get("data", {}) for cell in course.graded.autograded("reference")["cells"]
                   for output in cell.get("outputs", []))
    assert pictures >= 7  # one per part with a picture


def test_the_released_notebook_filled_in_passes_its_visible_checks_in_a_real_kernel(course, tmp_path,
                                                                                     reference_text):
    # What a student who got everything right sees: every cell runs, no check fails, without the grader.
    import nbformat
    from nbclient import NotebookClient

    folder = tmp_path / ASSIGNMENT
    shutil.copytree(course.student_folder, folder)
    notebook = nbformat.reads(json.dumps(_filled(json.loads((folder / NOTEBOOK).read_text()), reference_text)), 4)
    with _quick_capstone():
        NotebookClient(notebook, timeout=rubric.NOTEBOOK_CELL_SECONDS, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(folder)}}).execute()
    errors = [(_grade_id(cell), output["ename"]) for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.outputs if output.output_type == "error"]
    assert errors == []
    printed = "".join(output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                      for output in cell.outputs if output.output_type == "stream")
    assert printed.count("The visible checks of") == len(rubric.TESTS)


def test_the_disarming_notebook_fools_its_own_kernel_but_not_the_gradebook(course):
    import nbformat
    from nbclient import NotebookClient

    # In its own kernel every graded cell runs clean (this is what plain nbgrader would have graded)...
    folder = course.graded.homes["disarms_the_checks"] / "submitted" / "disarms_the_checks" / ASSIGNMENT
    notebook = nbformat.reads((folder / NOTEBOOK).read_text(), 4)
    with _quick_capstone():
        NotebookClient(notebook, timeout=rubric.NOTEBOOK_CELL_SECONDS, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(folder)}}).execute()
    graded = [cell for cell in notebook.cells if _grade_id(cell) in rubric.TEST_BY_ID]
    assert len(graded) == len(rubric.TESTS)
    assert not [output for cell in graded for output in cell.outputs if output.output_type == "error"]
    # ...while the gradebook holds the kit's verdict: nothing is implemented.
    assert set(course.graded.scores("disarms_the_checks").values()) == {0}


def test_an_edited_locked_test_cell_is_put_back_and_still_fails(course):
    scores = course.graded.scores("edited_locked_cell")
    assert scores["sinusoidal_values"] == 0
    cell = next(c for c in course.graded.autograded("edited_locked_cell")["cells"] if _grade_id(c) == "sinusoidal_values")
    assert "nothing to see here" not in _source(cell) and 'hidden_check("sinusoidal_values")' in _source(cell)


def test_a_deleted_graded_cell_is_added_back_and_graded(course):
    assert "Missing grade cell shaw_scale" in course.autograde_log
    assert course.graded.scores("deleted_grade_cell")["shaw_scale"] == rubric.TEST_BY_ID["shaw_scale"].points
    ids = [_grade_id(cell) for cell in course.graded.autograded("deleted_grade_cell")["cells"]]
    assert ids.index("shaw_scale") == ids.index("shaw_values") + 1


def test_the_grade_is_the_hidden_verdict_even_where_a_visible_check_failed_in_the_kernel(course):
    cell = next(c for c in course.graded.autograded("own_buckets_in_t5_bias")["cells"] if _grade_id(c) == "t5_bias_values")
    assert [output["output_type"] for output in cell["outputs"]] == ["stream"]
    scores = course.graded.scores("own_buckets_in_t5_bias")
    assert scores["t5_bias_values"] == rubric.TEST_BY_ID["t5_bias_values"].points
    assert scores["t5_bucket_bidirectional"] == 0


def test_a_deleted_solution_cell_costs_only_its_task_and_the_timing_of_its_path(course):
    scores = course.graded.scores("deleted_solution_cell")
    for test, score in scores.items():
        expected = 0 if rubric.TEST_BY_ID[test].task == "t5_bias" or test == "t5_speed" else rubric.TEST_BY_ID[test].points
        assert score == expected, test


# What only the hidden regions hold (a student's own cell may mention the word hidden_check, not call it).
HIDDEN_SIGNS = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS", 'hidden_check("', "nbgrader_bridge", "autograder")


def test_feedback_html_is_written_for_each_student_and_hides_the_hidden_tests(course):
    for student in course.students:
        html = course.graded.feedback(student)
        for sign in HIDDEN_SIGNS:
            assert sign not in html, (student, sign)
        assert str(rubric.SEED) not in html
        # the contents name each test, with its points, and link to its cell (nbgrader's say "Test cell")
        assert "Your results, test by test" in html, student
        # formulas drawn by the browser (MathML), not left as TeX for MathJax from a CDN
        assert len(re.findall(r'<math [^>]*xmlns="http://www.w3.org/1998/Math/MathML"', html)) > 50, student
        for test in rubric.TESTS:
            assert f'href="#{test.id}"' in html and f">{test.id}</a>" in html, (student, test.id)
    for name in WRONG_ANSWERS:  # the failure is explained, the mistake named, not just marked
        html = course.graded.feedback(name)
        assert "AssertionError" in html and MISTAKE_BY_NAME[name].says in html, name


def _distinctive_solution_lines():
    reference = REFERENCE.read_text(encoding="utf-8")
    lines = reference.splitlines()
    # Whole statements long enough not to appear by chance (not the opening line of a call).
    return {line.strip() for begin, end in solution_regions(reference) for line in lines[begin + 1:end]
            if len(line.strip()) > 25 and not line.strip().endswith(("(", "[", "{")) and not line.strip().startswith("#")}


def _files_of(folder):
    return {path.relative_to(folder): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_release_holds_no_solution_no_hidden_test_and_no_grader_file(course):
    secret_files = [ROOT / "autograder" / "units" / "positional_encodings" / "rubric.py", ROOT / "autograder" / "ways_in" / "nbgrader_bridge.py",
                    *(ROOT / "solutions").glob("*.py"), *(ROOT / "autograder" / "units").glob("*/cases/*.py")]
    secret_bytes = {path.read_bytes() for path in secret_files}
    solution_lines = _distinctive_solution_lines()
    assert len(solution_lines) > 20
    with zipfile.ZipFile(course.archive) as archive:
        zipped = {Path(name): archive.read(name) for name in archive.namelist() if not name.endswith("/")}
    for where, files in (("release", _files_of(course.released)), ("student folder", _files_of(course.student_folder)),
                         ("zip", zipped)):
        assert files, where
        for path, data in files.items():
            assert data not in secret_bytes, (where, path)
            assert path.stem not in {"rubric", "nbgrader_bridge"} and "solutions" not in path.parts, (where, path)
            text = data.decode("utf-8", errors="replace")
            for sign in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "hidden_check"):
                assert sign not in text, (where, path, sign)
            leaked = [line for line in solution_lines if line in text]
            assert not leaked, (where, path, leaked[:3])
    assert {path.name for path in zipped} == {path.name for path in _files_of(course.student_folder)}


def _pytest(folder, *args):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300)


def _self_checks_of(folder, task):
    """How many self-checks ``pytest -k task`` collects in the student folder (whatever the unit ships)."""
    listed = _pytest(folder, "--collect-only", "-q", "-k", task).stdout  # the folder's -q too: "FILE.py: N" lines
    counts = [int(count) for count in re.findall(r"^\S+\.py: (\d+)$", listed, re.MULTILINE)]
    assert counts, listed
    return sum(counts)


def test_student_folder_checks_the_notebook_red_then_green_once_sinusoidal_is_filled_in(course, tmp_path,
                                                                                       reference_text):
    folder = tmp_path / ASSIGNMENT
    shutil.copytree(course.student_folder, folder)
    before = _pytest(folder, "-k", "sinusoidal")
    assert before.returncode == 1, before.stdout[-2000:]
    assert "Task sinusoidal is not written yet" in before.stdout
    assert "where it says # YOUR CODE HERE" in before.stdout
    notebook = json.loads((folder / NOTEBOOK).read_text())
    for cell in notebook["cells"]:
        if _grade_id(cell) == "sinusoidal_table":
            cell["source"] = function_source(reference_text, "sinusoidal_table")
    (folder / NOTEBOOK).write_text(json.dumps(notebook))
    after = _pytest(folder, "-k", "sinusoidal")
    assert after.returncode == 0, after.stdout[-2000:]
    assert f"{_self_checks_of(folder, 'sinusoidal')} passed" in after.stdout
    assert _pytest(folder, "-k", "shaw").returncode == 1  # the other tasks are still to do


def test_student_folder_explains_a_notebook_cell_that_does_not_run(course, tmp_path, reference_text):
    folder = tmp_path / ASSIGNMENT
    shutil.copytree(course.student_folder, folder)
    notebook = _filled(json.loads((folder / NOTEBOOK).read_text()), reference_text)
    for cell in notebook["cells"]:
        if _grade_id(cell) == "shaw_scores":
            cell["source"] = cell["source"].replace("def shaw_scores(", "def shaw_scores(((", 1)
    (folder / NOTEBOOK).write_text(json.dumps(notebook))
    run = _pytest(folder, "-k", "sinusoidal or shaw")
    assert f"{_self_checks_of(folder, 'sinusoidal')} passed" in run.stdout  # the other cells still ran
    # the broken line first, then why the check could not import the function (not pytest's hint on module names)
    assert "is not valid Python (SyntaxError" in run.stdout and "valid Python names" not in run.stdout
    assert "So shaw_scores is not defined, and test_shaw.py cannot import it" in run.stdout


def test_release_command_finds_nbgrader_and_alembic_without_the_environment_on_path(tmp_path):
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    environment = {**os.environ, "PATH": "/usr/bin:/bin"}  # as from an environment that is not activated
    assert shutil.which("alembic", path=environment["PATH"]) is None
    run = subprocess.run([sys.executable, "-m", "autograder", "release", "--course", str(course),
                          "--out", str(tmp_path / "dist")], cwd=ROOT, env=environment, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "dist" / f"{ASSIGNMENT}.zip").is_file()
    assert (course / "gradebook.db").is_file()


def test_course_config_sets_each_nbgrader_trap_as_nbgrader_reads_it():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(COURSE)).load_config()
    assert config.Execute.timeout == rubric.NOTEBOOK_CELL_SECONDS > 30
    from nbgrader.preprocessors import Execute

    steps = [step.__name__ for step in config.Autograde.autograde_preprocessors]
    assert steps.index("TrustedGrades") == steps.index("SaveAutoGrades") - 1 and steps[0] == "BoundedExecute"
    assert "Execute" not in steps and issubclass(config.Autograde.autograde_preprocessors[0], Execute)
    assert config.BoundedExecute.notebook_seconds == rubric.NOTEBOOK_SECONDS > rubric.NOTEBOOK_CELL_SECONDS
    assert BoundedExecute.notebook_seconds.default_value == rubric.NOTEBOOK_SECONDS
    assert config.Execute.interrupt_on_timeout is True
    assert "--InteractiveShell.xmode=Minimal" in config.Execute.extra_arguments
    assert config.OverwriteCells.add_missing_cells is True
    from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells

    # nbgrader's own steps, each as a subclass of the kit's that keeps its configuration (nbgrader_inert.py)
    assert any(issubclass(step, ClearHiddenTests) for step in config.GenerateFeedback.preprocessors)
    assert any(issubclass(step, OverwriteCells) for step in config.Autograde.sanitize_preprocessors)
    assert Path(config.CourseDirectory.root) == COURSE
