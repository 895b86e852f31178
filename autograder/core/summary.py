"""The class summary an instructor reads after grading: totals, pass rates, the commonest mistakes.

``summary_text`` is the whole report as plain text; ``summary_plot`` draws the
score histogram and the pass rate per task as a PNG (when matplotlib is
installed); ``write_summary`` writes both into the output folder.

Rates count every submission, including those that could not be graded.
Names and diagnoses come from submissions, so the text shows them through
``autograder.intake.inert`` on one line each; the picture draws only the rubric's
task names and numbers.
"""

import os
import re
import statistics
import textwrap
from collections import Counter
from pathlib import Path

from autograder.core import voice
from autograder.core.units import rubric_of
from autograder.intake.inert import inert_line

BIN_LABELS = tuple(f"{low}-{low + 9}" for low in range(0, 100, 10)) + ("100",)
TOP_MISTAKES = 10
BAR_WIDTH = 40  # the longest bar of the text histogram, in characters
NAMES_SHOWN = 10  # submissions named under "could not be graded" before "and N more"

# What differs between two students' diagnoses of one mistake: their cases' counts and numbers.
_COUNTS = re.compile(r" \((\d+ of \d+ entries wrong|\d+ cases? pass, \d+ fail)\)")
_NUMBER = re.compile(r"(?<![\w/])(?<!\d\.)-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w/])")
_EPSILON = 1e-9  # totals are sums of floats (the timing tier gives fractions of points)


def _points(value):
    return f"{value:g}"


def _percent(part, whole):
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _plural(count, word):
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


# --- what the numbers are -------------------------------------------------------------------

def score_bin(score, max_score=100):
    """The histogram bin of a total: 0 for 0-9, ..., 9 for 90-99 (up to but not including 100), 10 for 100.

    Totals are read as a percent of the rubric's points, ``max_score`` (each unit's rubric has 100).
    """
    percent = 100 * score / max_score
    return min(max(int(percent / 10 + _EPSILON), 0), len(BIN_LABELS) - 1)


def histogram(results):
    """How many totals fall in each bin of ``BIN_LABELS``."""
    counts = [0] * len(BIN_LABELS)
    for result in results:
        counts[score_bin(result.score, result.max_score or 100)] += 1
    return counts


def all_tasks(results):
    """The correctness tasks, then the timing tier: every task that carries points (of the results' unit)."""
    rubric = rubric_of(results)
    return rubric.TASKS + (rubric.TIMING,)


def task_passed(result, task_name):
    """Whether ``result`` has every point of the task."""
    rubric = rubric_of([result])
    return result.task_score(task_name) >= rubric.task_points(task_name) - _EPSILON


def rubric_test_passed(result, test_id):
    """Whether ``result`` passed the rubric test (a result without that row did not)."""
    return any(test.passed for test in result.tests if test.id == test_id)


def did_not_load(result):
    """Whether no test could run: every row failed with the same message (see grade._all_failed)."""
    outputs = {test.output for test in result.tests}
    return bool(result.tests) and len(outputs) == 1 and not any(test.score for test in result.tests)


def task_not_started(result, task_name):
    """Whether every test of the task failed because its functions raise NotImplementedError (the stub)."""
    tests = [test for test in result.tests if test.task == task_name]
    return bool(tests) and all(test.kind == voice.NOT_IMPLEMENTED for test in tests)


def nothing_implemented(result):
    """Whether the submission is the unchanged stub: no correctness task started."""
    rubric = rubric_of([result])
    return not did_not_load(result) and all(task_not_started(result, name) for name in rubric.TASK_NAMES)


def diagnosed_mistakes(result):
    """The distinct (task, likely mistake) pairs in the failed tests of ``result``, in rubric order: each test's
    named mistake as the grader's Diagnosis holds it (autograder/core/voice.py), never read from its text."""
    found = {}
    for test in result.tests:
        if not test.passed and test.diagnosis.mistakes:
            found[(test.task, test.diagnosis.mistakes[0].strip())] = None
    return list(found)


def diagnosis_kind(line):
    """A diagnosis as the class summary counts it: without its case's counts, its numbers as #."""
    return _NUMBER.sub("#", _COUNTS.sub("", line)).strip()


def diagnosed_conditions(result):
    """The distinct (task, "How/When it goes wrong: ...") pairs in the failed tests of ``result`` that no named
    mistake explains, each as diagnosis_kind makes it."""
    found = {}
    for test in result.tests:
        if not test.passed and not test.diagnosis.mistakes:
            for lead, said in (("How it goes wrong", test.diagnosis.how), ("When it goes wrong", test.diagnosis.when)):
                if said:
                    found[(test.task, f"{lead}: {diagnosis_kind(said)}")] = None
    return list(found)


def common_conditions(results):
    """[((task, diagnosis), submissions)] over the class, most common first, as common_mistakes."""
    counts = Counter(pair for result in results for pair in diagnosed_conditions(result))
    order = {task.name: index for index, task in enumerate(all_tasks(results))}
    return sorted(counts.items(), key=lambda item: (-item[1], order.get(item[0][0], len(order)), item[0][1]))


def common_mistakes(results):
    """[((task, mistake), submissions)] over the class, most common first.

    A submission counts once for a mistake, however many of its tests show it. Ties go in rubric
    order of the task, then alphabetically.
    """
    counts = Counter(pair for result in results for pair in diagnosed_mistakes(result))
    order = {task.name: index for index, task in enumerate(all_tasks(results))}
    return sorted(counts.items(), key=lambda item: (-item[1], order.get(item[0][0], len(order)), item[0][1]))


# --- the text report ------------------------------------------------------------------------

def _totals_section(results):
    totals = [result.score for result in results]
    return ["Totals",
            f"  mean {statistics.mean(totals):.1f}   median {_points(statistics.median(totals))}   "
            f"lowest {_points(min(totals))}   highest {_points(max(totals))}"]


def _histogram_section(results):
    counts = histogram(results)
    largest = max(counts)
    scaled = largest > BAR_WIDTH
    note = f"bars scaled: the longest is {largest} submissions" if scaled else "one # per submission"
    lines = [f"Distribution of totals ({note})"]
    label_width = max(len(label) for label in BIN_LABELS)
    for label, count in zip(BIN_LABELS, counts):
        marks = max(1, round(count * BAR_WIDTH / largest)) if scaled and count else count  # a bin of 1 still shows
        lines.append(f"  {label:>{label_width}} | {'#' * marks:<{BAR_WIDTH}} {count}")
    return lines


def _task_section(results):
    rubric = rubric_of(results)
    count = len(results)
    name_width = max(len(task.name) for task in all_tasks(results))
    loaded = [result for result in results if not did_not_load(result)]
    lines = ["Pass rate per task (submissions with every point of the task)",
             f"  {'task':<{name_width}}  points  passed   rate  not started"]
    for task in all_tasks(results):
        passed = sum(task_passed(result, task.name) for result in results)
        # The timing tier has no functions of its own, so it cannot be "not started".
        not_started = str(sum(task_not_started(result, task.name) for result in loaded)) if task.functions else "-"
        lines.append(f"  {task.name:<{name_width}}  {rubric.task_points(task.name):>6}  "
                     f"{f'{passed}/{count}':>6}  {_percent(passed, count):>5}  {not_started:>11}")
    return lines


def _test_section(results):
    rubric = rubric_of(results)
    count = len(results)
    id_width = max(len(test.id) for test in rubric.TESTS)
    lines = ["Pass rate per rubric test",
             f"  {'test':<{id_width}}  points  passed   rate"]
    for test in rubric.TESTS:
        passed = sum(rubric_test_passed(result, test.id) for result in results)
        lines.append(f"  {test.id:<{id_width}}  {test.points:>6}  {f'{passed}/{count}':>6}  "
                     f"{_percent(passed, count):>5}")
    return lines


def _mistake_section(results):
    ranked = common_mistakes(results)
    lines = ["Most common diagnosed mistakes (submissions whose feedback names each one)"]
    if not ranked:
        return lines + ["  none: no failed test matched a known mistake."]
    for rank, ((task, mistake), count) in enumerate(ranked[:TOP_MISTAKES], start=1):
        head = f"  {rank:>2}. {_plural(count, 'submission')}, {inert_line(task)}: "
        lines.append(textwrap.fill(inert_line(mistake), width=100, initial_indent=head,
                                   subsequent_indent=" " * 8))
    if len(ranked) > TOP_MISTAKES:
        lines.append(f"  ... and {_plural(len(ranked) - TOP_MISTAKES, 'other mistake')}.")
    conditions = common_conditions(results)
    if conditions:
        lines += ["", "Most common diagnoses where no known mistake fits (how or when the output goes wrong; "
                      "numbers as #)"]
        for rank, ((task, said), count) in enumerate(conditions[:TOP_MISTAKES], start=1):
            head = f"  {rank:>2}. {_plural(count, 'submission')}, {inert_line(task)}: "
            lines.append(textwrap.fill(inert_line(said), width=100, initial_indent=head,
                                       subsequent_indent=" " * 8))
        if len(conditions) > TOP_MISTAKES:
            lines.append(f"  ... and {_plural(len(conditions) - TOP_MISTAKES, 'other diagnosis')}.")
    return lines


def _named(results, reason=None):
    lines = []
    for result in results[:NAMES_SHOWN]:
        why = f": {' '.join(inert_line(reason(result)).split())[:100]}" if reason else ""
        lines.append(f"    {inert_line(result.name)}{why}")
    if len(results) > NAMES_SHOWN:
        lines.append(f"    ... and {len(results) - NAMES_SHOWN} more")
    return lines


def _why_not_loaded(result):
    """The first line of the message that replaced every test: the last note, else the rows' own text."""
    # gradescope._not_graded keeps the reason in the notes and a pointer to it in every row.
    message = str(result.notes[-1] if result.notes else result.tests[0].output).strip()
    return message.split("\n", 1)[0] if message else "no message"


def _ungraded_section(results):
    unloaded = [result for result in results if did_not_load(result)]
    stubs = [result for result in results if nothing_implemented(result)]
    lines = ["Submissions that could not be graded as a whole",
             f"  did not load (no test could run): {len(unloaded)}"]
    lines += _named(unloaded, _why_not_loaded)
    lines.append(f"  nothing implemented (every task still raises NotImplementedError): {len(stubs)}")
    lines += _named(stubs)
    return lines


def summary_text(results):
    """The class summary as plain text: totals, histogram, pass rates, commonest mistakes, ungraded work."""
    results = list(results)
    rubric = rubric_of(results)
    title = f"Class summary: {_plural(len(results), 'submission')}, out of {rubric.MAX_SCORE} points each"
    if not results:
        return f"{title}\n\nNo submissions were graded, so there is nothing to summarise.\n"
    sections = [[title, "=" * len(title)], _totals_section(results), _histogram_section(results),
                _task_section(results), _test_section(results), _mistake_section(results),
                _ungraded_section(results)]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


# --- the picture ----------------------------------------------------------------------------

def _replace_atomically(path, write):
    """Call ``write(temporary_path)`` for a file beside ``path``, then move it onto ``path``.

    A reader never sees half a file; if ``write`` fails, the old file stays and the temporary goes.
    """
    path = Path(path)
    # Named by process so two graders writing one folder do not share it; a plain open keeps the umask's mode.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def summary_plot(results, path):
    """Draw the score histogram (left) and the pass rate per task (right) as a PNG at ``path``.

    Returns the path, or None when matplotlib is not installed (the text report stands alone then).
    """
    results = list(results)
    rubric = rubric_of(results)
    try:
        # A Figure with no pyplot renders with Agg and leaves the process's backend alone
        # (matplotlib.use("Agg") would switch the backend of a notebook that imports this).
        from matplotlib.figure import Figure
    except ImportError:
        return None
    results = list(results)
    count = len(results)
    figure = Figure(figsize=(12, 4.8), dpi=100, layout="constrained")
    scores, rates = figure.subplots(1, 2, width_ratios=(1.1, 1))

    counts = histogram(results)
    scores.bar(range(len(BIN_LABELS)), counts, color="tab:blue")
    scores.set_xticks(range(len(BIN_LABELS)), BIN_LABELS, rotation=45, ha="right")
    scores.set_xlabel(f"total (out of {rubric.MAX_SCORE})")
    scores.set_ylabel("submissions")
    scores.set_ylim(0, max(counts + [1]) * 1.15)
    scores.yaxis.get_major_locator().set_params(integer=True)
    for index, value in enumerate(counts):
        if value:
            scores.annotate(str(value), (index, value), ha="center", va="bottom", xytext=(0, 2),
                            textcoords="offset points")
    scores.set_title(f"Totals of {_plural(count, 'submission')}")

    tasks = all_tasks(results)
    percents = [100 * sum(task_passed(result, task.name) for result in results) / count if count else 0
                for task in tasks]
    positions = range(len(tasks))
    rates.barh(positions, percents, color="tab:green")
    rates.set_yticks(positions, [task.name for task in tasks])
    rates.invert_yaxis()  # rubric order, top to bottom
    rates.set_xlim(0, 100)
    rates.set_xlabel("submissions with every point of the task (%)")
    for position, value in zip(positions, percents if count else ()):  # no rates to label in an empty class
        inside = value > 88  # a label past a nearly full bar would leave the axes
        rates.annotate(f"{value:.0f}%", (value, position), va="center", xytext=(-3 if inside else 3, 0),
                       textcoords="offset points", ha="right" if inside else "left")
    rates.set_title("Pass rate per task" if count else "Pass rate per task (no submissions)")

    return _replace_atomically(path, lambda temporary: figure.savefig(temporary, format="png"))


def write_summary(results, out_dir):
    """Write summary.txt and, when matplotlib is installed, summary.png into ``out_dir``; the paths written."""
    results = list(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = summary_text(results)
    written = [_replace_atomically(out / "summary.txt",
                                   lambda temporary: Path(temporary).write_text(text, encoding="utf-8"))]
    picture = summary_plot(results, out / "summary.png")
    if picture is not None:
        written.append(picture)
    return written
