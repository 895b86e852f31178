"""The second unit as an assignment of the same nbgrader course, for real: `nbgrader generate_assignment`,
`autograde`, `generate_feedback` and `export` on rotary_alibi, with a real kernel, and a gradebook that agrees
test for test with `python -m autograder grade --unit rotary_alibi` on the same notebooks.

A small class (the reference, the blank release, two typical mistakes, BLOOM's equivalent ALiBi form) and the
red-team corpus (tests/helpers/red_team_corpus.py) but its attacks on the machine's limits (SAME_FOR_EVERY_UNIT),
each attack in the notebook's first solution cell, so that it runs in the kernel too: every notebook gets its row,
each hostile one 0 on every test, and nothing is left running. The first unit's course test
(test_nbgrader_course.py) grades the whole corpus this way and checks the traps of nbgrader itself; this one shows
that the same machinery serves a second unit unchanged.
"""

import json
import re
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder.core import units
from autograder.course.build import strip_markers
from autograder.course.notebook import COURSE, function_source, notebook_name, filled_notebook
from autograder.course.release import release
from autograder.core.grade import Grader
from autograder.sandbox.server import Limits
from nbgrader_class import autograde_class, shard_courses, submit_class, submitted
from red_team_corpus import corpus, processes_named, student_notebook

UNIT = units.get("rotary_alibi")
ASSIGNMENT, NOTEBOOK = UNIT.name, notebook_name(UNIT)
SUBMISSIONS = Path(__file__).parents[1] / "submissions" / "rotary_alibi"
# student name: the submission file whose one function replaces the reference's
CHANGED = {"clockwise": "mistakes/apply_rotary__clockwise.py", "slopes_of_every_n": "mistakes/alibi_slopes__power_of_two_rule_for_every_n.py",
           "bloom_form": "mistakes/alibi_bias__key_position_form.py"}

# As in the first unit's course test: a cell may run 8 s in the kernel and the whole notebook 25 s, so the
# attacks that hang in the kernel run out of its budget quickly.
CELL_SECONDS, NOTEBOOK_SECONDS = 8, 25
# The grader's limits, in nbgrader and on the command line: short, for the attacks that hang (the reference's
# slowest task takes well under a second).
WALL_SECONDS, TASK_SECONDS = 20, 5
# The attacks on the machine's limits and the kernel's confinement (time, memory, processes, output, files, the
# network, the job's user): the kernel, the jobs and their limits are the same whatever the unit, and the first
# unit's course test grades each of them through nbgrader (about two minutes here, most of it waiting out limits).
# Every other attack, those on what grading this unit reads and writes, runs here; one added to the corpus runs here
# too unless it is listed.
SAME_FOR_EVERY_UNIT = ("loop_at_import", "loop_in_a_call", "ignores_sigterm", "allocates_far_beyond_the_limit",
                       "floods_output", "detached_daemon", "network_connection", "many_processes",
                       "children_beyond_the_memory_limit", "memory_in_a_memfd", "fills_its_private_folders",
                       "other_sockets", "becomes_root_again")
HOSTILE = [f"attack_{name}" for name in corpus(Path("unused"), UNIT) if name not in SAME_FOR_EVERY_UNIT]

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="the course's kernel runs under bubblewrap")




def _filled(release_notebook, code_text, changed=""):
    """The release with each solution cell holding its function from ``code_text``, or from ``changed`` (a
    submission file of one function) for the function that one defines."""
    functions = UNIT.rubric.TASK_OF_FUNCTION
    return filled_notebook(release_notebook, functions, code_text,
                           cells={name: function_source(changed, name) for name in functions if f"def {name}(" in changed})


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("nbgrader-second")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    folder, archive = release(UNIT, root / "dist", course=course)
    released = json.loads((course / "release" / ASSIGNMENT / NOTEBOOK).read_text())
    reference = strip_markers(UNIT.reference_path.read_text(encoding="utf-8"))
    students = {"reference": _filled(released, reference), "blank": released}
    for name, file in CHANGED.items():
        students[name] = _filled(released, reference, (SUBMISSIONS / file).read_text(encoding="utf-8"))
    traces = root / f"red-team-{uuid.uuid4().hex[:10]}"
    traces.mkdir()
    for name, attack in corpus(traces, UNIT).items():
        if f"attack_{name}" in HOSTILE:
            students[f"attack_{name}"] = student_notebook(released, attack)
    homes = submit_class(shard_courses(course, 2), ASSIGNMENT, NOTEBOOK, students)
    grader = Grader(UNIT, limits=Limits(wall_seconds=WALL_SECONDS, task_seconds=TASK_SECONDS), sandbox="auto",
                    timing_mode="give")
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:  # the command line's grades while nbgrader works
            from_cli = pool.submit(grader.grade_many, submitted(homes), jobs=2)
            graded = autograde_class(homes, ASSIGNMENT, NOTEBOOK, [
                f"--Execute.timeout={CELL_SECONDS}", f"--BoundedExecute.notebook_seconds={NOTEBOOK_SECONDS}",
                f"--TrustedGrades.wall_seconds={WALL_SECONDS}", f"--TrustedGrades.task_seconds={TASK_SECONDS}"])
            cli = {result.name: result for result in from_cli.result()}
    finally:
        grader.close()
    deadline = time.monotonic() + 5  # a killed process may take a moment to go
    while processes_named(traces.name) and time.monotonic() < deadline:
        time.sleep(0.1)
    return graded, folder, students, cli, processes_named(traces.name)


def test_the_release_of_the_second_unit_holds_its_notebook_its_checks_and_no_answer(course):
    _, folder, _, _, _ = course
    names = {path.name for path in folder.iterdir()}
    assert {NOTEBOOK, "checks.py", "capstone.py", "conftest.py", "pytest.ini", "test_rope_scores.py"} <= names
    reference = UNIT.reference_path.read_text(encoding="utf-8")
    for line in ("return (q_turned * scale) @ k_turned.transpose(-2, -1)  # (B, H, Lq, Lk)",
                 "closest = 1 << (num_heads.bit_length() - 1)  # the largest power of two <= num_heads"):
        assert line in reference  # the lines looked for are the reference's own
        assert line not in (folder / NOTEBOOK).read_text()


def test_the_gradebook_of_the_second_unit_agrees_with_the_command_line_test_for_test(course):
    graded, _, students, cli, _ = course
    for student in students:
        assert not graded.disagreements(student, cli[student]), (student, graded.disagreements(student, cli[student]))
    assert sum(graded.scores("reference").values()) == UNIT.rubric.MAX_SCORE
    assert sum(graded.scores("blank").values()) == 0


def test_the_mistakes_cost_their_own_task_and_bloom_s_form_is_accepted_where_it_is_equivalent(course):
    graded, _, _, _, _ = course
    clockwise, slopes, bloom = (graded.scores(name) for name in ("clockwise", "slopes_of_every_n", "bloom_form"))
    lost = {test for test, score in clockwise.items() if score < UNIT.rubric.TEST_BY_ID[test].points}
    # charged in its own task only (and once: a later test that shows only the same mistake keeps its points)
    # (the RoPE path is timed only once apply_rotary is right: its timing points wait for that, by design)
    assert "apply_rotary_interleaved" in lost
    assert {UNIT.rubric.TEST_BY_ID[test].task for test in lost} - {"timing"} == {"apply_rotary"}
    assert slopes["alibi_slopes_other_counts"] == 0 and slopes["alibi_slopes_power_of_two"] == 5
    assert bloom["alibi_bias_causal"] == 6 and bloom["alibi_bias_bidirectional"] == 0
    feedback = graded.feedback("bloom_form")
    assert "BLOOM" in feedback and "Your results, test by test" in feedback
    assert len(re.findall(r'<math [^>]*xmlns="http://www.w3.org/1998/Math/MathML"', feedback)) > 10


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_notebook_of_the_second_unit_has_a_row_with_0_on_every_test(course, name):
    graded, _, _, cli, _ = course
    assert graded.scores(name) == {test.id: 0 for test in UNIT.rubric.TESTS}
    assert graded.totals[name] == 0 and cli[name].score == 0


def test_every_notebook_of_the_second_unit_has_its_row_and_nothing_is_left_running(course):
    graded, _, students, _, left_running = course
    assert set(graded.totals) == set(students)
    assert graded.totals["reference"] == UNIT.rubric.MAX_SCORE
    assert left_running == []


def test_the_attacks_left_to_the_first_unit_are_in_its_course_run():
    """Each attack left out here is one of the corpus, graded through nbgrader by the first unit's course test."""
    from test_nbgrader_course import HOSTILE as FIRST_UNITS

    left_out = set(SAME_FOR_EVERY_UNIT)
    assert left_out <= set(corpus(Path("unused"), UNIT)) and left_out <= set(FIRST_UNITS)
    assert len(HOSTILE) + len(SAME_FOR_EVERY_UNIT) == len(corpus(Path("unused"), UNIT))
