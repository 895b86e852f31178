"""Row names stay unique after every change a reader's tool makes (docs/threat-model.md, invariant 12).

A class run's grades.csv names each row after the student's folder or file. A reader does not see that name as
written: a spreadsheet runs a cell that starts with = as a formula, so grades.csv writes it with a leading
apostrophe, which the spreadsheet then hides (folders ``=SUM(1)`` and ``'=SUM(1)`` both showed as ``'=SUM(1)``
in the file); tools normalise Unicode (``é`` written as one character or as ``e`` and a combining accent; NFKC
turns a full-width ``Ｓ`` into ``S`` and ``ﬁ`` into ``fi``); a case-insensitive disk, a lookup or an LMS fold
case (``Ana``, ``ana``; ``ß``, ``SS``); and the grader itself writes control characters as escapes (a real ESC
and the four characters ``\\x1b`` read the same). Two rows one reader can mistake for each other give one
student's grade to the other.

Generated class folders (hypothesis) of such names, graded through the real command line with a stand-in for
the sandboxed grader (test_class_entries.ReadingGrader: the real loader, full marks for what it reads): every
entry has a row or a reason, and no two rows' names meet under any of those changes, worked out here from the
cell as written. ``lms-export`` of the result exports every student; of a grades.csv that does hold a name twice
(an earlier grader's), it says which and exports the rest.
"""

import contextlib
import csv
import io
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from autograder.ways_in import lms_export
from test_class_entries import assert_every_entry_accounted_for_once, class_run


def seen_as(cell):
    """Every form a reader may give grades.csv's cell ``cell``: as written, or as a spreadsheet shows it (one
    leading apostrophe hidden); each as is, in NFC and in NFKC; each of those as is and case-folded (and the
    folded form in NFKC again, as Unicode's caseless matching does)."""
    forms = set()
    for shown in {cell, cell[1:] if cell.startswith("'") else cell}:
        for normal in (shown, unicodedata.normalize("NFC", shown), unicodedata.normalize("NFKC", shown)):
            forms |= {normal, normal.casefold(), unicodedata.normalize("NFKC", normal.casefold())}
    return forms


def clashes(cells):
    """Pairs of cells that some reader may take for one name."""
    cells = list(cells)
    return [(a, b) for i, a in enumerate(cells) for b in cells[i + 1:] if seen_as(a) & seen_as(b)]


# Pieces of names: what a spreadsheet reads as a formula, quotes, case pairs, composed and combining accents,
# compatibility characters (full-width, ligatures, the Kelvin sign), control characters and their escapes as text.
PIECES = ["=", "+", "-", "@", "|", "%", "'", '"', "a", "A", "S", "s", "ß", "SS", "é", "e\u0301", "E\u0301",
          "\uff33", "\ufb01", "fi", "\u212a", "K", "k", "=SUM(1)", "\x1b", "\\x1b", "\r", "\n", "\t", "\\t", "\u200b",
          "\\u200b", "\u202e", "1", "01", "_"]


def _variants(name):
    """Names a reader may take for ``name``: with a leading apostrophe, in other cases, decomposed."""
    return [name, "'" + name, name.upper(), name.lower(), name.swapcase(), unicodedata.normalize("NFD", name),
            unicodedata.normalize("NFKC", name)]


def _fits_a_folder(name):
    return (name not in ("", ".", "..") and "/" not in name and "\0" not in name and not name.startswith(".")
            and len(name.encode("utf-8", "surrogatepass")) <= 255)


@st.composite
def folder_names(draw):
    """A class's folder names, drawn to meet: some names, then some of their variants, and a pair of long names
    that agree in their first 120 characters (where the grader cuts a name)."""
    base = draw(st.lists(st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join), min_size=1,
                         max_size=4))
    names = list(base)
    for name in base:
        names += draw(st.lists(st.sampled_from(_variants(name)), max_size=3))
    if draw(st.booleans()):
        stem = draw(st.sampled_from(["a", "A", "="])) * 125
        names += [stem + "x", stem + "X", stem + "y"]
    return sorted({name for name in names if _fits_a_folder(name)}) or ["a"]


def _make(folder, names):
    folder.mkdir()
    for name in names:
        (folder / name).mkdir()
        (folder / name / "positional_encodings.py").write_text("x = 1\n")


def _export(tmp_path, rows, grades_path):
    """lms-export to Moodle with a roster of each row's name as grades.csv writes it: (status, {email: grade},
    what it said)."""
    roster = tmp_path / "roster.csv"
    with open(roster, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "Email address"])
        writer.writerows([row[0], f"s{number}@x.org"] for number, row in enumerate(rows))
    out = tmp_path / "moodle.csv"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = lms_export.main([str(grades_path), "--roster", str(roster), "--format", "moodle", "--assignment",
                                  "PE", "--out", str(out)])
    exported = {}
    if out.exists():
        with open(out, newline="", encoding="utf-8") as handle:
            exported = {row[0]: row[1] for row in list(csv.reader(handle))[1:]}
    return status, exported, err.getvalue()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(names=folder_names())
def test_every_row_name_stays_unique_whatever_a_reader_does_to_it(tmp_path_factory, names):
    root = tmp_path_factory.mktemp("names")
    _make(root / "class", names)
    with pytest.MonkeyPatch.context() as patch:
        rows, saved, skipped = class_run(root / "class", root / "out", patch)
    assert_every_entry_accounted_for_once(root / "class", rows, saved, skipped)
    assert not skipped, skipped  # every generated folder is a submission
    cells = [row[0] for row in rows]
    assert not clashes(cells), f"rows a reader takes for one: {clashes(cells)}"
    status, exported, said = _export(root, rows, root / "out" / "grades.csv")
    assert status == 0, said
    assert exported == {f"s{number}@x.org": "100" for number in range(len(rows))}, said


def test_a_formula_name_and_the_same_name_escaped_get_two_rows(tmp_path, monkeypatch):
    _make(tmp_path / "class", ["=SUM(1)", "'=SUM(1)"])
    rows, saved, skipped = class_run(tmp_path / "class", tmp_path / "out", monkeypatch)
    assert_every_entry_accounted_for_once(tmp_path / "class", rows, saved, skipped)
    cells = [row[0] for row in rows]
    assert len(cells) == 2 and not clashes(cells), cells
    assert all(not cell.startswith(("=", "+", "-", "@")) for cell in cells), cells  # never a formula


def test_names_that_differ_in_case_or_accent_form_get_rows_apart(tmp_path, monkeypatch):
    names = ["Ana", "ana", "Jos\u00e9", "Jose\u0301", "stra\u00dfe", "STRASSE"]
    _make(tmp_path / "class", names)
    rows, saved, skipped = class_run(tmp_path / "class", tmp_path / "out", monkeypatch)
    assert_every_entry_accounted_for_once(tmp_path / "class", rows, saved, skipped)
    assert len(rows) == len(names) and not clashes([row[0] for row in rows]), rows


# ---- lms-export of a grades.csv that holds a name twice ----

@st.composite
def graded_names(draw):
    """Names for grades.csv's rows, written as a grader that did not tell them apart would: some twice, some as
    another's variant."""
    base = draw(st.lists(st.lists(st.sampled_from([p for p in PIECES if p not in "\r\n\t"]), min_size=1,
                                  max_size=4).map("".join), min_size=1, max_size=6))
    names = list(base)
    for name in base:
        names += draw(st.lists(st.sampled_from(_variants(name)), max_size=2))
    return [lms_export.text_cell(name) if not name.startswith("'") else name for name in names]


@settings(max_examples=150, deadline=None)
@given(names=graded_names())
def test_lms_export_says_each_name_held_twice_and_exports_every_other(names):
    grades = [{"submission": name, "total": str(number), "max_score": "100"} for number, name in enumerate(names)]
    roster = [{"submission": name, "Email address": f"s{number}@x.org"} for number, name in enumerate(names)]
    text, problems = lms_export.moodle_csv(grades, roster)
    exported = {row[0]: row[1] for row in list(csv.reader(io.StringIO(text, newline="")))[1:]}
    assert set(exported) == {f"s{number}@x.org" for number in range(len(names))}  # a row for every student
    said = "\n".join(problems)
    for number, name in enumerate(names):
        others = [other for at, other in enumerate(names) if at != number]
        if any(seen_as(name) & seen_as(other) for other in others):
            assert exported[f"s{number}@x.org"] == "-", (name, others, exported)  # no grade that may be another's
        if exported[f"s{number}@x.org"] == "-":
            assert repr(name) in said, (name, said)  # and the instructor is told which
        else:
            assert exported[f"s{number}@x.org"] == str(number)  # its own grade, never another's


def test_lms_export_of_the_issue_s_grades_csv_exports_the_rest(tmp_path, capsys):
    grades = tmp_path / "grades.csv"
    grades.write_text("submission,total,max_score\n'=SUM(1),10,100\n'=SUM(1),90,100\nada,70,100\n", encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text("submission,Email address\n'=SUM(1),a@x.org\nada,b@x.org\n", encoding="utf-8")
    out = tmp_path / "moodle.csv"
    assert lms_export.main([str(grades), "--roster", str(roster), "--format", "moodle", "--assignment", "PE",
                            "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines() == ["Email address,PE", "a@x.org,-", "b@x.org,70"]
    said = capsys.readouterr().err
    assert "grades.csv has 2 rows for one submission name (\"'=SUM(1)\" and \"'=SUM(1)\"" in said, said
