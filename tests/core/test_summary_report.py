"""The class summary: totals, histogram, pass rates and the commonest mistakes of a class worked out by hand.

The class (rubric of 100 points; every test not named below gets all its points):

- ada: everything passes                                                           100
- ben: sinusoidal_values, sin/cos swapped (-7); relative_positions_values, i - j (-6);
       so shaw_speed is not timed (-8)                                              79
- cy:  sinusoidal_values and sinusoidal_edge_cases, both sin/cos swapped (-7, -2);
       learned_add, positions from 1 (-3); t5_speed half its points (-3.5)          84.5
- dee: the unchanged stub: every task raises NotImplementedError, nothing timed      0
- eve: did not load: every test carries the same "Not graded" message                0
"""

import re
import sys

import pytest

from autograder.core import voice
from autograder.units.positional_encodings import rubric
from autograder.core.grade import Result
from autograder.core.grade import TestResult as Row  # not "Test...": pytest would try to collect it
from autograder.core.summary import (BIN_LABELS, common_conditions, common_mistakes, histogram, score_bin, summary_plot, summary_text,
                                write_summary)

SIN_COS = "sin and cos are swapped: column 2k holds the sine, column 2k+1 the cosine."
FROM_ONE = "positions are counted from 1: position t uses row t of weight, so weight[0:L]."
I_MINUS_J = "the distance is i - j (query minus key); Shaw's convention here is j - i, key minus query."
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def wrong(mistake=None):
    return "sinusoidal_table(...) values differ at [0, 0]: expected 0, got 1." + (
        f"\nLikely mistake: {mistake}" if mistake else "")


def named(mistake):
    """A failed row's score, text and typed parts, as grade.score_tests makes them for a named mistake."""
    return 0, wrong(mistake), {"kind": voice.WRONG, "diagnosis": voice.Diagnosis(mistakes=(mistake,))}


def student(name, changes=None, every_test=None):
    """A Result with all points except ``changes``: {test id: (score, output[, typed parts])}; ``every_test`` sets
    all rows."""
    tests = []
    for test in rubric.TESTS:
        if every_test is not None:
            row = every_test(test)
        else:
            row = (changes or {}).get(test.id, (test.points, f"Passed: {test.checks}.", {"kind": voice.PASSED}))
        score, output, parts = row if len(row) == 3 else (*row, {})
        tests.append(Row(test.id, test.task, score, test.points, output, **parts))
    return Result(name, f"/class/{name}.py", tests)


def stub_row(test):
    if test.task == "timing":
        return 0, "Not timed: every correctness test of this path must pass first, and some did not.", {
            "kind": voice.TIMED}
    function = rubric.TASK_BY_NAME[test.task].functions[0]
    return 0, f"{function} is not implemented yet (it raised NotImplementedError).", {"kind": voice.NOT_IMPLEMENTED}


@pytest.fixture(scope="module")
def the_class():
    return [
        student("ada"),
        student("ben", {"sinusoidal_values": named(SIN_COS),
                        "relative_positions_values": named(I_MINUS_J),
                        "shaw_speed": (0, "Not timed: every correctness test of this path must pass first, "
                                          "and relative_positions_values did not.")}),
        student("cy", {"sinusoidal_values": named(SIN_COS),
                       "sinusoidal_edge_cases": named(SIN_COS),
                       "learned_add": named(FROM_ONE),
                       "t5_speed": (3.5, "Half the points: 9.0x the reference's time.")}),
        student("dee", every_test=stub_row),
        student("eve", every_test=lambda test: (0, "Not graded: your file raised SyntaxError while loading.")),
    ]


def section(text, heading):
    """The lines of the report's section that starts with ``heading`` (sections are split by blank lines)."""
    for block in text.split("\n\n"):
        lines = block.splitlines()
        if lines and lines[0].startswith(heading):
            return lines[1:]
    raise AssertionError(f"no section {heading!r} in:\n{text}")


def row(lines, first_word):
    """The words of the row whose first word is ``first_word``."""
    for line in lines:
        words = line.split()
        if words and words[0] == first_word:
            return words
    raise AssertionError(f"no row {first_word!r} in:\n" + "\n".join(lines))


def test_the_hand_built_class_has_the_totals_worked_out_above(the_class):
    assert [result.score for result in the_class] == [100, 79, 84.5, 0, 0]
    assert all(result.max_score == 100 for result in the_class)


def test_totals_give_mean_median_lowest_and_highest(the_class):
    # mean (100 + 79 + 84.5) / 5 = 52.7; median of 0, 0, 79, 84.5, 100 is 79
    assert row(section(summary_text(the_class), "Totals"), "mean") == \
        ["mean", "52.7", "median", "79", "lowest", "0", "highest", "100"]


def test_score_bins_are_ten_points_wide_and_100_has_its_own():
    assert [score_bin(s) for s in (0, 9.5, 10, 79, 84.5, 89.99, 90, 99.5, 100)] == [0, 0, 1, 7, 8, 8, 9, 9, 10]
    assert BIN_LABELS[0] == "0-9" and BIN_LABELS[9] == "90-99" and BIN_LABELS[10] == "100"


def test_histogram_counts_each_total_once_in_its_bin(the_class):
    assert histogram(the_class) == [2, 0, 0, 0, 0, 0, 0, 1, 1, 0, 1]
    lines = section(summary_text(the_class), "Distribution of totals")
    bins = {line.split("|")[0].strip(): line.split("|")[1].split() for line in lines}
    assert bins["0-9"] == ["##", "2"]
    assert bins["70-79"] == ["#", "1"] and bins["80-89"] == ["#", "1"] and bins["100"] == ["#", "1"]
    assert bins["90-99"] == ["0"] and bins["10-19"] == ["0"]
    assert list(bins) == list(BIN_LABELS)


def test_task_pass_rate_counts_submissions_with_every_point_of_the_task(the_class):
    lines = section(summary_text(the_class), "Pass rate per task")
    # sinusoidal: only ada; learned: ada, ben; relative_positions: ada, cy; shaw and the T5 tasks: ada, ben, cy;
    # timing: only ada (ben's shaw path was not timed, cy has half of t5_speed).
    expected = {"sinusoidal": ("13", "1/5", "20%"), "learned": ("13", "2/5", "40%"),
                "relative_positions": ("8", "2/5", "40%"), "shaw": ("17", "3/5", "60%"),
                "t5_bucket": ("17", "3/5", "60%"), "t5_bias": ("9", "3/5", "60%"),
                "biased_scores": ("8", "3/5", "60%"), "timing": ("15", "1/5", "20%")}
    for task, (points, passed, rate) in expected.items():
        assert row(lines, task)[1:4] == [points, passed, rate], task


def test_a_task_is_not_started_only_where_it_still_raises_not_implemented(the_class):
    lines = section(summary_text(the_class), "Pass rate per task")
    # dee's stub in every correctness task; eve did not load and counts under that heading instead.
    assert all(row(lines, name)[4] == "1" for name in rubric.TASK_NAMES)
    assert row(lines, "timing")[4] == "-"


def test_rubric_test_pass_rates(the_class):
    lines = section(summary_text(the_class), "Pass rate per rubric test")
    expected = {"sinusoidal_values": "1/5", "sinusoidal_edge_cases": "2/5", "sinusoidal_invalid_args": "3/5",
                "learned_add": "2/5", "learned_parameter": "3/5", "relative_positions_values": "2/5",
                "shaw_values": "3/5", "shaw_speed": "2/5", "t5_speed": "2/5"}
    for test_id, passed in expected.items():
        assert row(lines, test_id)[2] == passed, test_id
    assert len(lines) == 1 + len(rubric.TESTS)  # a header, then every rubric test


def test_mistakes_are_counted_once_per_submission_and_ranked(the_class):
    # sin/cos: ben and cy (cy's two sinusoidal tests count once); then the ties in rubric order of the task.
    assert common_mistakes(the_class) == [(("sinusoidal", SIN_COS), 2), (("learned", FROM_ONE), 1),
                                          (("relative_positions", I_MINUS_J), 1)]
    lines = " ".join(" ".join(section(summary_text(the_class), "Most common diagnosed mistakes")).split())
    assert re.search(r"1\. 2 submissions, sinusoidal: sin and cos are swapped.*"
                     r"2\. 1 submission, learned: positions are counted from 1.*"
                     r"3\. 1 submission, relative_positions: the distance is i - j", lines), lines


def test_only_the_ten_commonest_mistakes_are_listed():
    many = [student(f"s{n}", {"sinusoidal_values": named(f"mistake number {n:02}")}) for n in range(12)]
    lines = section(summary_text(many), "Most common diagnosed mistakes")
    assert sum(bool(re.match(r"\s+\d+\. ", line)) for line in lines) == 10
    assert lines[-1].strip() == "... and 2 other mistakes."


def test_submissions_that_did_not_load_or_are_the_stub_are_named(the_class):
    lines = section(summary_text(the_class), "Submissions that could not be graded")
    assert lines == ["  did not load (no test could run): 1",
                     "    eve: Not graded: your file raised SyntaxError while loading.",
                     "  nothing implemented (every task still raises NotImplementedError): 1",
                     "    dee"]


def test_the_reason_a_submission_did_not_load_comes_from_its_notes_when_it_has_them():
    pointer = student("fay", every_test=lambda test: (0, "Not graded: see the message at the top."))
    pointer.notes.append("No notebook was found in the submission.\nUpload positional_encodings.ipynb.")
    lines = section(summary_text([pointer]), "Submissions that could not be graded")
    assert lines[1] == "    fay: No notebook was found in the submission."


def test_a_bin_with_more_than_forty_submissions_gets_a_scaled_bar():
    full, half = student("full"), student("half", every_test=lambda test: (test.points / 2, "Half."))
    text = summary_text([full] * 80 + [half] * 20)
    bins = {line.split("|")[0].strip(): line.split("|")[1].split()
            for line in section(text, "Distribution of totals")}
    assert bins["100"] == ["#" * 40, "80"] and bins["50-59"] == ["#" * 10, "20"]
    assert "the longest is 80 submissions" in text


def test_an_empty_class_says_so():
    text = summary_text([])
    assert "0 submissions" in text and "No submissions were graded" in text


def test_a_class_of_one(the_class):
    text = summary_text(the_class[1:2])
    assert row(section(text, "Totals"), "mean") == ["mean", "79.0", "median", "79", "lowest", "79", "highest", "79"]
    assert row(section(text, "Pass rate per task"), "learned")[2:4] == ["1/1", "100%"]
    assert len(section(text, "Most common diagnosed mistakes")) >= 2  # ben's two mistakes, each on its line


def test_a_class_without_diagnosed_mistakes_says_none(the_class):
    lines = section(summary_text(the_class[:1]), "Most common diagnosed mistakes")
    assert lines == ["  none: no failed test matched a known mistake."]


def test_the_plot_is_a_real_png(the_class, tmp_path):
    image = pytest.importorskip("matplotlib.image")
    path = summary_plot(the_class, tmp_path / "summary.png")
    assert path == tmp_path / "summary.png"
    assert path.read_bytes()[:8] == PNG_MAGIC
    pixels = image.imread(path)
    height, width, channels = pixels.shape
    assert 200 < height < width < 3000 and channels in (3, 4)
    assert pixels.std() > 0  # something was drawn
    assert [p.name for p in tmp_path.iterdir()] == ["summary.png"]  # no temporary file left


def test_a_plot_that_fails_to_save_leaves_the_old_file_whole(the_class, tmp_path, monkeypatch):
    figure = pytest.importorskip("matplotlib.figure")
    (tmp_path / "summary.png").write_bytes(PNG_MAGIC + b"the old picture")

    def fails_half_way(self, name, **options):
        open(name, "wb").write(PNG_MAGIC)
        raise OSError("disk full")

    monkeypatch.setattr(figure.Figure, "savefig", fails_half_way)
    with pytest.raises(OSError, match="disk full"):
        summary_plot(the_class, tmp_path / "summary.png")
    assert (tmp_path / "summary.png").read_bytes() == PNG_MAGIC + b"the old picture"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.png"]


def test_without_matplotlib_there_is_no_plot_and_no_error(the_class, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # makes the import fail
    assert summary_plot(the_class, tmp_path / "summary.png") is None
    assert write_summary(the_class, tmp_path / "out") == [tmp_path / "out" / "summary.txt"]
    assert not (tmp_path / "out" / "summary.png").exists()


def test_write_summary_writes_the_text_and_the_picture(the_class, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "grades" / "class"
    (out.parent).mkdir()
    written = write_summary(the_class, out)
    assert written == [out / "summary.txt", out / "summary.png"]
    assert (out / "summary.txt").read_text(encoding="utf-8") == summary_text(the_class)
    assert (out / "summary.png").read_bytes()[:8] == PNG_MAGIC
    assert sorted(p.name for p in out.iterdir()) == ["summary.png", "summary.txt"]


def test_write_summary_of_an_empty_class(tmp_path):
    written = write_summary([], tmp_path)
    assert written[0] == tmp_path / "summary.txt"
    assert "No submissions were graded" in written[0].read_text(encoding="utf-8")


def test_diagnoses_without_a_named_mistake_are_counted_across_the_class_whatever_their_numbers():
    """Two students with the same unnamed slip see different numbers (their own hidden cases); the summary
    counts them as one diagnosis, and never counts a test whose mistake has a name."""
    def how(first, wrong_entries):
        said = (f"the output is right for position 0..{first - 1}, wrong from position {first} on ({wrong_entries} "
                "of 800 entries wrong).")
        return (0, f"sinusoidal_table(50, 16) is wrong at [1, 2]: expected 0.1, got 0.2 (9 of 800 entries differ).\n"
                   f"How it goes wrong: {said}", {"kind": voice.WRONG, "diagnosis": voice.Diagnosis(how=said)})

    swapped = named(SIN_COS)
    swapped[2]["diagnosis"] = voice.Diagnosis(mistakes=(SIN_COS,), how="swapped.")
    the_class = [student("fay", {"sinusoidal_values": how(30, 320)}),
                 student("gus", {"sinusoidal_values": how(47, 48)}),
                 student("hal", {"sinusoidal_values": (0, swapped[1] + "\nHow it goes wrong: swapped.", swapped[2])})]
    assert common_conditions(the_class) == [
        (("sinusoidal", "How it goes wrong: the output is right for position #..#, wrong from position # on."), 2)]
    lines = " ".join(" ".join(section(summary_text(the_class), "Most common diagnoses where no known mistake")).split())
    assert re.search(r"1\. 2 submissions, sinusoidal: How it goes wrong: the output is right for position #\.\.#",
                     lines), lines
