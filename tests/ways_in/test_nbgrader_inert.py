"""MakeInert: nothing from a student's notebook is active in the HTML that nbgrader shows or writes.

Notebooks are generated with the tricks that run script in nbconvert's HTML (script tags, event handlers,
javascript: links, SVG, JavaScript and widget outputs, a mermaid block, attribute injection through image
metadata), and exported with nbconvert's own templates; ``active_markup`` reads the page as a browser's
parser would and lists whatever the student's text made active. Ordinary markdown and pictures must come
through. One test runs the real ``nbgrader autograde`` and ``generate_feedback`` in a temporary course.
"""

import base64
import copy
import re
import shutil
import xml.etree.ElementTree as ElementTree
from html.parser import HTMLParser

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbconvert import HTMLExporter

from autograder.units.positional_encodings import rubric
from autograder.course.notebook import COURSE
from autograder.course.release import run_nbgrader
from autograder.ways_in.nbgrader_inert import MakeInert, clean_markdown, mathml, safe_image, safe_link
from autograder.sandbox.server import bubblewrap
from conftest import NOTEBOOK, SOURCE

MARK = "PWNED"  # every attack carries it, so what the page's own template does is never mistaken for one
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()

MARKDOWN_ATTACKS = (
    f"<script>alert('{MARK}')</script>",
    f"<img src=x onerror=\"alert('{MARK}')\">",
    f'<a href="javascript:alert(\'{MARK}\')">click</a>',
    f'<a href="jav&#x61;script:{MARK}">click</a>',
    f"[click](javascript:alert('{MARK}'))",
    f"[click](&#106;avascript:{MARK})",
    f"[click](&amp;#106;avascript:{MARK})",
    f"[click][ref]\n\n[ref]: vbscript:{MARK}",
    f"![picture](javascript:{MARK})",
    f"<javascript:{MARK}>",
    f"<svg onload={MARK}><script>{MARK}</script></svg>",
    f'<iframe src="data:text/html,<script>{MARK}</script>"></iframe>',
    f"<style>/*{MARK}*/ body {{ display: none }}</style>",
    f"```mermaid\ngraph TD\n</pre><img src=x onerror={MARK}>\n```",
    f'<div onmouseover="{MARK}">hover</div>',
    f"<details open ontoggle={MARK}>x</details>",
    f'<a href="data:text/html;base64,{MARK}">data</a>',
    f'<form action="javascript:{MARK}"><button formaction="javascript:{MARK}">go</button></form>',
    f'<object data="javascript:{MARK}"></object><embed src="javascript:{MARK}">',
    f'<base href="javascript:{MARK}//">',
    f'<meta http-equiv="refresh" content="0;url=javascript:{MARK}">',
    f'<img src="//evil.invalid/{MARK}.png">',
    f'<div style="position:fixed;top:0" class="navbar-fixed-top">{MARK} 100/100</div>',
)
# Tricks that nbconvert's page happens not to run (markdown leaves them as text, or the parser differs from
# a browser's only in ways the reader below cannot see), kept because a sanitiser must not turn them into one.
PARSER_TRICKS = (
    f"<math><mtext><table><mglyph><style><img src=x onerror={MARK}>",
    f"<!--><img src=x onerror={MARK}>-->",
    f"<img src=x onerror=alert('{MARK}')>",
    f"<noscript><p title=\"</noscript><img src=x onerror={MARK}>\">",
    f"<svg><style><img src=x onerror={MARK}></style></svg>",
)
ORDINARY_MARKDOWN = (
    "# A heading", "Some *emphasis* and **strong** text.", "- one\n- two\n- three", "1. first\n2. second",
    "| a | b |\n|:--|--:|\n| 1 | 2 |", "Inline `code<b>` here.", "```python\nx = 1 < 2\n```",
    "[a link](https://example.org/page)", "![a picture](pictures/plot.png)", "> a quotation",
    "Math $i < j$ and $$\\sqrt{d}$$", "a < b and c > d & e",
)
SEPARATORS = ("", " ", "\n", "\n\n")

ACTIVE_TAGS = frozenset({"script", "iframe", "object", "embed", "svg", "math", "style", "base", "meta", "form",
                         "frame", "frameset", "template", "link", "button"})
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "data", "xlink:href", "poster", "background",
                            "content"})
_SCHEME = re.compile(r"\s*([a-z][a-z0-9+.\-]*):")


class _Reader(HTMLParser):
    def __init__(self, active=ACTIVE_TAGS):
        super().__init__(convert_charrefs=True)
        self.found, self.open, self.active = [], [], active

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and MARK in value:
                self.found.append(f"<{tag} {name}={value!r}>")
            if name in URL_ATTRIBUTES:
                url = re.sub(r"[\t\n\r]", "", value).lower()
                scheme = _SCHEME.match(url)
                raster = tag == "img" and re.match(r"\s*data:image/(png|jpeg|gif|webp);", url)
                if (scheme and scheme.group(1) not in ("http", "https", "mailto") and not raster
                        and not (name == "content" and "url=" not in url)):
                    self.found.append(f"<{tag} {name}={value!r}>")
                if tag == "img" and url.lstrip().startswith("//"):
                    self.found.append(f"<{tag} {name}={value!r}> (another site's image)")
        if tag in self.active and any(MARK in (value or "") for _, value in attrs):
            self.found.append(f"<{tag}> with the mark in its attributes")
        # A box placed over the page (a fake score bar) by a style of its own or a class of the page's CSS.
        placed = any((name == "style" and "position" in (value or "")) or (name == "class" and "fixed" in (value or ""))
                     for name, value in attrs)
        self.open.append(tag)
        if placed:
            self.open.append("positioned")

    def handle_endtag(self, tag):
        if tag in self.open:  # an end tag closes whatever is still open inside its element
            while self.open and self.open.pop() != tag:
                pass

    def handle_data(self, data):
        inside = set(self.open) & self.active
        if MARK in data and inside:
            self.found.append(f"{sorted(inside)} element holding {data[:60]!r}")
        if MARK in data and "positioned" in self.open:
            self.found.append(f"positioned element holding {data[:60]!r}")


def active_markup(page, inert_tags=frozenset()):
    """What in ``page`` a student's text made active: handlers, scripts, non-web URLs, positioned boxes. Elements of
    ``inert_tags`` count as inert (the MathML the kit writes itself, from an allowlist)."""
    reader = _Reader(ACTIVE_TAGS - inert_tags)
    reader.feed(page)
    reader.close()
    return reader.found


def exported(notebook):
    """The page nbconvert writes for ``notebook`` with the classic template (nbgrader's feedback extends it)."""
    return HTMLExporter(template_name="classic").from_notebook_node(notebook)[0]


def inert(notebook):
    notebook = copy.deepcopy(notebook)
    MakeInert().preprocess(notebook, {})
    return notebook


def _notebook(cells, **metadata):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = cells
    notebook.metadata.update(metadata)
    return notebook


def _output(data, metadata=None):
    return nbformat.v4.new_output("display_data", data=data, metadata=metadata or {})


# The first six run in nbconvert's page as they are; nbconvert itself happens to leave the others inactive.
HOSTILE_OUTPUTS = [
    _output({"text/html": f"<b>bold</b><script>{MARK}</script><img src=x onerror={MARK}>", "text/plain": "x"}),
    _output({"application/javascript": f"alert('{MARK}')"}),
    _output({"image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' onload='{MARK}'><script>{MARK}</script>"
                              "</svg>"}),
    _output({"text/markdown": f"*md* <img src=x onerror={MARK}> [x](javascript:{MARK})"}),
    _output({"image/png": PNG}, {"image/png": {"width": f"1 onerror={MARK}", "height": 20}}),  # unquoted width=
    _output({"text/javascript": f"alert('{MARK}')", "text/plain": "<IPython.core.display.Javascript object>"}),
    _output({"application/vnd.jupyter.widget-view+json": {"model_id": MARK, "version_major": 2,
                                                          "version_minor": 0}}),
    _output({"image/png": f'x"><script>{MARK}</script>'}),
    _output({"application/pdf": MARK, "text/vnd.mermaid": f"graph TD\nA[<img src=x onerror={MARK}>]"}),
]


def _hostile_notebook():
    widgets = {"application/vnd.jupyter.widget-state+json": {"state": {MARK: {"model_name": "HTMLModel",
                                                                              "state": {"value": MARK}}}}}
    return _notebook([nbformat.v4.new_markdown_cell(attack) for attack in MARKDOWN_ATTACKS + PARSER_TRICKS]
                     + [nbformat.v4.new_code_cell("show()", outputs=copy.deepcopy(HOSTILE_OUTPUTS)),
                        nbformat.v4.new_raw_cell(f"<script>{MARK}</script><i>raw</i>")],
                     widgets=widgets)


@pytest.mark.parametrize("attack", MARKDOWN_ATTACKS)
def test_the_page_reader_sees_each_markdown_attack_when_nothing_cleans_it(attack):
    # Each attack runs in nbconvert's page as it is, and the reader must say so, or its silence proves nothing.
    assert active_markup(exported(_notebook([nbformat.v4.new_markdown_cell(attack)])))


@pytest.mark.parametrize("output", HOSTILE_OUTPUTS[:5], ids=lambda output: sorted(output.data)[0])
def test_the_page_reader_sees_each_active_output_when_nothing_cleans_it(output):
    assert active_markup(exported(_notebook([nbformat.v4.new_code_cell("x", outputs=[copy.deepcopy(output)])])))


def test_no_attack_survives_in_the_page_of_an_inert_notebook():
    page = exported(inert(_hostile_notebook()))
    assert active_markup(page) == []
    assert "<b>bold</b>" in page and "<i>raw</i>" in page  # the harmless markup around them stays
    assert "widget-state+json" not in page  # the notebook's widget state is gone with the views


@given(st.lists(st.tuples(st.sampled_from(MARKDOWN_ATTACKS + PARSER_TRICKS + ORDINARY_MARKDOWN),
                          st.sampled_from(SEPARATORS)),
                min_size=1, max_size=5))
@settings(max_examples=40, deadline=None)
def test_markdown_mixing_attacks_and_formatting_renders_nothing_active(pieces):
    source = "".join(piece + separator for piece, separator in pieces)
    page = exported(inert(_notebook([nbformat.v4.new_markdown_cell(source)])))
    assert active_markup(page) == [], source


@given(st.lists(st.sampled_from(MARKDOWN_ATTACKS + PARSER_TRICKS + ORDINARY_MARKDOWN), min_size=1, max_size=4
                ).map("\n\n".join))
@settings(max_examples=30, deadline=None)
def test_cleaned_markdown_is_cleaned_to_itself(source):
    once = clean_markdown(source)
    assert clean_markdown(once) == once


def test_ordinary_markdown_is_left_exactly_as_it_is():
    cells = [nbformat.v4.new_markdown_cell(text) for text in ORDINARY_MARKDOWN]
    after = inert(_notebook(copy.deepcopy(cells)))
    assert [cell.source for cell in after.cells] == list(ORDINARY_MARKDOWN)


def test_the_lessons_own_notebook_comes_through_unchanged():
    lesson = nbformat.read(SOURCE / NOTEBOOK, as_version=4)
    assert inert(lesson) == lesson


def test_formatting_next_to_a_script_survives_the_cleaning():
    source = ("# Results\n\nSome *emphasis*, a list:\n\n- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
              "Code `x<y`, [a link](https://example.org), ![plot](plot.png), ![inline](data:image/png;base64,"
              f"{PNG})\n\n<script>{MARK}</script>")
    cell = inert(_notebook([nbformat.v4.new_markdown_cell(source)])).cells[0]
    page = exported(_notebook([cell]))
    assert active_markup(page) == [] and MARK not in page
    for kept in ("<em>emphasis</em>", "<li>one</li>", "<table>", "<td>2</td>", "<code>x&lt;y</code>",
                 'href="https://example.org"', 'src="plot.png"', f'src="data:image/png;base64,{PNG}"', ">Results"):
        assert kept in page, kept


def test_outputs_keep_text_and_pictures_and_lose_scripts_widgets_and_svg():
    outputs = inert(_notebook([nbformat.v4.new_code_cell("show()", outputs=copy.deepcopy(HOSTILE_OUTPUTS))])
                    ).cells[0].outputs
    kinds = [sorted(output.data) for output in outputs]
    assert kinds == [["text/html", "text/plain"], ["text/plain"], ["text/plain"], ["text/markdown"], ["image/png"],
                     ["text/plain"], ["text/plain"], ["text/plain"], ["text/plain"]]
    assert outputs[0].data["text/html"] == "<b>bold</b><img src=\"x\">"
    assert outputs[1].data["text/plain"] == "[not shown here: application/javascript output]"
    # An alt text is added where none was given (nbconvert warns for each picture without one).
    assert outputs[4].data["image/png"] == PNG and dict(outputs[4].metadata) == {
        "image/png": {"height": 20, "alt": "Figure 1 printed by this cell (no title in its code)"}}
    assert outputs[5].data["text/plain"] == "<IPython.core.display.Javascript object>"  # its own text stays
    assert MARK not in str(outputs[3:])


def test_a_plain_picture_and_its_size_come_through_untouched():
    picture = _output({"image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"},
                      {"image/png": {"width": 640, "height": 480}})
    cell = inert(_notebook([nbformat.v4.new_code_cell("plot()", outputs=[copy.deepcopy(picture)])])).cells[0]
    described = copy.deepcopy(picture)
    described.metadata["image/png"]["alt"] = "Figure 1 printed by this cell (no title in its code)"
    assert cell.outputs == [described]


def test_a_picture_is_described_by_its_cells_titles_and_a_given_alt_text_is_kept():
    picture = _output({"image/png": PNG}, {})
    source = 'fig, ax = plt.subplots()\nax.set_title("bucket by distance")\nfig.suptitle(\'T5, 4 heads\')\nplt.show()'
    cell = inert(_notebook([nbformat.v4.new_code_cell(source, outputs=[copy.deepcopy(picture)])])).cells[0]
    assert cell.outputs[0].metadata["image/png"]["alt"] == \
        "Figure 1 printed by this cell (bucket by distance; T5, 4 heads)"
    given = _output({"image/png": PNG}, {"image/png": {"alt": "my own words"}})
    cell = inert(_notebook([nbformat.v4.new_code_cell(source, outputs=[copy.deepcopy(given)])])).cells[0]
    assert cell.outputs[0].metadata["image/png"]["alt"] == "my own words"


def test_attachments_keep_their_raster_images_only():
    cell = nbformat.v4.new_markdown_cell("![a](attachment:a.png) ![b](attachment:b.svg)")
    cell.attachments = {"a.png": {"image/png": PNG},
                        "b.svg": {"image/svg+xml": base64.b64encode(f"<svg onload='{MARK}'/>".encode()).decode(),
                                  "text/html": base64.b64encode(MARK.encode()).decode()}}
    after = inert(_notebook([cell])).cells[0]
    assert after.attachments == {"a.png": {"image/png": PNG}}
    page = exported(_notebook([after]))  # the missing attachment no longer stops the export
    assert f"data:image/png;base64,{PNG}" in page and "svg" not in after.source


def test_a_raw_cell_for_another_format_is_left_alone():
    latex = nbformat.v4.new_raw_cell("\\begin{equation} a < b \\end{equation} <script>")
    latex.metadata["raw_mimetype"] = "text/latex"
    assert inert(_notebook([copy.deepcopy(latex)])).cells[0] == latex


def test_escape_sequences_in_a_traceback_become_spans_never_markup():
    error = nbformat.v4.new_output("error", ename="ValueError", evalue=MARK, traceback=[
        f"\x1b[31mValueError\x1b[0m: <script>{MARK}</script>\x1b]0;retitled\x07 \x1b[38;2;1;2;3m\"onclick={MARK}",
        f"\x1b[38;5;9m<img src=x onerror={MARK}>\x1b[0m"])
    stream = nbformat.v4.new_output("stream", name="stdout", text=f"\x1b[1m<b onclick={MARK}>\x1b[0m")
    notebook = inert(_notebook([nbformat.v4.new_code_cell("boom()", outputs=[error, stream])]))
    assert notebook.cells[0].outputs == [error, stream]  # nbconvert escapes these itself
    page = exported(notebook)
    assert active_markup(page) == []
    assert f"&lt;script&gt;{MARK}&lt;/script&gt;" in page and '<span class="ansi-red-fg">' in page


@pytest.mark.parametrize("url, link, image", [
    ("https://example.org/a", True, False), ("mailto:ta@example.org", True, False), ("#results", True, True),
    ("pictures/plot.png", True, True), ("data:image/png;base64,iVBORw0K", False, True),
    ("javascript:alert(1)", False, False), (" \x01JAVA\tSCRIPT:alert(1)", False, False),
    ("vbscript:x", False, False), ("data:text/html,<script>", False, False),
    ("data:image/svg+xml;base64,PHN2Zz4=", False, False), ("//evil.invalid/a.png", True, False),
    ("/\\evil.invalid/a.png", False, False),
])
def test_a_link_may_only_navigate_and_an_image_only_come_from_the_notebook(url, link, image):
    assert (safe_link(url), safe_image(url)) == (link, image)


def test_the_course_config_runs_make_inert_after_the_kernel_and_before_the_feedback_page():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(COURSE)).load_config()
    steps = [step.__name__ for step in config.Autograde.autograde_preprocessors]
    assert steps.index("MakeInert") == steps.index("BoundedExecute") + 1
    assert steps.index("TrustedGrades") == steps.index("SaveAutoGrades") - 1
    feedback = [step.__name__ for step in config.GenerateFeedback.preprocessors]
    assert feedback.index("ClearHiddenTestsInFeedback") < feedback.index("MakeInert") < feedback.index("OfflineMath")


HOSTILE_CODE = f"""\
from IPython.display import HTML, Javascript, display
display(HTML("<b>bold</b><script>alert('{MARK}')</script><img src=x onerror={MARK}>"))
display(Javascript("alert('{MARK}')"))
print("\\x1b]0;retitled\\x07<script>{MARK}</script>")
"""
HOSTILE_MARKDOWN = (f"My answer, in *my* words.\n\n<script>alert('{MARK}')</script><img src=x onerror={MARK}> "
                    f"[more](javascript:{MARK})")


def _hostile_release(course):
    notebook = nbformat.read(course / "release" / rubric.ASSIGNMENT / NOTEBOOK, as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell(HOSTILE_MARKDOWN))
    notebook.cells.insert(2, nbformat.v4.new_code_cell(HOSTILE_CODE))
    return notebook


def _feedback_page(course, student):
    return (course / "feedback" / student / rubric.ASSIGNMENT / f"{rubric.ASSIGNMENT}.html").read_text()


@pytest.mark.filterwarnings("ignore:Object of type")  # nbgrader's own add_submission, in SQLAlchemy 2
def test_nbgrader_autograde_and_generate_feedback_leave_no_students_script(tmp_path):
    """Real nbgrader: eve's notebook through autograde then feedback; mallory's autograded before MakeInert."""
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(COURSE / "nbgrader_config.py", course)
    shutil.copytree(COURSE / "source", course / "source")
    run_nbgrader(["generate_assignment", rubric.ASSIGNMENT, "--force"], course=course)
    submitted = course / "submitted" / "eve" / rubric.ASSIGNMENT
    submitted.mkdir(parents=True)
    nbformat.write(_hostile_release(course), submitted / NOTEBOOK)
    shutil.copy(course / "release" / rubric.ASSIGNMENT / "checks.py", submitted)
    # The kernel runs the notebook for its outputs; where bubblewrap is missing, unsandboxed (it is ours).
    kernel = [] if bubblewrap() else ["--BoundedExecute.kernel_manager_class=jupyter_client.manager.AsyncKernelManager"]
    run_nbgrader(["autograde", rubric.ASSIGNMENT, "--student", "eve", "--force", "--Execute.timeout=20",
                  "--BoundedExecute.notebook_seconds=60", *kernel], course=course)
    # Mallory's notebook as autograde would have saved it before MakeInert: what her code displayed kept.
    mallory = _hostile_release(course)
    mallory.cells[2].outputs = copy.deepcopy(HOSTILE_OUTPUTS)
    folder = course / "autograded" / "mallory" / rubric.ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(mallory, folder / NOTEBOOK)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.add_student("mallory")
        gradebook.add_submission(rubric.ASSIGNMENT, "mallory")
    run_nbgrader(["generate_feedback", rubric.ASSIGNMENT, "--force"], course=course)

    autograded = nbformat.read(course / "autograded" / "eve" / rubric.ASSIGNMENT / NOTEBOOK, as_version=4)
    shown = autograded.cells[2].outputs
    assert [output.get("data", {}).get("text/html") for output in shown[:2]] == ["<b>bold</b><img src=\"x\">", None]
    assert active_markup(exported(autograded)) == []  # what the formgrader shows the instructor
    for student in ("eve", "mallory"):
        page = _feedback_page(course, student)
        assert active_markup(page) == [], student
        assert f"<script>alert('{MARK}')" not in page and f"onerror={MARK}>" not in page, student  # (code is escaped)
        assert not re.search(f"=[\"']?javascript:{MARK}", page), student  # as text it may stay: it does nothing
        assert "My answer, in <em>my</em> words." in page and "<b>bold</b>" in page, student


# Formulas in the feedback as MathML (OfflineMath): drawn without internet access, and never a way in.
from autograder.ways_in.nbgrader_inert import MATHML_ATTRIBUTES, MATHML_TAGS, OfflineMath  # noqa: E402

TEX_PIECES = (
    r"\sqrt{d_k}", r"\mathrm{PE}(t, 2i) = \sin(t / 10000^{2i/d})", r"\frac{q_i \cdot k_j}{\sqrt{d}}", "i < j",
    "a > b", "x & y", r"\begin{pmatrix} a & b \\ c & d \end{pmatrix}", r"\sum_{j=1}^{L} e^{s_{ij}}",
    rf"\text{{<img src=x onerror={MARK}>}}", rf"\href{{javascript:{MARK}}}{{x}}",
    rf"\style{{position:fixed;top:0}}{{{MARK}}}", rf"\color{{red\" onclick=\"{MARK}}}{{x}}",
    rf"</math><script>{MARK}</script>", rf"\text{{</mtext></math><img src=x onerror={MARK}>}}",
    rf"<mglyph><style><img src=x onerror={MARK}>", r"\unknowncommand{x}", "{", r"\\", MARK,
)


class _MathReader(HTMLParser):
    """Every element and attribute found inside a <math> element of a page, and whether each is closed."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.tags, self.attributes, self.formulas = 0, set(), set(), 0

    def handle_starttag(self, tag, attrs):
        if tag == "math":
            self.formulas += 1
        if tag == "math" or self.depth:
            self.depth += 1
            self.tags.add(tag)
            self.attributes |= {name for name, _ in attrs}

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1


def _read_math(page):
    reader = _MathReader()
    reader.feed(page)
    reader.close()
    return reader


def with_offline_math(notebook):
    notebook = inert(notebook)
    OfflineMath().preprocess(notebook, {})
    return notebook


def test_every_formula_of_the_lesson_is_mathml_in_the_feedback():
    lesson = with_offline_math(nbformat.read(SOURCE / NOTEBOOK, as_version=4))
    markdown = [cell for cell in lesson.cells if cell.cell_type == "markdown"]
    page = exported(_notebook(markdown))
    body = re.sub(r"<script.*?</script>", "", page, flags=re.S)  # MathJax's own configuration holds $ signs
    assert "$" not in body  # no formula left for MathJax to draw
    # Each $...$ and $$...$$ of the lesson's text is one <math> element (the lesson writes no other $).
    formulas = sum(len(re.findall(r"\$\$.+?\$\$|\$.+?\$", cell.source, flags=re.S))
                   for cell in nbformat.read(SOURCE / NOTEBOOK, as_version=4).cells if cell.cell_type == "markdown")
    math = _read_math(page)
    assert math.formulas == formulas > 50
    assert math.tags <= MATHML_TAGS and math.depth == 0


@given(st.lists(st.tuples(st.sampled_from(TEX_PIECES), st.sampled_from(("", " ", "+"))), min_size=1, max_size=4),
       st.sampled_from(("${}$", "$${}$$", "Text ${}$ more.", "$${}$$\n\nand ${}$")),
       st.sampled_from(ORDINARY_MARKDOWN + ("",)))
@settings(max_examples=60, deadline=None)
def test_formulas_written_as_mathml_carry_nothing_active(pieces, frame, around):
    tex = "".join(piece + separator for piece, separator in pieces)
    source = around + "\n\n" + frame.replace("{}", tex)
    page = exported(with_offline_math(_notebook([nbformat.v4.new_markdown_cell(source)])))
    math = _read_math(page)
    assert math.tags <= MATHML_TAGS, (source, math.tags - MATHML_TAGS)
    assert math.attributes <= MATHML_ATTRIBUTES | {"xmlns"}, (source, math.attributes)
    assert active_markup(page, inert_tags={"math"}) == [], source  # MathML of allowlisted elements and text


def test_a_formula_that_cannot_be_written_as_mathml_stays_as_escaped_tex():
    page = exported(with_offline_math(_notebook([nbformat.v4.new_markdown_cell(
        rf"Before $\text{{<img src=x onerror={MARK}>}}$ after, and $x^2$.")])))
    assert "onerror" not in page.replace(f"&lt;img src=x onerror={MARK}&gt;", "")
    assert _read_math(page).formulas == 1  # x^2 is MathML; the other is its TeX, escaped, for MathJax online


def _lesson_formulas():
    """Every formula of every unit's lesson text: $$...$$ and $...$ in its markdown (jupytext's "# " lines)."""
    from autograder.core import units

    found = []
    for unit in units.all_units():
        text = unit.lesson_path.read_text(encoding="utf-8")
        markdown = "\n".join(line[2:] for line in text.splitlines() if line.startswith("# "))
        for match in re.finditer(r"\$\$(.+?)\$\$|\$([^\s$](?:[^$\n]*?[^\s$\\])?)\$", markdown, re.DOTALL):
            found.append((unit.name, match.group(1) or match.group(2), match.group(1) is not None))
    return found


LESSON_FORMULAS = _lesson_formulas()


def test_every_formula_of_every_lesson_becomes_mathml_with_no_tex_left_in_its_text():
    # Offline, a formula that falls back to its TeX shows raw; one whose text keeps a TeX escape shows a backslash
    # (\texttt{rel\_k} did, as "rel\_k", online too).
    assert len(LESSON_FORMULAS) > 20
    for unit, tex, display in LESSON_FORMULAS:
        written = mathml(tex, display)
        assert written is not None, (unit, tex)
        root = ElementTree.fromstring(written)
        text = "".join(root.itertext())
        assert "\\" not in text and "merror" not in written, (unit, tex, text)
