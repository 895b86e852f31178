"""nbgrader, run for the kit: its environment, its errors made loud, and the release students receive."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.course.notebook import COURSE

# From the generated student folder, with its test_*.py: the self-checks' files (their table of known mistakes
# included), and the folder's README and
# requirements for the student.
SELF_CHECK_FILES = ("conftest.py", "notebook_loader.py", "pytest.ini", "known_mistakes.json", "README.md",
                    "requirements.txt")


class CourseError(RuntimeError):
    """nbgrader could not run, or failed; the message says what to do."""


def nbgrader_environment():
    """The environment to run nbgrader in: this Python's bin folder first on PATH.

    nbgrader runs ``alembic`` (its database migrations) by name, from PATH; run
    from a virtual environment that is not activated, it would not find it.
    """
    environment = dict(os.environ)
    bin_folder = str(Path(sys.executable).parent)
    environment["PATH"] = bin_folder + os.pathsep + environment.get("PATH", "")
    return environment


def run_nbgrader(arguments, course=COURSE, check=True):
    """Run ``nbgrader ARGUMENTS`` in the course folder; returns the CompletedProcess (its log in .stdout).

    nbgrader exits 0 even when its config file failed to load (it logs an ERROR
    and goes on without it), so with ``check`` any ERROR line counts as failure.
    """
    environment = nbgrader_environment()
    for program in ("nbgrader", "alembic"):
        if shutil.which(program, path=environment["PATH"]) is None:
            raise CourseError(f"{program} is not installed beside {sys.executable}: "
                              "pip install -e '.[course]' in the kit's environment.")
    process = subprocess.run([shutil.which("nbgrader", path=environment["PATH"]), *arguments], cwd=course,
                             env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    errors = [line for line in process.stdout.splitlines() if "| ERROR]" in line]
    if check and (process.returncode != 0 or errors):
        raise CourseError(f"nbgrader {' '.join(arguments)} failed (exit {process.returncode}):\n"
                          + "\n".join(process.stdout.splitlines()[-40:]))
    return process


def release(unit, out, course=COURSE, student_dir=None):
    """Make the folder a student of ``unit`` receives, and a zip of it, in ``out``; returns (folder, zip).

    The folder is nbgrader's release of the assignment (the notebook with its
    solutions cleared and hidden tests removed, and checks.py) plus the
    self-check files, so that ``pytest -k <task>`` runs there on the notebook.
    """
    from autograder.course.build import build, student_folder

    build(chosen=[unit.name])  # the source notebook and the student folder are generated, never committed
    student_dir = Path(student_dir or student_folder(unit))
    course, out = Path(course).resolve(), Path(out).resolve()
    if not (course / "source" / unit.name).is_dir():  # another course folder: it gets the kit's source folder
        shutil.copytree(COURSE / "source" / unit.name, course / "source" / unit.name)
    run_nbgrader(["generate_assignment", unit.name, "--force"], course=course)
    folder = out / unit.name
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(course / "release" / unit.name, folder)
    for path in sorted(student_dir.glob("test_*.py")) + [student_dir / name for name in SELF_CHECK_FILES]:
        shutil.copy2(path, folder / path.name)
    archive = shutil.make_archive(str(out / unit.name), "zip", root_dir=out, base_dir=unit.name)
    return folder, Path(archive)
