"""The grader's voice is its own, and no hidden value reaches a student before release (docs/threat-model.md,
invariant 14; issue 35, point 4), for generated student text.

A job can send back anything as an outcome, so the outcomes are drawn here directly, at the boundary the grader
reads them at (grade.score_tests): exception messages, class names, the line an error is said to come from, names
said missing, a returned object's type name, load errors. Each drawn text starts with MARK and has MARK again
after every line break it holds, so that any line of output that holds student text holds MARK; the texts are
made of the grader's own line prefixes, newlines, carriage returns, Unicode line and paragraph separators, other
controls, markup, and the values of the inputs the function received on its hidden case.

Every route's student-facing output is then checked, 500 draws per route:
- before release (Gradescope's entries shown at once and its top-level output, every PrairieLearn message): no
  value of a hidden input, and nothing a job wrote while a hidden case ran (no MARK in any test's entry);
- everywhere, also after release (Gradescope's "(details)" entries, the feedback pages, nbgrader's cell text) and
  in the instructor's class table and summary: no line starts with student text, student text is quoted (after a
  quote mark on its line, or behind a block's bar), and no grader part read by a reader (a named mistake, a
  diagnosis, "what to look at", a headline's mistake) holds student text.
"""

import dataclasses
import html
import re
from functools import lru_cache
from types import SimpleNamespace
from unittest import mock

import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.core import grade, report, summary, units, voice
from autograder.core.cases import build_cases
from autograder.course import feedback
from autograder.sandbox import protocol
from autograder.ways_in import gradescope, prairielearn

MARK = "QZMARK"
DRAWS = 500
# What splits a line for some reader: str.splitlines() splits on all of these.
BREAKS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
_BREAK = re.compile("(" + "|".join(re.escape(b) for b in sorted(BREAKS, key=len, reverse=True)) + ")")
PREFIXES = list(voice.LEADS) + ["Likely cause:", "What this check expects:", "  (raised at ", "Not graded:",
                                 "Your code raised", "Which case, and expected against got, is"]
MARKUP = ["<b>bold</b>", "<script>alert(1)</script>", "**bold**", "`code`", "```", "[link](http://example.com)",
          "$x^2$", "| a | b |", "# Heading", "> quote", "- item", "&amp;", "\x1b[2J", "\u202e", "'", '"', "\\n"]
TASKS = [(unit.name, task) for unit in units.all_units() for task in unit.rubric.TASK_NAMES]


@lru_cache(maxsize=None)
def cases_of(unit_name):
    return build_cases(units.get(unit_name))


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


@lru_cache(maxsize=None)
def hidden_values(unit_name, task):
    """The values of the hidden inputs of ``task``'s cases, as a function that echoes them would print them."""
    found = []
    for case in cases_of(unit_name)[task]:
        for tensor in _tensors(case.probe):
            if tensor.is_floating_point() and tensor.numel() and tensor.device.type != "meta":
                for value in tensor.detach().flatten()[:4].tolist():
                    if abs(value) > 1e-3:  # a value such as 0.0 is in every text; these are what a leak looks like
                        found += [f"{value:.7f}", repr(value)]
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=None)
def hidden_labels(unit_name):
    """Every hidden case's call as the feedback writes it (its shapes and its scalar arguments): shown only once the
    cases are released."""
    return tuple(case.label for cases in cases_of(unit_name).values() for case in cases if len(case.label) > 8)


def marked(text):
    """``text`` starting with MARK and with MARK again after each of its line breaks."""
    return MARK + _BREAK.sub(lambda match: match.group() + MARK, text)


# The strategies are made once for each set of values and drawn from many times: hypothesis checks a strategy it has
# not seen before (its label, whether it can be empty). Made anew at every draw, they were 223 of the 362 s of one of
# these tests under cProfile; made once, the five tests at 100 draws each took 57 s against 85 s.
@lru_cache(maxsize=None)
def student_text(values=()):
    """A strategy: student text (see ``marked``) built of the grader's line prefixes, markup, short drawn text, line
    breaks, and ``values`` (those of the hidden inputs) as a function that echoes them would print them."""
    choices = [st.sampled_from(PREFIXES), st.sampled_from(MARKUP), st.text(max_size=8)]
    if values:
        choices.append(st.sampled_from(values).map(lambda value: f"q=[{value}]"))
    piece = st.one_of(*choices)
    broken = st.tuples(st.sampled_from(BREAKS), st.sampled_from(PREFIXES), piece).map(
        lambda parts: parts[0] + parts[1] + " " + parts[2])
    return st.lists(st.one_of(piece, broken), max_size=6).map(lambda pieces: marked(" ".join(pieces)))


@lru_cache(maxsize=None)
def outcomes(values, op="call"):
    """A strategy: what a job may send back for one case of a probe of ``op`` (see ``_outcomes``)."""
    return _outcomes(values, op)


@st.composite
def _outcomes(draw, values, op="call"):
    """What a job may send back for one case of a probe of ``op``, in the form the protocol lets through."""
    if op == "sequence":  # calls made one after another (a behaviour contract): each one's outcome, or none sent
        calls = draw(st.lists(outcomes(values, draw(st.sampled_from(["call", "module"]))), min_size=1, max_size=3))
        return None if any(call is None for call in calls) else {"calls": calls}
    if op == "module":  # a module's steps: its __init__ failed, or it was built and its forward failed
        step = draw(outcomes(values))
        if step is None or "missing" in step:
            return step
        if draw(st.booleans()):
            return {"init": step}
        return {"init": {"value": {"type_name": "module", "repr": ""}}, "forward": step}
    said = student_text(values)
    kind = draw(st.sampled_from(["error", "error", "not implemented", "missing", "object", "none"]))
    if kind == "none":
        return None
    if kind == "missing":
        return {"missing": draw(said)[:200]}
    if kind == "object":
        return {"value": {"type_name": draw(said)[:400], "repr": draw(said)[:400]}}
    type_name = draw(st.one_of(st.sampled_from(["ValueError", "RuntimeError", "TypeError", MARK + "Error"]), said))
    type_name = type_name[:200]  # as the worker cuts it (protocol.ERROR)
    mro = [type_name] + (["NotImplementedError"] if kind == "not implemented" else
                         draw(st.lists(st.sampled_from(["ValueError", "RuntimeError", "IndexError", "Exception"]),
                                       max_size=2)))
    where = draw(st.one_of(st.just(""), st.just("x.py, line 2: return 1"), said))
    return {"error": {"type": type_name, "mro": mro + ["BaseException", "object"], "message": draw(said),
                      "where": where}}


SOURCE = "def helper():\n    return 1\n"


@st.composite
def results(draw):
    """A Result whose one drawn task was graded from drawn outcomes (its other tests at 0, their text the
    grader's), with drawn load errors among its notes."""
    unit_name, task = draw(st.sampled_from(TASKS))
    unit, values = units.get(unit_name), hidden_values(unit_name, task)
    cases = cases_of(unit_name)[task]
    same = {}  # one outcome per op, given to many cases (the same wrong answer everywhere)
    graded = {}
    for case in cases:
        op = case.probe.get("op", "call")
        if op not in same:
            same[op] = draw(outcomes(values, op))
        graded[case.id] = same[op] if draw(st.booleans()) else draw(outcomes(values, op))
    for case in cases:  # only what the protocol lets through reaches the grader
        if graded[case.id] is not None:
            graded[case.id] = protocol.outcome_form(case.probe.get("op"))(graded[case.id], case.id)
    submission = SimpleNamespace(chunks=[{"label": "x.py", "source": SOURCE}], skipped=[])
    loaded = {"errors": [{"chunk": "x.py", "where": draw(st.one_of(st.just("x.py, line 2: return 1"), student_text())),
                          "message": draw(student_text()), "type": draw(student_text())[:200],
                          "mro": draw(st.sampled_from([["SyntaxError"], ["ValueError"], ["SystemExit"]]))}
                         for _ in range(draw(st.integers(0, 2)))]}
    notes = grade._load_notes(submission, loaded)
    tests = grade.score_tests(unit, unit.rubric.tests_of(task), cases, graded, notes=notes,
                              lines=grade.source_lines(submission.chunks))
    by_id = {test.id: test for test in tests}
    rows = [by_id.get(test.id) or grade.TestResult(test.id, test.task, 0, test.points, f"{test.id} did not run.",
                                                   kind=voice.NOT_RUN)
            for test in unit.rubric.TESTS]
    return grade.Result("student", "x.py", rows, notes, unit=unit.name), values


def lines_of(text):
    return str(text).splitlines()


def assert_student_text_is_quoted(text, where):
    """No line starts with student text (MARK) or a grader's prefix followed by it; on every line that holds student
    text, it comes after a quote mark, or the line is a block's line behind its bar."""
    for line in lines_of(text):
        if MARK not in line:
            continue
        stripped = line.lstrip(" >-*#`")
        assert not stripped.startswith(MARK), (where, line)
        assert not stripped.startswith(tuple(voice.LEADS)), (where, line)
        before = line[:line.index(MARK)]
        assert "'" in before or '"' in before or line.startswith("    | "), (where, line)


def assert_nothing_hidden(text, values, where, unit_name=None):
    """Nothing a job wrote while a hidden case ran: no MARK, no value of a hidden input; and no hidden case's call
    (``unit_name``'s), which the grader quotes only after release."""
    assert MARK not in text, (where, text)
    for value in values:
        assert value not in text, (where, value, text)
    for label in hidden_labels(unit_name) if unit_name else ():
        assert label not in text, (where, label, text)


def assert_values_absent(text, values, where):
    for value in values:
        assert value not in text, (where, value, text)


def page_text(page):
    """An HTML page's text as a reader sees it: tags gone, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def check_grader_parts(result):
    """The parts readers take as the grader's hold no student text."""
    for test in result.tests:
        diagnosis = test.diagnosis
        for part in (*diagnosis.mistakes, diagnosis.how, diagnosis.when, diagnosis.sizes):
            assert MARK not in part, (test.id, part)


def draws(count=DRAWS):
    return settings(max_examples=count, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@draws()
@given(results())
def test_gradescope_shows_no_student_text_before_release_and_quotes_it_after(drawn):
    result, values = drawn
    check_grader_parts(result)
    output = gradescope.to_results(result, "x.py")
    # The top-level output holds the load notes (written before the job held any hidden input): quoted, no value.
    assert_student_text_is_quoted(output["output"], "output")
    assert_values_absent(output["output"], values, "output")
    for entry in output["tests"]:
        assert_student_text_is_quoted(entry["output"], entry["name"])
        if not entry["name"].endswith(" (details)"):
            assert_nothing_hidden(entry["output"], values, entry["name"], result.unit)


@draws()
@given(results())
def test_prairielearn_shows_no_student_text_of_a_hidden_case(drawn):
    result, values = drawn
    output = prairielearn.to_results(result, "x.py")
    assert_student_text_is_quoted(output["message"], "message")
    assert_values_absent(output["message"], values, "message")
    for entry in output["tests"]:
        assert_nothing_hidden(entry["message"], values, entry["name"], result.unit)
        assert_student_text_is_quoted(entry["message"], entry["name"])


@draws()
@given(drawn=results())
def test_the_feedback_pages_quote_student_text_and_diagnose_in_the_grader_s_words_only(drawn):
    result, _ = drawn
    unit = units.get(result.unit)
    for test in result.tests:
        found, _ = feedback.what_to_look_at(unit, test)
        assert not any(MARK in line for line in found), (test.id, found)
    # The chart draws the tasks' names and points only (no text of a result's); drawing it 500 times is slow.
    with mock.patch.object(feedback, "points_figure", lambda result: None):
        assert_student_text_is_quoted(page_text(feedback.html_page(result)), "html page")
        assert_student_text_is_quoted(feedback.markdown_page(result), "markdown page")


@draws()
@given(results())
def test_nbgrader_s_cells_quote_student_text(drawn):
    result, values = drawn
    rubric = units.get(result.unit).rubric
    for test in result.tests:
        assert_student_text_is_quoted(voice.verdict_text(test, rubric.TEST_BY_ID[test.id]), test.id)
        hidden = voice.verdict_text(test, dataclasses.replace(rubric.TEST_BY_ID[test.id], details="hidden"))
        if not test.passed:  # kept from students altogether: as before release
            assert_nothing_hidden(hidden, values, test.id)


@draws()
@given(st.lists(results(), min_size=1, max_size=3))
def test_the_class_table_and_summary_read_no_student_text_as_the_grader_s(drawn):
    results_ = [result for result, _ in drawn]
    units_named = {result.unit for result in results_}
    if len(units_named) > 1:  # a class is of one unit
        results_ = [result for result in results_ if result.unit == results_[0].unit]
    for number, result in enumerate(results_):
        result.name = f"student{number}"
        headline = report.headline(result)
        assert_student_text_is_quoted(headline, "headline")
    assert_student_text_is_quoted(report.table(results_, width=None), "table")
    text = summary.summary_text(results_)
    assert_student_text_is_quoted(text, "summary")
    for (task, mistake), _ in summary.common_mistakes(results_) + summary.common_conditions(results_):
        assert MARK not in mistake, mistake
