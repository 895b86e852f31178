"""Shared fixtures: one Grader for the whole run (its hidden cases are built once), and ways to write submissions."""

import contextlib
import json
import os
import sys
import time
from pathlib import Path

# Torch in the test processes runs on one thread, as it does in the grader's jobs. pyproject's -n 2 starts two
# workers on the course machines' two CPUs; with torch's default (a thread per CPU) each worker's own tensor work
# (cases, references, drawn inputs) and the commands it starts (nbgrader, kernels, the command line, which inherit
# this) ran four threads on two CPUs, and the quick tier took 126 s against 97 s on one thread (benchmarks/RESULTS.md,
# tenth session). Set before torch is imported; an OMP_NUM_THREADS given by the caller is kept. What a grade says
# does not depend on it: the jobs set their own (sandbox/server.py, child_environment).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.core import units  # noqa: E402
from autograder.course.build import make_stub, strip_markers, student_folder  # noqa: E402
from autograder.course.notebook import notebook_name, source_folder  # noqa: E402
from autograder.core.grade import Grader  # noqa: E402
from autograder.sandbox.server import Limits  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))  # where torch was imported before this file

HERE = Path(__file__).parent
# The tests sit in folders by subject (core, sandbox, intake, units/<unit>, ways_in, course, benchmarks), their
# shared helpers in helpers/. Each folder is put on the import path here, once, before any test file is imported:
# a test imports a helper (or a fixture of another test file) by its module name, wherever the two files sit.
TEST_FOLDERS = ("core", "sandbox", "intake", "units", "ways_in", "course", "benchmarks")
for _folder in [HERE / "helpers", *sorted({path.parent for name in TEST_FOLDERS
                                           for path in (HERE / name).rglob("test_*.py")})]:
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))
# pytest-xdist's workers run with COLUMNS=80, and every command a test starts would inherit it: the kit's table takes
# COLUMNS as the width it may use (report.output_width). A test that wants a width sets it for its own command.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)
# Most tests are of the first unit; each test file of the second says so itself.
UNIT = units.get("positional_encodings")
REFERENCE = UNIT.reference_path
STUDENT_DIR = student_folder(UNIT)
SOURCE = source_folder(UNIT)
NOTEBOOK = notebook_name(UNIT)


# The files whose module fixtures take minutes (nbgrader's course runs, the platforms' containers), started first:
# pytest's two workers (pyproject's -n 2, a file each at a time) then share out the short files and end together.
SLOWEST_FIRST = ("test_platform_containers.py", "test_nbgrader_course.py", "test_nbgrader_second_unit.py", "test_scaffold.py",
                 "test_docker_kit.py", "test_nbgrader_slips.py", "test_nbgrader_wrong_unit.py")


def pytest_configure(config):
    """The generated files (student folders, nbgrader's source notebooks) are not committed: the run builds them
    first, once, in the process that starts pytest's workers (or the only process), before any test reads them."""
    if not hasattr(config, "workerinput"):
        from autograder.course.build import build

        build()


# The suite in two speeds (issue 38). A plain `pytest` runs the quick tier: the modules' own tests that need no more
# than a few gradings, each unit's reference full and stubs 0, in about 3 minutes on 2 cores, for between edits. `pytest --full` (what .ci/run runs)
# adds the tests marked `full`: those that start the real outside components (nbgrader's course runs and a Jupyter
# kernel, the platforms' Docker containers, a browser, tier C's job users), grade the held-in blind sets and the
# mutation sets, time paths for real, or run the benchmarks and lessons end to end. A file is marked here, by name,
# or a test in its own file with @pytest.mark.full.
FULL_FILES = {
    # real nbgrader, a real Jupyter kernel, the notebooks end to end
    "test_nbgrader_course.py", "test_nbgrader_second_unit.py", "test_nbgrader_slips.py", "test_nbgrader_wrong_unit.py",
    "test_nbgrader_unit_choice.py", "test_quiet_runs.py", "test_readme_cycle.py", "test_count_routes.py",
    "test_grader_voice_routes.py", "test_borrowing_units_routes.py", "test_kernel_sandbox.py", "test_kernel_folders.py",
    "test_figures_clean.py", "test_capstone.py", "test_long_context_capstone.py", "test_a_slip_costs_its_cell.py",
    "test_vision_positions_capstone.py",
    # the platforms' containers (a real Docker daemon)
    "test_platform_containers.py", "test_docker_kit.py",
    # a real browser, the documentation site
    "test_browser_render.py", "test_docs_site.py",
    # the scaffold's new unit built and checked whole
    "test_scaffold.py", "test_check_unit_tools.py",
    # tier C: jobs as users of their own; the red team's corpus; machine faults
    "test_job_users.py", "test_uid_leases.py", "test_red_team.py", "test_machine_faults.py", "test_cleanup.py",
    # the held-in blind sets, the error model's mutants, the self-checks' mutation and naming runs
    "test_blind_sets.py", "test_error_model.py", "test_unlisted_mistakes.py", "test_self_check_mutation.py",
    "test_self_checks_name_mistakes.py", "test_one_mistake_one_charge.py", "test_one_charge_at_every_seed.py",
    "test_rotary_alibi_alternatives_agree.py", "test_naming_faults.py",
    "test_alternative_formulations.py", "test_sample_class.py",
    # many submissions graded through the sandbox, one by one (the grader's own properties, end to end)
    "test_grader_voice.py", "test_form_slips.py", "test_self_checks.py", "test_class_grading.py",
    "test_behaviour_contracts.py", "test_rotary_alibi_grading.py", "test_timing_fresh_inputs.py", "test_contracts.py",
    "test_sandbox.py", "test_protocol.py", "test_self_check_teaches.py", "test_nbgrader_inert.py",
    "test_student_feedback.py", "test_similarity.py", "test_timing_tier.py", "test_bad_submissions.py",
    "test_unit_recognition.py", "test_command_line.py", "test_demo_table.py", "test_loop_count_grading.py",
    "test_threshold_cases.py", "test_command_line_refusals.py", "test_count_end_to_end.py", "test_timing_budget.py",
    # timing for real, whole class runs, the benchmarks' smoke runs
    "test_timing_same_cpu.py", "test_timing_integrity.py", "test_class_run_ends.py", "test_class_run.py",
    "test_benchmark_runs.py", "test_plain_course.py", "test_demo_every_unit.py", "test_hidden_cases_per_student.py",
    "test_vision_positions_timed_path.py",
    # outside code: timm (installed apart, see pyproject.toml), and the papers' functions re-typed
    "test_vision_positions_agrees_with_timm.py",
}


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true", default=False,
                     help="run the full suite (what .ci/run runs): the quick tier and every test marked full")


def pytest_ignore_collect(collection_path, config):
    """The quick tier does not import the full suite's files at all: some build every unit's hidden cases at import,
    for their parameters (about 12 s of each worker's collection). A file named on the command line is still
    collected, and its tests deselected as before."""
    if collection_path.name in FULL_FILES and not config.getoption("--full"):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in FULL_FILES:
            item.add_marker(pytest.mark.full)
    if not config.getoption("--full"):
        quick = [item for item in items if item.get_closest_marker("full") is None]
        left = [item for item in items if item.get_closest_marker("full") is not None]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = quick
    rank = {name: at for at, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's tests keep their order


@pytest.fixture(scope="session")
def grader():
    return Grader(UNIT, sandbox="auto")  # bubblewrap where installed (CI installs it), else a warning


@pytest.fixture(scope="session")
def quick_grader():
    """A grader with short limits, for submissions that hang."""
    return Grader(UNIT, limits=Limits(wall_seconds=20, task_seconds=4), sandbox="auto")


# Job user ids for the tests that run processes as a job's user themselves: each test file its own, so that no two
# files (run side by side by pytest's workers) act on one id. A grading run's pool leases from the range's start.
from autograder.sandbox.users import JOB_UIDS  # noqa: E402

TEST_UIDS = {"test_job_users.py": (JOB_UIDS.stop - 1, JOB_UIDS.stop - 2), "test_cleanup.py": (JOB_UIDS.stop - 3,),
             "test_uid_leases.py": (JOB_UIDS.stop - 4, JOB_UIDS.stop - 5)}


@contextlib.contextmanager
def leased_on_this_machine(*uids, wait=600):
    """Hold the machine's leases of ``uids`` (the folder every grader here uses) for the block, waiting for them.

    For a test that runs processes as a job's user outside a pool, or whose pools lease in a folder of the test's
    own: without this a grader's pool elsewhere could lease the id meanwhile and kill those processes (a keeper
    ends a job by killing everything that runs as its id), or the test's could kill the grader's."""
    from autograder.sandbox import users

    folder = users.lease_folder()
    held = []
    try:
        deadline = time.monotonic() + wait
        for uid in uids:
            while (lease := users.take_lease(folder, uid)) is None:
                assert time.monotonic() < deadline, f"job user {uid} stayed leased for {wait} s"
                time.sleep(0.05)
            held.append(lease)
        yield
    finally:
        for lease in held:
            lease.close()  # not marked clean: the next holder clears what the test's processes left
        os.close(folder)


def correctness_grader(unit):
    """A grader of ``unit`` whose timing tier gives its points unmeasured: for tests of correctness alone."""
    grader = Grader(unit, sandbox="auto", timing_mode="give")
    yield grader
    grader.close()


@pytest.fixture(scope="session")
def reference_text():
    return strip_markers(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def stub_text():
    return make_stub(REFERENCE.read_text(encoding="utf-8"), UNIT)


def notebook(cells, metadata_of=None):
    """An nbformat-4 notebook whose code cells are ``cells`` (strings)."""
    metadata_of = metadata_of or {}
    return json.dumps({
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [{"cell_type": "code", "source": source, "metadata": metadata_of.get(i, {}), "outputs": [],
                   "execution_count": None} for i, source in enumerate(cells)],
    })


def by_test(result):
    return {test.id: test for test in result.tests}


def graded_with(grader, unit, fragment, folder):
    """``unit``'s reference (markers removed) with ``fragment`` appended, graded by ``grader``: {test id: result}."""
    path = Path(folder) / f"{unit.module_name}.py"
    path.write_text(strip_markers(unit.reference_path.read_text(encoding="utf-8")) + fragment)
    return by_test(grader.grade(path))


def task_scores(result):
    from autograder.units.positional_encodings import rubric

    return {task: result.task_score(task) for task in rubric.TASK_NAMES}
