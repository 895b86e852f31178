"""The count through nbgrader and a Gradescope container (issue 36, "Done when"): one hidden loop, one honest twin.

The pair is the second unit's reference with work added inside its ``alibi_bias`` (tests/core/test_count_end_to_end.py's
wrapper), the output unchanged, so that every correctness test passes and only the timing tier tells them apart:

- ``hidden_loop``: the grammar's iterator protocol (tests/core/test_count_grammar.py) over chunks of 8 positions, a class
  drained by ``list()``. No loop is written in the path, so the static check sees none; before issue 36 such a path
  was timed like vectorized code, and at 1.1 to 1.3x the reference it kept the whole of ``alibi_speed``.
- ``vectorized_twin``: the same file, the same sums taken in one indexing: it keeps ``alibi_speed``.

Both go through the real ``nbgrader autograde`` twice, with a real kernel: with the course's config (the kit's grader
out of the kernel, TrustedGrades) and without it (the hidden checks graded in the kernel, nbgrader_bridge's
in-kernel count); the gradebook, the autograded notebook and the feedback are read back. And through Gradescope's
``run_autograder`` in a real Docker container of the kit's bundle, results.json read back. What is asserted is what
each platform wrote (scores, and the counts the feedback names), not the kit's own objects.
"""

import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

import docker_kit
from autograder.core import units
from autograder.course.build import strip_markers
from autograder.course.notebook import COURSE, function_source, notebook_name, grade_id as _grade_id, filled_notebook
from autograder.course.release import release
from autograder.ways_in import gradescope
from nbgrader_class import autograde_class, shard_courses, submit_class
from test_count_end_to_end import WRAPPED
from test_count_grammar import TRIPS, build, path_source
from test_platform_containers import HONEST_AT_ONCE, RESULTS, image, results_of  # noqa: F401  (image: a fixture)

UNIT = units.get("rotary_alibi")
ASSIGNMENT, NOTEBOOK = UNIT.name, notebook_name(UNIT)
SPEED = UNIT.rubric.TEST_BY_ID["alibi_speed"]
REFERENCE = strip_markers(UNIT.reference_path.read_text(encoding="utf-8"))

_CHUNKS, _GROWS = TRIPS["chunks of positions"]
assert _GROWS  # the grammar's own verdict: a trip count of chunks of positions grows with the length
HIDDEN_PATH = path_source("iterator protocol", _CHUNKS, "tensor work").replace("def path(x):", "def _drawn_path(x):", 1)
VECTORIZED_PATH = '''def _drawn_path(x):
    L = x.shape[0]
    return x[:(L + 7) // 8].sum()  # the rows the hidden loop visits one by one, summed in one indexing
'''
# The alibi_bias the notebook's cell holds, and the whole file Gradescope receives, for each of the pair.
CELLS = {name: function_source(REFERENCE, "alibi_bias") + WRAPPED + path
         for name, path in (("hidden_loop", HIDDEN_PATH), ("vectorized_twin", VECTORIZED_PATH))}
FILES = {name: REFERENCE + WRAPPED + path for name, path in (("hidden_loop", HIDDEN_PATH),
                                                              ("vectorized_twin", VECTORIZED_PATH))}
# Said under a path that keeps its points, in whatever words surround it (core/timing.py, count_loops).
STEADY_WORDS = "does not change with the length: it is not a loop over positions"




def _filled(released, alibi_bias_cell):
    """The release with every solution cell holding the reference's function, but alibi_bias's ``alibi_bias_cell``."""
    return filled_notebook(released, UNIT.rubric.TASK_OF_FUNCTION, REFERENCE, cells={"alibi_bias": alibi_bias_cell})


def _assert_the_count_grows(said):
    """The feedback names the loop and the counts it read, one per length ("L = 16: 97; L = 32: 115"), and those
    counts grow with the length: read from the text the platform shows, not from the kit's objects."""
    assert "a Python loop over positions" in said and "changes with the length" in said, said
    start = said.index("at each sequence length")  # the first telling (a notebook's error shows it twice)
    listed = said[start:said.index("changes with the length", start)]
    counts = [(int(length), int(count)) for length, count in re.findall(r"L = (\d+): (\d+)", listed)]
    assert len(counts) >= 2 and counts == sorted(counts), (counts, said)
    assert counts[-1][1] > counts[0][1], (counts, said)


def _said(outputs):
    """The text of a cell's outputs as nbgrader wrote them: streams, errors, results."""
    def joined(value):  # a notebook keeps multi-line text as a list of lines
        return "".join(value) if isinstance(value, list) else str(value)

    text = []
    for output in outputs:
        text += [joined(output.get("text", "")), joined(output.get("evalue", "")), *output.get("traceback", [])]
        text += [joined(value) for value in (output.get("data") or {}).values()]
    return "\n".join(text)


def test_the_twin_takes_the_same_sums_as_the_hidden_loop():
    """The pair differs only in how the path runs, not in what it computes."""
    import torch

    hidden, twin = (build(path.replace("def _drawn_path(x):", "def path(x):", 1)) for path in (HIDDEN_PATH,
                                                                                               VECTORIZED_PATH))
    for length in (1, 7, 8, 9, 64, 384, 385):
        x = torch.randn(length, 4, dtype=torch.float64)
        assert torch.allclose(torch.as_tensor(hidden(x), dtype=torch.float64), twin(x)), length


# --- nbgrader -------------------------------------------------------------------------------------------------------

def _submitted(root, graded_with=None):
    """The pair, each filled into the unit's released notebook, submitted to a course of its own under ``root``
    (its config replaced by ``graded_with`` after the release, if given); returns the course folders to grade."""
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    release(UNIT, root / "dist", course=course)
    if graded_with is not None:
        (course / "nbgrader_config.py").write_text(graded_with)
    released = json.loads((course / "release" / ASSIGNMENT / NOTEBOOK).read_text())
    students = {name: _filled(released, cell) for name, cell in CELLS.items()}
    return submit_class(shard_courses(course, 1), ASSIGNMENT, NOTEBOOK, students)

@pytest.fixture(scope="module")
def nbgraded(tmp_path_factory):
    """The pair through `nbgrader autograde`, `generate_feedback` and `export` in a course of its own."""
    if shutil.which("bwrap") is None:
        pytest.skip("the course's kernel runs under bubblewrap")
    homes = _submitted(tmp_path_factory.mktemp("nbgrader-count"))
    return autograde_class(homes, ASSIGNMENT, NOTEBOOK)


def _speed_cell(graded, student):
    return next(cell for cell in graded.autograded(student)["cells"] if _grade_id(cell) == SPEED.id)


def test_through_nbgrader_the_hidden_loop_loses_the_tier_and_says_its_count_grows(nbgraded):
    scores, said = nbgraded.scores("hidden_loop"), _said(_speed_cell(nbgraded, "hidden_loop")["outputs"])
    # The drawn path changes no output: every other test keeps its points, alibi_speed alone is lost.
    assert scores == {test.id: 0 if test.id == SPEED.id else test.points for test in UNIT.rubric.TESTS}, (scores, said)
    assert nbgraded.totals["hidden_loop"] == UNIT.rubric.MAX_SCORE - SPEED.points
    _assert_the_count_grows(said)
    feedback = nbgraded.feedback("hidden_loop")  # the student's page (HTML): the same words
    assert "The count changes with the length: the loop runs over positions." in feedback


def test_through_nbgrader_the_vectorized_twin_keeps_the_tier(nbgraded):
    scores = nbgraded.scores("vectorized_twin")
    assert scores == {test.id: test.points for test in UNIT.rubric.TESTS}, scores
    assert nbgraded.totals["vectorized_twin"] == UNIT.rubric.MAX_SCORE
    said = _said(_speed_cell(nbgraded, "vectorized_twin")["outputs"])
    assert STEADY_WORDS in said, said


# --- nbgrader without the kit's config: the grades are what the kernel's hidden checks say -------------------------

# A course that keeps nbgrader's own autograde steps (no TrustedGrades): each graded cell's hidden region calls
# nbgrader_bridge.hidden_check in the student's kernel, and alibi_speed is counted and timed there.
PLAIN_CONFIG = 'c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "count_in_the_kernel"\n'
KERNEL_CELL_SECONDS = 240  # nbgrader's default 30 s is too short for the first cell that builds the hidden cases


@pytest.fixture(scope="module")
def graded_in_the_kernel(tmp_path_factory):
    # Released with the kit's config, graded without it.
    homes = _submitted(tmp_path_factory.mktemp("nbgrader-count-kernel"), graded_with=PLAIN_CONFIG)
    return autograde_class(homes, ASSIGNMENT, NOTEBOOK, [f"--Execute.timeout={KERNEL_CELL_SECONDS}"])


def test_in_nbgraders_kernel_the_hidden_loop_loses_the_tier_and_its_twin_keeps_it(graded_in_the_kernel):
    graded = graded_in_the_kernel
    said = _said(_speed_cell(graded, "hidden_loop")["outputs"])
    assert graded.scores("hidden_loop") == \
        {test.id: 0 if test.id == SPEED.id else test.points for test in UNIT.rubric.TESTS}, said
    _assert_the_count_grows(said)
    assert graded.scores("vectorized_twin") == {test.id: test.points for test in UNIT.rubric.TESTS}, \
        _said(_speed_cell(graded, "vectorized_twin")["outputs"])


# --- Gradescope, in a container ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def in_containers(image):  # noqa: F811  (image: test_platform_containers' fixture)
    """The pair through Gradescope's run_autograder for the second unit, one fresh container each."""
    script = gradescope.run_script(UNIT.name).encode()

    def one(name):
        ran = docker_kit.run(image, "bash /tmp/run_autograder",
                             files={f"/autograder/submission/{UNIT.file_names[0]}": FILES[name].encode(),
                                    "/tmp/run_autograder": script}, fetch=[RESULTS], timeout=300)
        return name, results_of(ran)

    with ThreadPoolExecutor(HONEST_AT_ONCE) as pool:
        return dict(pool.map(one, FILES))


def _tests_of(results):
    return {test["name"]: test for test in results["tests"] if test["name"] in UNIT.rubric.TEST_BY_ID}


def test_in_a_gradescope_container_the_hidden_loop_loses_the_tier(in_containers):
    results = in_containers["hidden_loop"]
    tests = _tests_of(results)
    said = tests[SPEED.id].get("output", "")
    assert {name: test["score"] for name, test in tests.items()} == \
        {test.id: 0 if test.id == SPEED.id else test.points for test in UNIT.rubric.TESTS}, said
    assert results["score"] == UNIT.rubric.MAX_SCORE - SPEED.points
    _assert_the_count_grows(said)


def test_in_a_gradescope_container_the_vectorized_twin_keeps_the_tier(in_containers):
    results = in_containers["vectorized_twin"]
    tests = _tests_of(results)
    assert {name: test["score"] for name, test in tests.items()} == \
        {test.id: test.points for test in UNIT.rubric.TESTS}, {name: test.get("output") for name, test in tests.items()}
    assert results["score"] == UNIT.rubric.MAX_SCORE
    said = tests[SPEED.id].get("output", "")
    assert STEADY_WORDS in said, said
