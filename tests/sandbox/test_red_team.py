"""Hostile submissions, graded with the class: each scores 0, the reference beside them full marks.

The corpus is tests/helpers/red_team_corpus.py: each attack appended to the blank stubs, so it has no honest points
to keep. The grader compares on its own side, never unpickles what comes back, checks every frame, and
(with bubblewrap) keeps the code away from everything but its own private folders; with control groups a job
as a whole is bounded. The same corpus goes through `nbgrader autograde` in test_nbgrader_course.py.

Below the corpus: round two's attacks that need more than one source file to show (a folder with a link, two
jobs in a row, the timing tier), each failing on the grader before its fix. Property tests of the same
invariants are in test_intake.py, test_protocol.py, test_class_run.py, test_inert_text.py, test_loop_check.py.
"""

import os
import subprocess
import sys
import time
import uuid

import pytest

from autograder.course.build import ROOT
from autograder.core.grade import Grader
from autograder.intake.inert import is_inert
from autograder.sandbox.server import Limits, bubblewrap
from red_team_corpus import BUSY_THREADS, MEMORY_LIMIT_BYTES, corpus, processes_named
from conftest import REFERENCE, UNIT

NAMES = list(corpus(ROOT / "unused"))
SANDBOXED = bubblewrap() is not None
# Jobs at once for the corpus: most attacks wait out a time limit, so more jobs than cores; each job's
# memory is bounded by its control group (MEMORY_LIMIT_BYTES), so four of them hold at most 8 GiB.
CORPUS_JOBS = 4


@pytest.fixture(scope="module")
def corpus_grader():
    """Short time limits (some attacks hang) and the memory limit the memory attack is built around."""
    grader = Grader(UNIT, limits=Limits(wall_seconds=25, task_seconds=5, memory_bytes=MEMORY_LIMIT_BYTES), sandbox="auto")
    yield grader
    grader.close()


@pytest.fixture(scope="module")
def red_team(corpus_grader, tmp_path_factory, stub_text, reference_text):
    folder = tmp_path_factory.mktemp("red_team")
    traces = folder / f"red-team-{uuid.uuid4().hex[:10]}"
    traces.mkdir()
    attacks = {name: attack for name, attack in corpus(traces).items() if SANDBOXED or not attack.sandboxed_only}
    paths = []
    for name, attack in attacks.items():
        path = folder / f"{name}.py"
        path.write_text(stub_text + "\n" + attack.source)
        paths.append(path)
    (folder / "reference.py").write_text(reference_text)
    paths.append(folder / "reference.py")
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    results = {result.name: result for result in corpus_grader.grade_many(paths, jobs=CORPUS_JOBS)}
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True)
    deadline = time.monotonic() + 5  # a killed process may take a moment to go
    while processes_named(traces.name) and time.monotonic() < deadline:
        time.sleep(0.1)
    return results, attacks, traces, before.stdout, after.stdout


@pytest.mark.parametrize("name", NAMES)
def test_hostile_submission_scores_0(red_team, corpus_grader, name):
    results, attacks, _, _, _ = red_team
    if name not in attacks:
        pytest.skip("bubblewrap (bwrap) is not installed here: this attack is run only inside the sandbox")
    if attacks[name].sandboxed_only and bubblewrap() is None:
        pytest.skip("bubblewrap (bwrap) is not installed here: without it the code can read the reference")
    result = results[name]
    assert result.score == 0, {test.id: test.output for test in result.tests if test.score}
    assert len(result.tests) == len(results["reference"].tests)
    assert not result.grader_fault, result.tests[0].output
    if attacks[name].grouped_only and corpus_grader.groups is None:
        pytest.skip("no control group per job here: what this attack holds is bounded per process only")
    said = "\n".join([test.output for test in result.tests] + result.notes)
    assert "ESCAPED" not in said, said[:2000]


def test_the_reference_keeps_full_marks_in_the_same_run(red_team):
    results, _, _, _, _ = red_team
    assert results["reference"].score == 100, [t.output for t in results["reference"].tests if not t.passed]


def test_nothing_the_corpus_left_was_unpickled_changed_outside_or_left_running(red_team):
    _, _, traces, before, after = red_team
    assert list(traces.iterdir()) == []
    assert processes_named(traces.name) == []
    assert before == after  # the repository, ignored files included, is as it was


def test_the_forged_results_are_reported_not_trusted(red_team):
    results, _, _, _, _ = red_team
    outputs = "\n".join(test.output for test in results["forged_results"].tests)
    # Every verdict is the grader's own: its fake answers (a tensor of shape (1,)) compared, or the forged
    # files refused. Which one depends on whether the grader came across the files: when it sees them before
    # the worker has said it loaded, it takes them for replies, refuses them and stops the child.
    assert any(sign in outputs for sign in ("has shape (1,)", "could not be read", "stopped while loading",
                                            "broke the grader's protocol")), outputs


def test_a_forged_first_frame_is_that_submission_s_row_not_the_end_of_the_run(red_team):
    results, _, _, _, _ = red_team
    assert "broke the grader's protocol" in results["forges_the_first_frame"].tests[0].output


def test_raising_value_error_everywhere_earns_no_invalid_argument_points(red_team):
    results, _, _, _, _ = red_team
    tests = {test.id: test for test in results["every_function_raises_value_error"].tests}
    assert tests["sinusoidal_invalid_args"].score == 0
    assert "does not work on valid ones" in tests["sinusoidal_invalid_args"].output


def test_escape_sequences_reach_no_report_as_escapes(red_team, tmp_path):
    from autograder.core import report

    import csv
    import io

    results, _, _, _, _ = red_team
    result = results["escape_sequences_in_messages"]
    for text in [report.table([result]), report.feedback(result)]:
        assert is_inert(text), repr(text[:400])
    for row in csv.reader(io.StringIO(report.grades_csv([result]))):
        assert all(is_inert(cell, one_line=True) for cell in row), row
    assert "\\x1b" in report.feedback(result)  # shown, as an escape, not lost


# --- a folder that holds a link, through the command line -------------------------------------------------------

def _cli(*arguments, timeout=600):
    environment = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "autograder", *arguments], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(not SANDBOXED, reason="bubblewrap (bwrap) is not installed here")
def test_a_student_folder_that_links_to_the_reference_or_a_host_file_gets_nothing_from_it(tmp_path):
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "positional_encodings.py").symlink_to(REFERENCE)
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "positional_encodings.py").symlink_to("/etc/passwd")
    (tmp_path / "hard").mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-instructor.py"  # a file of the instructor's, outside the class
    outside.write_text(REFERENCE.read_text())
    os.link(outside, tmp_path / "hard" / "positional_encodings.py")
    done = _cli("grade", str(tmp_path), "--out", str(tmp_path / "results"), "--without-gpu", "withhold", "--jobs", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = (tmp_path / "results" / "grades.csv").read_text().splitlines()
    totals = {row.split(",")[0]: float(row.split(",")[1]) for row in rows[1:]}
    assert totals == {"linked": 0, "host": 0, "hard": 0}, done.stdout
    assert "root:" not in done.stdout  # the host file's first line never reaches the feedback
    assert "link" in done.stdout


# --- two jobs in a row: nothing of one reaches the next -------------------------------------------------------

# Job A tries every folder it can see and leaves a file in each it can write; job B, forked later from the same
# server, looks for them all. Every folder, not a list of likely ones: what is shared is whatever was missed.
LEAVES = '''
import os as _os
_LEFT = []
for _root, _folders, _files in _os.walk("/"):
    if _root.startswith(("/proc", "/sys")):
        _folders[:] = []
        continue
    try:
        with open(_os.path.join(_root, "{marker}.py"), "w") as _handle:
            _handle.write("LEFT = True\\n")
        _LEFT.append(_root)
    except OSError:
        pass


def sinusoidal_table(*args, **kwargs):
    raise RuntimeError("left in " + repr(_LEFT))
'''
FINDS = '''
import os as _os
_FOUND = []
for _root, _folders, _files in _os.walk("/"):
    if _root.startswith(("/proc", "/sys")):
        _folders[:] = []
        continue
    if "{marker}.py" in _files:
        _FOUND.append(_root)


def sinusoidal_table(*args, **kwargs):
    raise RuntimeError(("ESCAPED " if _FOUND else "nothing left ") + repr(_FOUND))
'''


@pytest.mark.skipif(not SANDBOXED, reason="bubblewrap (bwrap) is not installed here")
def test_a_file_one_job_writes_is_seen_by_no_later_job(corpus_grader, tmp_path, stub_text):
    marker = f"left-{uuid.uuid4().hex[:10]}"
    (tmp_path / "a_leaves.py").write_text(stub_text + LEAVES.format(marker=marker))
    (tmp_path / "b_finds.py").write_text(stub_text + FINDS.format(marker=marker))
    left = next(test.output for test in corpus_grader.grade(tmp_path / "a_leaves.py").tests
                if test.id == "sinusoidal_values")
    assert "left in ['/" in left, left  # it did find folders of its own to write in (/work, /tmp, /dev/shm)
    found = next(test.output for test in corpus_grader.grade(tmp_path / "b_finds.py").tests
                 if test.id == "sinusoidal_values")
    assert "nothing left" in found, (found, left)


# --- the timing tier: what got full timing points without the work -------------------------------------------

@pytest.fixture(scope="module")
def tier_grader():
    grader = Grader(UNIT, timing_mode="cpu", sandbox="auto")
    yield grader
    grader.close()


def _speed(result):
    return {test.id: test for test in result.tests if test.task == "timing"}


MEMORY_HIDDEN = '''

import torch as _torch
_reference_shaw = shaw_scores


def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
    # Hold 60 score-sized tensors, far past the limit, then restart the kernel's high-water mark: the old tier
    # read only that mark, from /proc, which the process itself can restart.
    held = _torch.ones(60, q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    del held
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:
        pass
    return _reference_shaw(q, k, rel_k, max_relative_position, scale=scale)
'''

def test_memory_hidden_by_restarting_the_high_water_mark_is_still_counted(tier_grader, tmp_path, reference_text):
    if tier_grader.groups is None:
        pytest.skip("no control group per job here: the memory figure is the process's own, which it can restart")
    path = tmp_path / "memory_hidden.py"
    path.write_text(reference_text + MEMORY_HIDDEN)
    shaw = _speed(tier_grader.grade(path))["shaw_speed"]
    assert shaw.score == 0 and "Over it" in shaw.output, shaw.output


def test_threads_left_running_at_import_get_no_timing_points_and_cost_classmates_nothing(tier_grader, tmp_path,
                                                                                      reference_text, monkeypatch):
    """Work done while the job waits for its next call would go untimed; a thread pool that sleeps is fine. (The
    static check refuses threading.Thread in the path's module first; set aside here, so that the job's own
    defence is what is tested.)"""
    from autograder.core import timing

    monkeypatch.setattr(timing, "static_check", lambda chunks, path, unit: [])
    (tmp_path / "background.py").write_text(reference_text + BUSY_THREADS)
    (tmp_path / "reference.py").write_text(reference_text)
    results = {r.name: r for r in tier_grader.grade_many([tmp_path / "background.py", tmp_path / "reference.py"],
                                                           jobs=2)}
    for test in _speed(results["background"]).values():
        assert test.score == 0 and "times your function alone" in test.output, test.output
    assert results["reference"].score == 100, [t.output for t in results["reference"].tests if not t.passed]


def test_work_seen_once_between_calls_is_timed_again_and_only_a_second_sighting_costs_the_tier(
        tier_grader, tmp_path, reference_text, monkeypatch):
    """A sighting of work between two commands can be the machine's noise: a pool's thread still spinning down on a
    loaded machine was once read as 4 ms of other threads' work, and an honest path lost its timing points. The
    first sighting (injected here, on the reference) starts the path again in fresh jobs, and that timing stands;
    the feedback says so. A job that works between calls every time is seen again, and loses the tier (the test
    above, with threads that really work)."""
    from autograder.core import timing

    real, sightings = timing.ServeChild.background, []

    def background(self):
        found = real(self)
        if not found and not sightings and not self.reference:
            sightings.append(self)
            return "had other threads working (4 ms of CPU time)"
        return found

    monkeypatch.setattr(timing.ServeChild, "background", background)
    (tmp_path / "reference.py").write_text(reference_text)
    speed = _speed(tier_grader.grade(tmp_path / "reference.py"))
    assert len(sightings) == 1
    assert all(test.passed for test in speed.values()), {test.id: test.output for test in speed.values()}
    again = [test for test in speed.values() if "Timed again from the start" in test.output]
    assert len(again) == 1 and "had other threads working (4 ms of CPU time)" in again[0].output, again


def test_no_student_code_runs_while_another_submission_is_timed(tier_grader, tmp_path, reference_text, monkeypatch):
    """Each timing job's whole life (load, setup, warm-up, calls) lies outside every other submission's timing."""
    from autograder.core import timing

    lives, timings = {}, {}
    real_init, real_close, real_time = timing.ServeChild.__init__, timing.ServeChild.close, timing._time_path

    def init(self, server, chunks, filename, *args, **kwargs):
        self._started, self._filename = time.monotonic(), filename
        real_init(self, server, chunks, filename, *args, **kwargs)

    def close(self):
        real_close(self)
        if getattr(self, "_filename", "reference.py") != "reference.py":
            lives.setdefault(self._filename, []).append((self._started, time.monotonic()))

    def time_path(path, device, student, *args, **kwargs):
        started = time.monotonic()
        try:
            return real_time(path, device, student, *args, **kwargs)
        finally:
            timings.setdefault(student._filename, []).append((started, time.monotonic()))

    monkeypatch.setattr(timing.ServeChild, "__init__", init)
    monkeypatch.setattr(timing.ServeChild, "close", close)
    monkeypatch.setattr(timing, "_time_path", time_path)
    slow = reference_text + "\nimport time as _time\n_time.sleep(2)\n"  # a slow import: a long setup
    for name in ("slow_a", "slow_b", "quick_c", "quick_d"):
        (tmp_path / f"{name}.py").write_text(slow if name.startswith("slow") else reference_text)
    tier_grader.grade_many(sorted(tmp_path.glob("*.py")), jobs=2)
    for mine, intervals in lives.items():
        for other, timed in timings.items():
            if other == mine:
                continue
            for start, end in intervals:
                for t_start, t_end in timed:
                    assert end <= t_start or t_end <= start, f"{mine}'s timing job lived while {other} was timed"


def test_a_submission_that_asks_torch_for_more_threads_keeps_its_timing_points(tier_grader, tmp_path, reference_text):
    """An idle thread pool is no background work: only CPU used between the calls costs the tier."""
    two_threads = reference_text.replace("import torch\n", "import torch\ntorch.set_num_threads(2)\n", 1)
    assert "set_num_threads(2)" in two_threads
    (tmp_path / "two_threads.py").write_text(two_threads)
    speed = _speed(tier_grader.grade(tmp_path / "two_threads.py"))
    assert all(test.passed for test in speed.values()), {test.id: test.output for test in speed.values()}


# The same corpus against the second unit: each attack replaces rotary_alibi's functions instead, on its stubs.
@pytest.fixture(scope="module")
def red_team_second_unit(tmp_path_factory):
    from autograder.core import units
    from autograder.course.build import make_stub, strip_markers

    unit = units.get("rotary_alibi")
    source = unit.reference_path.read_text(encoding="utf-8")
    folder = tmp_path_factory.mktemp("red_team_second")
    traces = folder / f"red-team-{uuid.uuid4().hex[:10]}"
    traces.mkdir()
    attacks = {name: attack for name, attack in corpus(traces, unit).items() if SANDBOXED or not attack.sandboxed_only}
    paths = []
    for name, attack in attacks.items():
        path = folder / f"{name}.py"
        path.write_text(make_stub(source, unit) + "\n" + attack.source)
        paths.append(path)
    (folder / "reference.py").write_text(strip_markers(source))
    paths.append(folder / "reference.py")
    grader = Grader(unit, limits=Limits(wall_seconds=25, task_seconds=5, memory_bytes=MEMORY_LIMIT_BYTES),
                    sandbox="auto")
    try:
        results = {result.name: result for result in grader.grade_many(paths, jobs=CORPUS_JOBS)}
    finally:
        grader.close()
    deadline = time.monotonic() + 5
    while processes_named(traces.name) and time.monotonic() < deadline:
        time.sleep(0.1)
    return results, attacks, grader.groups is not None


@pytest.mark.parametrize("name", NAMES)
def test_hostile_submission_of_the_second_unit_scores_0(red_team_second_unit, name):
    results, attacks, grouped = red_team_second_unit
    if name not in attacks:
        pytest.skip("bubblewrap (bwrap) is not installed here: this attack is run only inside the sandbox")
    result = results[name]
    assert result.unit == "rotary_alibi" and result.score == 0, {t.id: t.output for t in result.tests if t.score}
    assert len(result.tests) == len(results["reference"].tests) and not result.grader_fault
    if attacks[name].grouped_only and not grouped:
        pytest.skip("no control group per job here: what this attack holds is bounded per process only")
    assert "ESCAPED" not in "\n".join([test.output for test in result.tests] + result.notes)


def test_the_second_units_reference_keeps_full_marks_beside_the_corpus(red_team_second_unit):
    results, _, _ = red_team_second_unit
    assert results["reference"].score == results["reference"].max_score == 100
