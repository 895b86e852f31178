"""Shared fixtures: one Grader for the whole run (its hidden cases are built once), and ways to write submissions."""

import contextlib
import json
import os
import time
from pathlib import Path

import pytest

from autograder.core import units
from autograder.course.build import make_stub, strip_markers, student_folder
from autograder.course.notebook import notebook_name, source_folder
from autograder.core.grade import Grader
from autograder.sandbox.server import Limits

HERE = Path(__file__).parent
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


def pytest_collection_modifyitems(items):
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
