"""An ordinary nbgrader cycle prints no warning an instructor cannot act on (issue 25, point 6).

A real course in a temporary folder, the real `nbgrader` commands and kernel: `release`, then autograde,
generate_feedback and export for three students: one who filled the notebook in, one who handed the blank release
back, one who emptied a locked test cell. Before the fix every run printed nbgrader's checksum warning for each
hidden test of every submission (nbgrader issue 1961), four "Config option `display_data_priority` not recognized"
lines, SQLAlchemy's "not in session" warnings and nbconvert's "Alternative text is missing". Now the only warning
left is the one that means something: the checksum of the cell the third student edited.
"""

import csv
import json
import os
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from autograder.course.notebook import COURSE, function_source
from autograder.course.release import release, run_nbgrader
from autograder.units.positional_encodings import rubric
from conftest import NOTEBOOK, UNIT

ASSIGNMENT = rubric.ASSIGNMENT
WARNING = re.compile(r"warn|not recognized|deprecat", re.IGNORECASE)
EDITED_CELL = "sinusoidal_values"


def _grade_id(cell):
    return ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")


def _filled(release_notebook, code_text):
    notebook = json.loads(json.dumps(release_notebook))
    for cell in notebook["cells"]:
        if _grade_id(cell) in rubric.TASK_OF_FUNCTION:
            cell["source"] = function_source(code_text, _grade_id(cell))
    return notebook


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
    return course, logs


def test_autograde_warns_only_of_the_locked_cell_a_student_edited(cycle):
    _, logs = cycle
    found = _warnings_by_student(logs["autograde"])
    assert set(found) == {"edited"}, found
    assert len(found["edited"]) == 1 and f"'checksum' for cell {EDITED_CELL} has changed" in found["edited"][0], found


def test_generate_feedback_and_export_print_no_warning(cycle):
    _, logs = cycle
    for step in ("generate_feedback", "export"):
        assert not [line for line in logs[step].splitlines() if WARNING.search(line)], logs[step]


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

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


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
