"""Feedback for each student from a class run: one HTML page and one Markdown file per submission.

``write_feedback(out_dir, results, folders)`` writes, for each graded submission,

    <out_dir>/feedback/<folder>/<unit>.html    one page, nothing loaded from elsewhere
    <out_dir>/feedback/<folder>/<unit>.md      the same content as Markdown

where ``<folder>`` is the submission's results-file name without ``.json`` (the class run passes it). Each
holds a header (the student, the unit, the total), the notes of the grade (what was left out while loading,
which hidden cases were drawn), a contents table (test, what it checks, points), then each rubric test in
the rubric's order under its task: its points, what it checks, the grader's message in full and, where the
test lost points, what to look at. The message is the text nbgrader's feedback shows in the test's cell
(``verdict_text``, as ``TrustedGrades`` writes it), and the contents table is the one ``NamedContents``
puts at the top of nbgrader's feedback, so the two routes tell a student the same thing.

Where a submission earned part of its points, the page also shows its points per task as a picture (a PNG
inside the page). The results carry text only, not the outputs of the hidden cases, so there is no picture
of expected against got: drawing one would mean running the student's code again.

Every text in a result may come from a student (names, exception messages, printed output). In the HTML it
is made inert (``autograder.intake.inert``) and escaped, and the body is then cleaned by nh3 with the tags and
attributes this page writes and no others; the page's own policy forbids scripts and loading anything but
its inline images. In the Markdown it is made inert and put in a fenced code block (or an inline code
span) longer than any run of backticks in it, where no renderer reads markup, links or HTML. The grader's
messages hold no TeX, so a ``$`` in them is a student's and is shown as it is.
"""

import base64
import html
import importlib.util
import io
import re
from pathlib import Path

from autograder.core.report import write_atomically
from autograder.core.summary import did_not_load
from autograder.core.units import get as unit_named, rubric_of
from autograder.intake.inert import inert, inert_line

FOLDER = "feedback"  # in the results folder
PROBLEMS = "problems.txt"  # in FOLDER: feedback that could not be written, and why (for the instructor)

_PLAIN_FOLDER = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
# What could start markup in the kit's own text: emphasis, code, links, HTML, entities, a table's bar (an
# underscore inside a word starts nothing).
_MARKUP = re.compile(r"[\\`*\[\]<>|&~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _points(value):
    return f"{value:g}"


# --- what every route says about a test -----------------------------------------------------------

def verdict_text(test, unit=None):
    """A test's verdict as nbgrader's feedback shows it in the test's cell (see nbgrader_bridge.TrustedGrades):
    voice.verdict_text, with the rubric test of ``unit`` (by default the unit that has the test's id)."""
    from autograder.core import units, voice

    rubric_test = unit.rubric.TEST_BY_ID.get(test.id) if unit is not None else units.test_named(test.id)
    return voice.verdict_text(test, rubric_test)


def status(test):
    if test.passed:
        return "passed"
    return "part of the points" if test.score > 0 else "failed"


def what_to_look_at(unit, test):
    """(lines of the message that diagnose the failure, the self-check command for the test's task or "")."""
    if test.passed:
        return [], ""
    # The grader's diagnosis, from the test's typed parts (autograder/core/voice.py), never from its text: a line
    # of the student's in an exception's message cannot pass for one.
    diagnosis = test.diagnosis
    found = diagnosis.told_at_once() + ([f"The sizes in that message: {diagnosis.sizes}."] if diagnosis.sizes else [])
    task = unit.rubric.TASK_BY_NAME.get(test.task)
    check = (f"pytest -k {test.task}" if task is not None and task.functions
             and (unit.self_checks_folder / f"test_{test.task}.py").is_file() else "")
    return found, check


def _sections(result):
    """[(task, tests of the result in that task)] in the rubric's order; rows of tasks it does not know last."""
    rubric = rubric_of([result])
    order = {task.name: index for index, task in enumerate(rubric.TASKS + (rubric.TIMING,))}
    grouped = {}
    for test in result.tests:
        grouped.setdefault(test.task, []).append(test)
    return sorted(grouped.items(), key=lambda item: order.get(item[0], len(order)))


def _task_title(rubric, name):
    task = rubric.TASK_BY_NAME.get(name)
    return task.title if task is not None else name


def _unit_of(result):
    """The unit ``result`` was graded as (a Result built without one: the unit rubric_of gives it)."""
    return unit_named(getattr(result, "unit", "") or rubric_of([result]).ASSIGNMENT)


def _notes(result):
    """The notes a student reads: the grade's, and what they are told of their hidden cases (never the seed)."""
    told = getattr(result, "cases_for_student", "")
    return [str(note) for note in result.notes] + ([told] if told else [])


# --- the picture ----------------------------------------------------------------------------------

def helps_to_draw(result):
    """Whether the points per task tell more than the total: some earned, some lost."""
    return 0 < result.score < result.max_score and not did_not_load(result)


def points_chart(result):
    """The result's points per task as a matplotlib Figure, every task's name whole; or None (nothing to draw, or
    no matplotlib)."""
    if not helps_to_draw(result):
        return None
    try:
        # A Figure without pyplot renders with Agg and leaves the process's backend alone (as summary.py).
        from matplotlib.figure import Figure
    except ImportError:
        return None
    rubric = rubric_of([result])
    sections = _sections(result)
    names = [name for name, _ in sections]
    earned = [sum(test.score for test in tests) for _, tests in sections]
    most = [sum(test.max_score for test in tests) for _, tests in sections]
    # The layout makes room for the longest name (dynamic_ntk_inverse_frequencies beside ntk_inverse_frequencies:
    # a fixed margin cut both to the same tail); the figure widens with it, so the bars keep their length.
    longest = max(len(name) for name in names)
    figure = Figure(figsize=(4.6 + 0.07 * longest, 0.35 * len(names) + 1.1), dpi=80, layout="constrained")
    axes = figure.add_subplot()
    positions = range(len(names))
    axes.barh(positions, most, color="#dddddd")
    # A task with points lost stands out from those done.
    axes.barh(positions, earned, color=["tab:blue" if got >= of else "tab:orange" for got, of in zip(earned, most)])
    axes.set_yticks(positions, names)
    axes.invert_yaxis()  # rubric order, top to bottom
    axes.set_xlabel("points")
    for position, (got, of) in enumerate(zip(earned, most)):
        axes.annotate(f"{_points(got)}/{_points(of)}", (of, position), xytext=(3, 0), textcoords="offset points",
                      va="center", fontsize=8)
    axes.set_xlim(0, max(most + [1]) * 1.15)
    axes.set_title(f"Your points per task: {_points(result.score)} of {_points(result.max_score)} "
                   f"({rubric.TITLE})", fontsize=10)
    return figure


def points_figure(result):
    """The result's points per task (points_chart) as a PNG's base64 text, or None."""
    figure = points_chart(result)
    if figure is None:
        return None
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure_words(result):
    return "Points per task: " + "; ".join(
        f"{name} {_points(sum(t.score for t in tests))} of {_points(sum(t.max_score for t in tests))}"
        for name, tests in _sections(result)) + "."


# --- HTML -----------------------------------------------------------------------------------------

TAGS = frozenset({"h1", "h2", "h3", "h4", "p", "strong", "pre", "code", "ul", "li", "table", "thead", "tbody",
                  "tr", "th", "td", "section", "div", "span", "figure", "figcaption", "img", "a"})
ATTRIBUTES = {"*": {"class", "id"}, "a": {"href"}, "img": {"src", "alt", "width", "height"}}
_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/]*={0,2}")
_ANCHOR = re.compile(r"#[A-Za-z0-9_-]+")
# What the page may do at all, said to the browser too: no script, nothing fetched, its images inline.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60em; margin: 1em auto; padding: 0 1em; line-height: 1.4; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 0.5em; border: 1px solid #ddd; }
table { border-collapse: collapse; } th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; }
.passed { color: #1a7f37; } .failed { color: #b42318; } .part { color: #9a6700; }
.look { border-left: 4px solid #9a6700; padding-left: 0.8em; }
.alert { border-left: 4px solid #b42318; padding-left: 0.8em; }
img { max-width: 100%; }
""".strip()


def html_text(text):
    """Any text as HTML text: made inert (controls shown as escapes), then every <, >, &, " and ' escaped."""
    return html.escape(inert(text), quote=True)


def _html_pre(text, css="message"):
    return f'<pre class="{css}">\n{html_text(text)}</pre>'  # a parser drops one newline right after <pre>


def _attribute(tag, name, value):
    # nh3 calls this on each attribute it would keep: links only to anchors of the page, images only inline PNGs.
    if name == "href":
        return value if _ANCHOR.fullmatch(value) else None
    if name == "src":
        return value if tag == "img" and _PNG.fullmatch(value) else None
    return value


def clean_html(body):
    """``body`` with only this page's tags and attributes, its links to its own anchors, its images inline."""
    import nh3

    return nh3.clean(body, tags=set(TAGS), attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
                     attribute_filter=_attribute, url_schemes={"data"}, link_rel=None, strip_comments=True,
                     clean_content_tags={"script", "style"})


def _css(test):
    return {"passed": "passed", "failed": "failed"}.get(status(test), "part")


def html_page(result):
    """The result as one self-contained HTML page (see the module's docstring)."""
    unit, rubric = _unit_of(result), rubric_of([result])
    body = [f"<h1>Feedback: {html_text(unit.title)} ({html_text(unit.name)})</h1>",
            f"<p>Student: <strong>{html_text(inert_line(result.name))}</strong></p>",
            f'<p class="total">Total: <strong>{_points(result.score)} of {_points(result.max_score)} points</strong>'
            "</p>"]
    if did_not_load(result):
        body.append('<p class="alert">No test could run: each test below gives the same message, which says why.'
                    "</p>")
    notes = _notes(result)
    if notes:
        body.append("<h2>Notes</h2>")
        body.extend(_html_pre(note, "note") for note in notes)
    picture = points_figure(result)
    if picture is not None:
        body.append(f'<figure><img src="data:image/png;base64,{picture}" alt="{html_text(_figure_words(result))}">'
                    f"<figcaption>{html_text(_figure_words(result))}</figcaption></figure>")
    body.append("<h2>Points per test</h2><table><thead><tr><th>test</th><th>what it checks</th><th>points</th>"
                "</tr></thead><tbody>")
    for test in result.tests:
        checks = rubric.TEST_BY_ID[test.id].checks if test.id in rubric.TEST_BY_ID else ""
        body.append(f'<tr><td><a href="#{_anchor(test.id)}">{html_text(test.id)}</a></td><td>{html_text(checks)}</td>'
                    f'<td class="{_css(test)}">{_points(test.score)} of {_points(test.max_score)}</td></tr>')
    body.append("</tbody></table>")
    for task, tests in _sections(result):
        earned, most = sum(test.score for test in tests), sum(test.max_score for test in tests)
        body.append(f'<section><h2 id="{_anchor("task-" + task)}">{html_text(_task_title(rubric, task))} '
                    f"({html_text(task)}): {_points(earned)} of {_points(most)} points</h2>")
        for test in tests:
            rubric_test = rubric.TEST_BY_ID.get(test.id)
            body.append(f'<h3 id="{_anchor(test.id)}">{html_text(test.id)}: <span class="{_css(test)}">'
                        f"{_points(test.score)} of {_points(test.max_score)} points ({status(test)})</span></h3>")
            if rubric_test is not None:
                body.append(f"<p>What it checks: {html_text(rubric_test.checks)}.</p>")
            body.append("<p>The grader's message:</p>" + _html_pre(verdict_text(test, unit)))
            found, check = what_to_look_at(unit, test)
            if found or check:
                items = [f"<li>{html_text(line)}</li>" for line in found]
                if check:
                    items.append(f"<li>Check this task yourself in your folder: <code>{html_text(check)}</code></li>")
                body.append(f'<div class="look"><h4>What to look at</h4><ul>{"".join(items)}</ul></div>')
        body.append("</section>")
    cleaned = clean_html("\n".join(body))
    return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            f"<title>Feedback: {html_text(unit.name)}, {html_text(inert_line(result.name))}</title>\n"
            f"<style>\n{_STYLE}\n</style>\n</head>\n<body>\n{cleaned}\n</body>\n</html>\n")


def _anchor(text):
    """An id from a rubric name: plain characters only (a row of a task the rubric does not know is a student's)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(text)) or "_"


# --- Markdown -------------------------------------------------------------------------------------

def md_plain(text):
    """Text of the kit's own (titles, what a test checks) as Markdown that shows it as written, on one line:
    each character that could start markup backslash-escaped. Never for a student's text (see md_code_span)."""
    return _MARKUP.sub(lambda match: "\\" + match.group(), inert_line(text))


def _longest_run(text, character):
    return max((len(run) for run in re.findall(re.escape(character) + "+", text)), default=0)


def md_code_span(text):
    """Any text on one line as an inline code span: nothing in it is read as markup, a link or HTML."""
    text = inert_line(text) or " "
    fence = "`" * (_longest_run(text, "`") + 1)
    # CommonMark strips one space from each side of a span that is not all spaces: pad what would lose one.
    pad = " " if text.strip(" ") and (text[0] in "` " or text[-1] in "` ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fenced(text):
    """Any text, its lines kept, as a fenced code block: nothing in it is read as markup, a link or HTML.

    The fence is longer than any run of backticks in the text, so no line of it can close the block.
    """
    text = inert(text)
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return f"{fence}text\n{text}\n{fence}"


def markdown_page(result):
    """The result as Markdown, the same content as ``html_page`` less the picture."""
    unit, rubric = _unit_of(result), rubric_of([result])
    lines = [f"# Feedback: {md_plain(unit.title)} ({md_plain(unit.name)})", "",
             f"Student: {md_code_span(result.name)}", "",
             f"Total: **{_points(result.score)} of {_points(result.max_score)} points**", ""]
    if did_not_load(result):
        lines += ["No test could run: each test below gives the same message, which says why.", ""]
    notes = _notes(result)
    if notes:
        lines += ["## Notes", ""]
        for note in notes:
            lines += [md_fenced(note), ""]
    lines += ["## Points per test", "", "| test | what it checks | points |", "| --- | --- | --- |"]
    for test in result.tests:
        checks = rubric.TEST_BY_ID[test.id].checks if test.id in rubric.TEST_BY_ID else ""
        lines.append(f"| {md_plain(test.id)} | {md_plain(checks)} | {_points(test.score)} of "
                     f"{_points(test.max_score)} |")
    lines.append("")
    for task, tests in _sections(result):
        earned, most = sum(test.score for test in tests), sum(test.max_score for test in tests)
        lines += [f"## {md_plain(_task_title(rubric, task))} ({md_plain(task)}): {_points(earned)} of "
                  f"{_points(most)} points", ""]
        for test in tests:
            lines += [f"### {md_plain(test.id)}: {_points(test.score)} of {_points(test.max_score)} points "
                      f"({status(test)})", ""]
            if test.id in rubric.TEST_BY_ID:
                lines += [f"What it checks: {md_plain(rubric.TEST_BY_ID[test.id].checks)}.", ""]
            lines += ["The grader's message:", "", md_fenced(verdict_text(test, unit)), ""]
            found, check = what_to_look_at(unit, test)
            if found or check:
                lines += ["What to look at:", ""]
                if found:
                    lines += [md_fenced("\n".join(found)), ""]
                if check:
                    lines += [f"Check this task yourself in your folder: {md_code_span(check)}", ""]
    return "\n".join(lines)


# --- the class's files ----------------------------------------------------------------------------

def _nh3_missing():
    return importlib.util.find_spec("nh3") is None


def write_feedback(out_dir, results, folders):
    """Write ``<out_dir>/feedback/<folder>/<unit>.html`` and ``.md`` for each result (``folders``: one plain
    name per result, the class run's results-file names without ``.json``). Returns the feedback folder.

    A page that cannot be made is the grader's fault, not the student's: it is listed with why in
    ``feedback/problems.txt`` and the others are written all the same. Without nh3 (the kit's ``course`` extra)
    only the Markdown is written, and problems.txt says so.
    """
    results, folders = list(results), list(folders)
    if len(results) != len(folders):
        raise ValueError(f"{len(results)} results but {len(folders)} folder names")
    for folder in folders:
        if not _PLAIN_FOLDER.fullmatch(folder):  # the grader names folders; a path is never one
            raise ValueError(f"not a plain folder name: {folder!r}")
    root = Path(out_dir) / FOLDER
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    problems = []
    without_html = _nh3_missing()
    if without_html:
        problems.append("Every student: no HTML page, since nh3 is not installed (pip install nh3, or the kit's "
                        "course extra); the Markdown is written.")
    for result, folder in zip(results, folders):
        place = root / folder
        try:
            place.mkdir(mode=0o700, exist_ok=True)
            unit = _unit_of(result).name
            write_atomically(place / f"{unit}.md", markdown_page(result))
            if not without_html:
                write_atomically(place / f"{unit}.html", html_page(result))
        except Exception as error:  # noqa: BLE001  (one page lost, never the class's)
            problems.append(f"{inert_line(result.name)} ({folder}): {inert_line(repr(error))}")
    listing = root / PROBLEMS
    if problems:
        write_atomically(listing, "# Feedback that could not be written, and why\n" + "\n".join(problems) + "\n")
    else:
        listing.unlink(missing_ok=True)
    return root
