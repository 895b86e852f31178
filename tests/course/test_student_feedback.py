"""Feedback for each student from a class run (autograder/course/feedback.py), through the real command line.

The class: the reference, the blank stubs, one typical mistake, a submission whose function raises hostile
text (HTML, a javascript: link, Markdown, backticks), one that writes hostile text and dies while loading, a
file that is not Python, a file whose name is hostile, and a notebook with two typical mistakes. It is graded
once, by ``python -m autograder grade --out``, with the timing tier's points given unmeasured, so every
message is the same from one run to the next. The notebook is graded a second time by nbgrader's
``TrustedGrades`` step, which writes what nbgrader's feedback shows in each test's cell.
"""

import base64
import csv
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from autograder.core import seeds, units
from autograder.core.grade import Result, TestResult as Row  # (not a pytest class)
from autograder.course import feedback
from autograder.intake.inert import csv_cell, inert, inert_line
from autograder.ways_in.demo import apply, mistakes_of

ROOT = Path(__file__).resolve().parents[2]
UNIT = units.get("positional_encodings")
RUBRIC = UNIT.rubric
HOSTILE = ("<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3)) "
           "![i](https://evil.example/i.png) <https://evil.example> ``` `tick` $x^2$ **bold**")
MISTAKE = next(mistake for mistake in mistakes_of(UNIT) if mistake.name == "k_over_d")
NOTEBOOK_MISTAKES = [mistake for mistake in mistakes_of(UNIT) if mistake.name in ("scale_on_one_term", "scaled_bias")]
HOSTILE_NAME = "<img src=x onerror=alert(9)>[n](javascript:x)"
VOID = {"meta", "img", "br", "hr", "link", "input"}
HEAD = {"html", "head", "meta", "title", "style", "body"}
HEAD_ATTRIBUTES = {"html": ("lang",), "meta": ("charset", "http-equiv", "content", "name")}


class Page(HTMLParser):
    """An HTML page as html.parser reads it: each element's tag, attributes and text (its descendants' too)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self._open = [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, attrs, []))
        if tag not in VOID:
            self._open.append(len(self.elements) - 1)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, attrs, []))

    def handle_endtag(self, tag):
        while self._open:
            if self.elements[self._open.pop()][0] == tag:
                break

    def handle_data(self, data):
        for index in self._open:
            self.elements[index][2].append(data)

    def all(self, tag, **wanted):
        return [(dict(attrs), "".join(text)) for name, attrs, text in self.elements
                if name == tag and all(dict(attrs).get(key) == value for key, value in wanted.items())]

    def attributes(self):
        return [(tag, name, value) for tag, attrs, _ in self.elements for name, value in attrs]


def allowed_attribute(tag, name):
    return name in feedback.ATTRIBUTES["*"] or name in feedback.ATTRIBUTES.get(tag, ())


def assert_only_the_template(page):
    """No element or attribute the page's template does not write, no link off the page, no image not inline."""
    for tag, attrs, _ in page.elements:
        assert tag in feedback.TAGS | HEAD, tag
        for name, value in attrs:
            if tag in HEAD:
                assert name in HEAD_ATTRIBUTES.get(tag, ()), (tag, name)
                continue
            assert allowed_attribute(tag, name), (tag, name)
            if name == "href":
                assert re.fullmatch(r"#[A-Za-z0-9_-]+", value), value
            if name == "src":
                assert tag == "img" and value.startswith("data:image/png;base64,"), value


def messages(page):
    """{test id: the grader's message as the page shows it} (the <pre> after each test's heading)."""
    found, current = {}, None
    for tag, attrs, text in page.elements:
        attrs = dict(attrs)
        if tag == "h3":
            current = attrs["id"]
        elif tag == "pre" and attrs.get("class") == "message" and current is not None:
            found[current] = "".join(text)
    return found


def html_points(page):
    """{test id: (points, out of)} from each test's heading."""
    points = {}
    for attrs, text in page.all("h3"):
        earned, most = re.search(r": ([\d.]+) of ([\d.]+) points", text).groups()
        points[attrs["id"]] = (float(earned), float(most))
    return points


def markdown_points(text):
    return {match[0].replace("\\_", "_"): (float(match[1]), float(match[2]))
            for match in re.findall(r"^### (\S+): ([\d.]+) of ([\d.]+) points", text, re.MULTILINE)}


def markdown_renderers():
    """CommonMark with raw HTML on (markdown-it) and mistune with bare URLs made links: what a student's viewer
    might be."""
    from markdown_it import MarkdownIt
    import mistune

    return {"markdown-it": MarkdownIt("commonmark", {"html": True}).enable("table").render,
            "mistune": mistune.create_markdown(escape=False, plugins=["url", "table", "strikethrough"])}


def assert_markdown_is_inert(text):
    for name, render in markdown_renderers().items():
        page = Page(render(text))
        tags = {tag for tag, _, _ in page.elements}
        assert tags <= {"h1", "h2", "h3", "p", "strong", "code", "pre", "table", "thead", "tbody", "tr", "th", "td"}, \
            (name, tags)
        # a fenced block's language is the only attribute (class="language-text")
        assert all(tag == "code" and attr == "class" for tag, attr, _ in page.attributes()), (name, page.attributes())


# --- the class, graded once ---------------------------------------------------------------------------

def _notebook_with_mistakes():
    notebook = nbformat.read(ROOT / "assignments" / "source" / UNIT.name / f"{UNIT.name}.ipynb", as_version=4)
    for mistake in NOTEBOOK_MISTAKES:
        cells = [cell for cell in notebook.cells if cell.cell_type == "code" and mistake.old in cell.source]
        assert len(cells) == 1, mistake.name
        cells[0].source = cells[0].source.replace(mistake.old, mistake.new)
    return notebook


@pytest.fixture(scope="module")
def graded(tmp_path_factory, reference_text, stub_text):
    """The class folder, the results folder and the command's output."""
    base = tmp_path_factory.mktemp("feedback")
    folder, out = base / "class", base / "out"
    folder.mkdir()
    files = {
        "reference.py": reference_text,
        "blank_stubs.py": stub_text,
        "typical_mistake.py": apply(MISTAKE, reference_text),
        "hostile_raise.py": reference_text + "\n\ndef sinusoidal_table(*args, **kwargs):\n"
                                             f"    raise ValueError({HOSTILE!r} + '\\n' + {HOSTILE!r})\n",
        "hostile_crash.py": f"import os, sys\nsys.stderr.write({HOSTILE!r})\nsys.stderr.flush()\nos._exit(3)\n",
        "not_python.py": "def sinusoidal_table(:\n    <script>alert(1)</script>\n",
        f"{HOSTILE_NAME}.py": reference_text,
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    nbformat.write(_notebook_with_mistakes(), folder / "notebook_mistakes.ipynb")
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--unit", UNIT.name,
                          "--out", str(out), "--jobs", "2", "--without-gpu", "give"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    with open(out / "grades.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return folder, out, rows, run


def _stem(json_path):
    return json_path.name[:-len(".json")]


def _json_files(out):
    return sorted(path for path in out.glob("*.json"))


def _pages(out, stem):
    place = out / "feedback" / stem
    return tuple((place / f"{UNIT.name}.{kind}").read_text(encoding="utf-8") for kind in ("html", "md"))


def _saved(path):
    return json.loads(path.read_text(encoding="utf-8"))["autograder"]


def _stem_of(out, name):
    return next(_stem(path) for path in _json_files(out) if _saved(path)["name"] == name)


def test_every_student_gets_one_html_and_one_md_page_beside_their_json(graded):
    folder, out, rows, run = graded
    stems = {_stem(path) for path in _json_files(out)}
    assert len(stems) == len(rows) == len(list(folder.iterdir()))
    for place in (out / "feedback").iterdir():
        assert place.is_dir() and place.name in stems
        assert sorted(path.name for path in place.iterdir()) == [f"{UNIT.name}.html", f"{UNIT.name}.md"]
    assert {place.name for place in (out / "feedback").iterdir()} == stems
    assert not (out / "feedback" / feedback.PROBLEMS).exists()
    assert "feedback" in run.stderr.splitlines()[-1]  # the last line names what was written


def test_each_test_s_points_are_those_of_grades_csv_and_the_rubric(graded):
    _, out, rows, _ = graded
    by_name = {row["submission"]: row for row in rows}
    for path in _json_files(out):
        saved = _saved(path)
        row = by_name[csv_cell(saved["name"])]
        page, markdown = _pages(out, _stem(path))
        expected = {test.id: (float(row[test.id]), float(test.points)) for test in RUBRIC.TESTS}
        assert html_points(Page(page)) == expected == markdown_points(markdown)
        total = f"{float(row['total']):g} of {float(row['max_score']):g} points"
        assert total in page and total in markdown
    reference = html_points(Page(_pages(out, "reference")[0]))
    assert reference == {test.id: (test.points, test.points) for test in RUBRIC.TESTS}
    assert all(earned == 0 for earned, _ in html_points(Page(_pages(out, "blank_stubs")[0])).values())
    mistaken = html_points(Page(_pages(out, "typical_mistake")[0]))
    lost = {RUBRIC.TEST_BY_ID[test].task for test, (earned, most) in mistaken.items() if earned < most}
    assert lost == {MISTAKE.task}


def test_each_test_s_message_is_the_results_message_in_full(graded):
    _, out, _, _ = graded
    for path in _json_files(out):
        saved = _saved(path)
        page, markdown = _pages(out, _stem(path))
        shown = messages(Page(page))
        assert list(shown) == [test["id"] for test in saved["tests"]]  # rubric order
        for test in saved["tests"]:
            said = f"{test['id']} ({test['score']:g} of {test['max_score']:g} points): {test['output']}"
            assert shown[test["id"]] == inert(said)
            assert f"\n{inert(said)}\n" in markdown
        told = seeds.for_student(units.get(saved["unit"]), saved["seed"])  # never the seed itself
        notes = saved["notes"] + ([told] if told else [])
        assert [text for _, text in Page(page).all("pre", **{"class": "note"})] == [inert(note) for note in notes]


def test_a_failed_test_says_what_to_look_at(graded):
    _, out, _, _ = graded
    page = Page(_pages(out, "typical_mistake")[0])
    looks = page.all("div", **{"class": "look"})
    assert looks and all(f"pytest -k {MISTAKE.task}" in text for _, text in looks)
    assert any("Likely mistake:" in text and MISTAKE.says in text for _, text in looks)
    assert Page(_pages(out, "reference")[0]).all("div", **{"class": "look"}) == []


def test_hostile_text_is_shown_escaped_and_does_nothing(graded):
    _, out, _, _ = graded
    for stem in ("hostile_raise", "hostile_crash", "not_python", _stem_of(out, HOSTILE_NAME)):
        page, markdown = _pages(out, stem)
        assert "<script" not in page.lower() and "<img src=x" not in page.lower()  # as markup: never
        attributes = Page(page).attributes()
        assert not any(name.lower().startswith("on") for _, name, _ in attributes)
        assert "javascript:" not in "".join(value or "" for _, _, value in attributes).lower()
        assert_only_the_template(Page(page))
        assert_markdown_is_inert(markdown)
    for stem in ("hostile_raise", "hostile_crash"):
        page, markdown = _pages(out, stem)
        assert any(HOSTILE in text for text in messages(Page(page)).values())  # shown, as text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and HOSTILE in markdown
    named = Page(_pages(out, _stem_of(out, HOSTILE_NAME))[0])
    assert named.all("strong")[0][1] == HOSTILE_NAME


def test_no_page_loads_anything_from_elsewhere(graded):
    _, out, _, _ = graded
    for place in (out / "feedback").iterdir():
        page = Page((place / f"{UNIT.name}.html").read_text(encoding="utf-8"))
        assert_only_the_template(page)
        assert not any(re.match(r"(?i)\s*([a-z]+:)?//", value or "") for _, _, value in page.attributes()), place.name
        policy = page.all("meta", **{"http-equiv": "Content-Security-Policy"})[0][0]["content"]
        assert "default-src 'none'" in policy and "img-src data:" in policy
        assert "url(" not in "".join(text for _, text in page.all("style"))


def test_the_picture_is_inline_where_part_of_the_points_were_lost(graded):
    _, out, _, _ = graded
    images = Page(_pages(out, "typical_mistake")[0]).all("img")
    assert len(images) == 1
    data = images[0][0]["src"].removeprefix("data:image/png;base64,")
    assert base64.b64decode(data, validate=True).startswith(b"\x89PNG\r\n\x1a\n")
    assert f"{MISTAKE.task} " in images[0][0]["alt"]
    for stem in ("reference", "blank_stubs", "not_python", "hostile_crash"):  # all or nothing: no picture helps
        assert Page(_pages(out, stem)[0]).all("img") == []


def test_a_submission_that_could_not_run_gets_its_feedback_with_why(graded):
    _, out, _, _ = graded
    # Died while loading: no test could run, and every test's message says why.
    saved, page = _saved(out / "hostile_crash.json"), Page(_pages(out, "hostile_crash")[0])
    assert page.all("p", **{"class": "alert"})
    reason = saved["tests"][0]["output"]
    assert "Not graded" in reason and all(test["output"] == reason for test in saved["tests"])
    assert all(text.endswith(inert(reason)) for text in messages(page).values())
    # Not Python: the loader's note says so at the top, and each test says what is missing.
    saved, page = _saved(out / "not_python.json"), Page(_pages(out, "not_python")[0])
    assert any("SyntaxError" in note for note in saved["notes"])
    assert any("SyntaxError" in text for _, text in page.all("pre", **{"class": "note"}))
    assert all(earned == 0 for earned, _ in html_points(page).values())
    assert all("not defined in your submission" in messages(page)[test.id] for test in RUBRIC.TESTS
               if test.task != RUBRIC.TIMING.name)


def test_the_feedback_says_what_nbgrader_s_feedback_says(graded, monkeypatch):
    """TrustedGrades is the step of `nbgrader autograde` that writes each graded cell's output, which nbgrader's
    feedback page shows; run on the same notebook, each cell holds the message of the kit's page for its test."""
    from autograder.core import seeds
    from nbgrader_class import trusted_grades

    _, out, _, _ = graded
    monkeypatch.delenv(seeds.SECRET_FILE_VARIABLE, raising=False)
    notebook = trusted_grades(_notebook_with_mistakes(), UNIT, "notebook_mistakes", monkeypatch)
    in_cells = {}
    for cell in notebook.cells:
        grade_id = ((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id")
        if grade_id in RUBRIC.TEST_BY_ID and cell.cell_type == "code":
            first = cell.outputs[0]
            stream = first["output_type"] == "stream"
            in_cells[grade_id] = first["text"].removesuffix("\n") if stream else first["evalue"]
    shown = messages(Page(_pages(out, "notebook_mistakes")[0]))
    assert set(in_cells) == set(shown) == set(RUBRIC.TEST_BY_ID)
    assert {test: inert(text) for test, text in in_cells.items()} == shown
    points = {test: re.match(rf"{test} \(([\d.]+) of ([\d.]+) points\)", text).groups()
              for test, text in in_cells.items()}
    lost = {RUBRIC.TEST_BY_ID[test].task for test, (earned, most) in points.items() if float(earned) < float(most)}
    assert lost == {mistake.task for mistake in NOTEBOOK_MISTAKES} | {"timing"}  # timing: both paths wrong


# --- the escaping, for any text ------------------------------------------------------------------------

def _result(name, note, output, passed_output):
    tests = [Row(test.id, test.task, 0, test.points, output) for test in RUBRIC.TESTS]
    tests[1] = Row(tests[1].id, tests[1].task, tests[1].max_score, tests[1].max_score, passed_output)
    return Result(name, "", tests, [note], unit=UNIT.name)


# Besides any text: texts that end a fence or a code span of fixed length and go on with markup.
ANY_TEXT = st.text(max_size=200) | st.sampled_from([
    HOSTILE, "`` ` ```` \n```\n~~~", "x\n```\n<script>alert(1)</script>\n[x](javascript:alert(1))\n```",
    "`<img src=x onerror=alert(1)>` [x](javascript:alert(1))", "</pre><script>x</script>", "<!-- a -->", "]]>",
    "&amp; &lt; &#0;", "\r\n\x1b[2J\u202e"])


@settings(max_examples=150, deadline=None)
@given(name=ANY_TEXT, note=ANY_TEXT, output=ANY_TEXT, passed_output=ANY_TEXT)
@example(name="", note="\n", output="\nline 2", passed_output="")  # a parser drops one newline right after <pre>
def test_any_student_text_is_shown_as_text_in_the_html(name, note, output, passed_output):
    result = _result(name, note, output, passed_output)
    page = Page(feedback.html_page(result))
    assert_only_the_template(page)
    assert page.all("strong")[0][1] == inert_line(name)
    assert [text for _, text in page.all("pre", **{"class": "note"})] == [inert(note)]
    assert messages(page) == {test.id: inert(feedback.verdict_text(test)) for test in result.tests}


@settings(max_examples=150, deadline=None)
@given(text=ANY_TEXT)
def test_any_student_text_stays_inside_its_code_block_in_markdown(text):
    for name, render in markdown_renderers().items():
        page = Page(render(feedback.md_fenced(text)))
        assert [tag for tag, _, _ in page.elements] == ["pre", "code"], name
        assert page.all("code")[0][1] == inert(text) + "\n", name
        page = Page(render("Student: " + feedback.md_code_span(text)))
        assert [tag for tag, _, _ in page.elements] == ["p", "code"], name
        shown = page.all("code")[0][1]
        assert shown == (inert_line(text) or " "), name


@settings(max_examples=60, deadline=None)
@given(name=ANY_TEXT, note=ANY_TEXT, output=ANY_TEXT, passed_output=ANY_TEXT)
def test_a_whole_markdown_page_renders_to_nothing_but_its_template(name, note, output, passed_output):
    assert_markdown_is_inert(feedback.markdown_page(_result(name, note, output, passed_output)))


# --- where the files go ----------------------------------------------------------------------------------

def test_a_folder_name_is_never_a_path(tmp_path):
    result = _result("x", "n", "o", "p")
    for bad in ("../up", "a/b", ".hidden", "", "..", "a\nb"):
        with pytest.raises(ValueError):
            feedback.write_feedback(tmp_path, [result], [bad])
    assert not any((tmp_path / "feedback").glob("*/*"))


def test_without_nh3_the_markdown_is_written_and_the_missing_html_is_said(tmp_path, monkeypatch):
    monkeypatch.setattr(feedback, "_nh3_missing", lambda: True)
    root = feedback.write_feedback(tmp_path, [_result("x", "n", "o", "p")], ["x"])
    assert sorted(path.name for path in (root / "x").iterdir()) == [f"{UNIT.name}.md"]
    assert "nh3 is not installed" in (root / feedback.PROBLEMS).read_text()
