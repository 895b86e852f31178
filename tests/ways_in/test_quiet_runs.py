"""An ordinary nbgrader cycle prints no warning an instructor cannot act on (issue 25, point 6).

A real course in a temporary folder, the real `nbgrader` commands and kernel: `release`, then autograde,
generate_feedback and export for three students: one who filled the notebook in, one who handed the blank release
back, one who emptied a locked test cell; then the kit's own `grade` of the same folder, a student's `pytest -k
<task>` in the released folder, and the second unit's cycle in a course of its own. Before the fix every run
printed nbgrader's checksum warning for each hidden test of every submission (nbgrader issue 1961), four "Config
option `display_data_priority` not recognized" lines, SQLAlchemy's "not in session" warnings and nbconvert's
"Alternative text is missing"; the sandboxed kernel printed ipykernel's banner for a kernel started by hand ("NOTE:
When using the `ipython kernel` entry point, Ctrl-C will not work", "To connect another client to this kernel")
into the log for every submission; and a kernel slow to stop (torch's memory to give back, a busy machine) got
"Killed 2 process(es) the notebook's kernel left running": its own sandbox, still on its way out. Now the only
warning left is the one that means something: the checksum of the cell the third student edited.
"""

import csv
import json
import logging
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.core import units
from autograder.course.build import strip_markers
from autograder.course.notebook import COURSE, filled_notebook, grade_id as _grade_id, notebook_name
from autograder.course.release import nbgrader_environment, release, run_nbgrader
from autograder.sandbox.server import bubblewrap
from autograder.units.positional_encodings import rubric
from conftest import NOTEBOOK, UNIT

pytestmark = pytest.mark.skipif(bubblewrap() is None, reason="the course's kernel and grader run under bubblewrap")

ASSIGNMENT = rubric.ASSIGNMENT
WARNING = re.compile(r"warn|not recognized|deprecat", re.IGNORECASE)
EDITED_CELL = "sinusoidal_values"
# A line of nbgrader's own log: "[AutogradeApp | INFO] ...". Its message may go on over indented lines.
RECORD = re.compile(r"^\[\w+ \| (DEBUG|INFO|WARNING|ERROR|CRITICAL)\] ")




def _filled(release_notebook, code_text, unit=UNIT):
    return filled_notebook(release_notebook, unit.rubric.TASK_OF_FUNCTION, code_text)


def _warnings_by_student(log):
    """{student or "": [warning lines]} of an nbgrader log, each line under the submission being worked on."""
    found, student = {}, ""
    for line in log.splitlines():
        where = re.search(r"/(?:submitted|autograded)/([^/]+)/", line)
        if where and "| INFO]" in line:
            student = where.group(1)
        if WARNING.search(line):
            found.setdefault(student, []).append(line)
    return found


def _not_logged(log):
    """The lines of an nbgrader log that are not its records or their indented continuations: what another
    process (the kernel) printed into it."""
    found, in_record = [], False
    for line in log.splitlines():
        if RECORD.match(line):
            in_record = True
        elif not (in_record and line[:1].isspace() and line.strip()):
            in_record = False
            if line.strip():
                found.append(line)
    return found


def _warning_lines(text):
    return [line for line in text.splitlines() if WARNING.search(line)]


def _run(command, folder):
    """stdout and stderr of a command that must succeed."""
    done = subprocess.run(command, cwd=folder, env=nbgrader_environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    assert done.returncode == 0, done.stdout
    return done.stdout


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, reference_text):
    root = tmp_path_factory.mktemp("quiet")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    release(UNIT, root / "dist", course=course)
    blank = json.loads((course / "release" / ASSIGNMENT / NOTEBOOK).read_text())
    edited = _filled(blank, reference_text)
    for cell in edited["cells"]:
        if _grade_id(cell) == EDITED_CELL:
            cell["source"] = "pass  # the check, emptied"
    students = {"filled": _filled(blank, reference_text), "blank": blank, "edited": edited}
    for name, notebook in students.items():
        folder = course / "submitted" / name / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / NOTEBOOK).write_text(json.dumps(notebook))
    logs = {step: run_nbgrader(arguments, course=course).stdout for step, arguments in (
        ("autograde", ["autograde", ASSIGNMENT]), ("generate_feedback", ["generate_feedback", ASSIGNMENT]),
        ("export", ["export", "--to", "grades.csv"]))}
    # The kit's own route over the same folder, as docs/instructors.md runs it, and a student checking one task in
    # the released folder with the notebook filled in.
    logs["grade"] = _run([sys.executable, "-m", "autograder", "grade", "submitted", "--unit", UNIT.name,
                          "--out", str(root / "results")], course)
    student = root / "dist" / ASSIGNMENT
    (student / NOTEBOOK).write_text(json.dumps(students["filled"]))
    logs["pytest"] = _run([sys.executable, "-m", "pytest", "-k", "learned", "-p", "no:cacheprovider"], student)
    return course, logs


@pytest.fixture(scope="module")
def second_unit(tmp_path_factory):
    """The course's second assignment, in a course folder of its own: a student who filled it in."""
    root = tmp_path_factory.mktemp("quiet-second")
    course = root / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    unit = units.get("rotary_alibi")
    name, notebook = unit.name, notebook_name(unit)
    release(unit, root / "dist", course=course)
    blank = json.loads((course / "release" / name / notebook).read_text())
    folder = course / "submitted" / "filled" / name
    folder.mkdir(parents=True)
    (folder / notebook).write_text(json.dumps(_filled(blank, strip_markers(unit.reference_path.read_text()), unit)))
    return {step: run_nbgrader(arguments, course=course).stdout for step, arguments in (
        ("autograde", ["autograde", name]), ("generate_feedback", ["generate_feedback", name]),
        ("export", ["export", "--to", "grades.csv"]))}


def test_autograde_warns_only_of_the_locked_cell_a_student_edited(cycle):
    _, logs = cycle
    found = _warnings_by_student(logs["autograde"])
    assert set(found) == {"edited"}, found
    assert len(found["edited"]) == 1 and f"'checksum' for cell {EDITED_CELL} has changed" in found["edited"][0], found


def test_generate_feedback_and_export_print_no_warning(cycle):
    _, logs = cycle
    for step in ("generate_feedback", "export"):
        assert not _warning_lines(logs[step]), logs[step]


def test_nothing_but_nbgrader_writes_into_its_log(cycle):
    # The kernel's stdout and stderr are nbgrader's: a banner or a warning of ipykernel's lands in the log.
    _, logs = cycle
    for step in ("autograde", "generate_feedback", "export"):
        assert not _not_logged(logs[step]), (step, _not_logged(logs[step]))


def test_the_second_unit_is_graded_just_as_quietly(second_unit):
    for step, log in second_unit.items():
        assert not _warning_lines(log) and not _not_logged(log), (step, log)
    assert "Autograding" in second_unit["autograde"]


def test_the_kits_grade_and_a_students_self_check_print_no_warning(cycle):
    _, logs = cycle
    assert "3 submission(s) graded" in logs["grade"], logs["grade"]
    assert not _warning_lines(logs["grade"]), logs["grade"]
    assert re.search(r"^\d+ passed, \d+ deselected in ", logs["pytest"], re.MULTILINE), logs["pytest"]
    assert not _warning_lines(logs["pytest"]), logs["pytest"]


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def _zombie_children():
    me, found = os.getpid(), set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == me:
                found.add(int(entry.name))
    return found


def test_a_kernel_slow_to_stop_is_not_taken_for_processes_the_notebook_left(tmp_path, capfd):
    """BoundedExecute, the course's step, with the sandboxed kernel: nothing printed, nothing logged, nothing left.

    A kernel that does not stop when asked (a thread still running, torch's memory held) gets SIGTERM; the
    bubblewrap process jupyter_client watches dies at once, the sandbox below it a moment later. The step looked for
    leftovers in that moment, found the sandbox's init and what ran below it, and warned that it killed them.
    """
    from autograder.sandbox.kernel import SandboxedKernelManager
    from autograder.ways_in.nbgrader_bridge import BoundedExecute

    # Twenty processes in the sandbox, each with a copy of torch's memory to give back, make its end take a while.
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import os, threading, time, torch\nheld = torch.ones(2 ** 27)\nfor _ in range(20):\n"
        "    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n"
        "threading.Thread(target=time.sleep, args=(60,)).start()\nprint('running')")])
    kept, log = _Kept(), logging.getLogger("test_quiet_runs.kernel")
    log.addHandler(kept)
    log.setLevel(logging.DEBUG)
    zombies = _zombie_children()
    step = BoundedExecute(kernel_manager_class=SandboxedKernelManager, timeout=60)
    step.log = log
    try:
        step.preprocess(notebook, {"metadata": {"path": str(tmp_path)}})
    finally:
        log.removeHandler(kept)
    assert notebook.cells[0].outputs[0].text == "running\n"
    assert [record.getMessage() for record in kept.records if record.levelno >= logging.WARNING] == []
    printed = capfd.readouterr()
    assert printed.out == printed.err == "", printed  # ipykernel's banner went to the kernel's stdout
    assert _zombie_children() <= zombies  # the sandbox's init, reaped where it became this process's child


def test_every_submission_is_in_the_gradebook_with_its_grades(cycle):
    # The SQLAlchemy warning hidden in nbgrader_config.py said an add "will not proceed": nbgrader's own add
    # follows it, and every submission and every graded cell of it is in the database.
    course, _ = cycle
    with sqlite3.connect(course / "gradebook.db") as db:
        submitted = {row[0] for row in db.execute(
            "select student.id from submitted_assignment join student on student.id = submitted_assignment.student_id")}
        grades = db.execute("select count(*) from grade").fetchone()[0]
    assert submitted == {"filled", "blank", "edited"}
    graded_cells = sum(1 for test in rubric.TESTS)
    assert grades == 3 * graded_cells
    with open(course / "grades.csv", newline="") as handle:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    # The emptied check was put back from the gradebook, and the answer it checks is right.
    assert scores == {"filled": rubric.MAX_SCORE, "blank": 0, "edited": rubric.MAX_SCORE}


def test_every_picture_in_the_feedback_is_described(cycle):
    course, _ = cycle
    pages = {page.parts[-3]: page.read_text() for page in (course / "feedback").glob(f"*/{ASSIGNMENT}/*.html")}
    assert set(pages) == {"filled", "blank", "edited"}
    for student, text in pages.items():
        assert "No description has been provided" not in text, student
        # No empty figure (a demo cell whose student function raised after the figure was made) and no warning
        # of matplotlib's (a legend with nothing in it, when the grading run trains nothing).
        assert "with 0 Axes" not in text and "No artists with labels" not in text, student
    assert re.search(r'<img[^>]*alt="Figure 1 printed by this cell \(A fresh learned table', pages["filled"])


# ---------------------------------------------------------------------------------------------------------------
# The feedback page in a real browser, offline (issue 25, point 2): Debian's chromium and chromedriver, driven by
# selenium, with every host name unresolvable and a proxy that leads nowhere. CI installs both and sets
# KIT_REQUIRE_BROWSER=1, so there the test fails rather than skips when they are missing.

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _browser():
    chromium, driver = shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None
    if not (chromium and driver and webdriver):
        why = "Chromium, chromedriver or selenium is missing (apt-get install chromium chromium-driver)"
        if os.environ.get("KIT_REQUIRE_BROWSER"):
            pytest.fail(why + ", and KIT_REQUIRE_BROWSER is set")
        pytest.skip(why)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,900",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


def test_the_feedback_page_renders_offline_in_a_real_browser(cycle, tmp_path):
    course, _ = cycle
    page = course / "feedback" / "filled" / ASSIGNMENT / NOTEBOOK.replace(".ipynb", ".html")
    browser = _browser()
    try:
        browser.get(page.as_uri())
        # Formulas: MathML, drawn by the browser itself, each with a size on the page; no TeX left in the text.
        sizes = browser.execute_script(
            "return Array.from(document.querySelectorAll('math')).map(m => m.getBoundingClientRect().width)")
        text = browser.execute_script("return document.body.innerText")
        # Pictures: loaded, and each more than one colour.
        pictures = browser.execute_script(
            "return Array.from(document.images).map(i => [i.naturalWidth, i.complete, i.alt])")
        # The screenshot shows the first display formula, where a page without its MathJax would show raw TeX.
        browser.execute_script("(document.querySelector('math[display=block]') || document.querySelector('math'))"
                               ".scrollIntoView({block: 'center'})")
        ARTIFACTS.mkdir(exist_ok=True)
        shot = tmp_path / "feedback.png"
        assert browser.save_screenshot(str(shot))
        shutil.copy(shot, ARTIFACTS / "feedback_offline.png")
        requests = [json.loads(entry["message"])["message"] for entry in browser.get_log("performance")]
    finally:
        browser.quit()
    assert len(sizes) > 20 and all(width > 0 for width in sizes), sizes
    for tex in ("\\frac", "\\texttt", "\\cdot", "\\_", "$$"):
        assert tex not in text, tex
    assert pictures and all(width > 0 and complete and alt for width, complete, alt in pictures), pictures
    left = [event["params"]["request"]["url"] for event in requests if event["method"] == "Network.requestWillBeSent"
            and not event["params"]["request"]["url"].startswith(("file:", "data:", "about:"))]
    assert left == [], left
    from PIL import Image
    with Image.open(shot) as image:
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or range(2)) > 1  # not a blank page
