"""The similarity report (autograder/course/similarity.py) on a generated class.

The class: the reference, and one student per formulation in submissions/alternatives/ (student j writes the
j-th alternative of each task that has one, and leaves the other tasks as the stub gives them). These are honest,
different solutions. A copier then takes one student's functions, renames every local variable, lets
``ast.unparse`` reformat every statement, and adds comments and blank lines: that pair must rank first, well
above any honest pair.
"""

import ast
import builtins
import csv
import io
import keyword
import os
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.core import units
from autograder.course import similarity
from autograder.course.build import make_stub
from autograder.core.units import strip_markers

UNIT = units.get("positional_encodings")
TASKS = UNIT.rubric.TASK_NAMES
FUNCTIONS = tuple(UNIT.rubric.TASK_OF_FUNCTION)
SUBMISSIONS = Path(__file__).parent / "submissions"
ALTERNATIVES = {"positional_encodings": SUBMISSIONS / "alternatives",
                "rotary_alibi": SUBMISSIONS / "rotary_alibi" / "alternatives"}
REFERENCE_TEXT = UNIT.reference_path.read_text(encoding="utf-8")
REFERENCE = strip_markers(REFERENCE_TEXT)
STUB = make_stub(REFERENCE_TEXT, UNIT)
HEADER = "import math\n\nimport torch\nfrom torch import nn\n"

COPIED_AT_LEAST = 0.9  # a renamed, reformatted copy: the same code once normalised
HONEST_BELOW = 0.4  # two different formulations of one task (at most 0.21 here, 0.35 in rotary_alibi)


def honest_class(unit):
    """{name: text}: the reference, and student j with the j-th alternative of every task that has one."""
    by_task = {}
    for path in sorted(ALTERNATIVES[unit.name].glob("*.py")):
        by_task.setdefault(path.name.split("__")[0], []).append(path.read_text(encoding="utf-8"))
    assert set(by_task) == set(unit.rubric.TASK_NAMES)
    reference = unit.reference_path.read_text(encoding="utf-8")
    students = {"reference": strip_markers(reference)}
    for j in range(max(len(texts) for texts in by_task.values())):
        # Definitions later in the file replace the stub's, as they would when a student runs it.
        students[f"student{j}"] = make_stub(reference, unit) + "".join(
            "\n\n" + texts[j] for texts in by_task.values() if j < len(texts))
    return students


HONEST = honest_class(UNIT)


def last_definitions(text, functions=FUNCTIONS):
    """{name: node} of the task functions and classes a file defines, the last of each name."""
    return {node.name: node for node in ast.parse(text).body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in functions}


def local_names(node):
    """The names a function or class assigns (its variables), less its parameters, which the stub gives."""
    assigned = {inner.id for inner in ast.walk(node)
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store)}
    return assigned - {inner.arg for inner in ast.walk(node) if isinstance(inner, ast.arg)}


class RenameLocals(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        node.id = self.mapping.get(node.id, node.id)
        return node


def disguised_copy(victim_text, new_names, order, edits, functions=FUNCTIONS):
    """The victim's task functions with their variables renamed (``new_names``: one for each, in sorted order),
    reformatted by ``ast.unparse``, in ``order`` (a permutation of their indices), then ``edits`` applied to the
    lines: (where, "comment" | "blank" | "trailing", comment text)."""
    definitions = list(last_definitions(victim_text, functions).values())
    mapping = dict(zip(sorted(set().union(*map(local_names, definitions))), new_names))
    # Each function's own variables only: a name that is one function's variable is another's parameter.
    renamed = [RenameLocals({old: mapping[old] for old in local_names(node)}).visit(node) for node in definitions]
    lines = "\n\n".join(ast.unparse(renamed[index]) for index in order).split("\n")
    for where, kind, text in edits:
        at = where % len(lines)
        if kind == "comment":
            lines.insert(at, f"# {text}")
        elif kind == "blank":
            lines.insert(at, "")
        else:
            lines[at] += f"  # {text}"
    copy = HEADER + "\n\n" + "\n".join(lines) + "\n"
    compile(copy, "copy.py", "exec")  # still Python
    return copy


def needed_names(text, functions=FUNCTIONS):
    """How many new names a copy of ``text`` needs, and the names it must not take."""
    definitions = last_definitions(text, functions).values()
    taken = {node.id for tree in definitions for node in ast.walk(tree) if isinstance(node, ast.Name)}
    taken |= {node.arg for tree in definitions for node in ast.walk(tree) if isinstance(node, ast.arg)}
    taken |= set(functions) | set(dir(builtins)) | {"math", "torch", "nn"}
    return len(set().union(*map(local_names, definitions))), taken


def plain_copy(victim_text, functions=FUNCTIONS):
    """A copy with its variables renamed ``renamed_0``, ``renamed_1``..., five comments and a blank line added."""
    count, _ = needed_names(victim_text, functions)
    edits = [(n * 7, "comment", "copied, of course") for n in range(5)] + [(3, "blank", "")]
    return disguised_copy(victim_text, [f"renamed_{n}" for n in range(count)],
                          range(len(last_definitions(victim_text, functions))), edits, functions)


def write_class(folder, students):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in students.items():
        (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return folder


def rows_of(report, task):
    return [row for row in report if row.task == task]


def pair_of(row):
    return {row.name_a, row.name_b}


def assert_copy_ranks_first(report, victim, copier="copier"):
    for task in report.unit.rubric.TASK_NAMES:
        rows = rows_of(report, task)
        if victim in dict(report.not_compared[task]):
            assert not any(copier in pair_of(row) for row in rows), task  # the stub copied: nothing to compare
            continue
        first = rows[0]
        assert pair_of(first) == {victim, copier}, f"{task}: {rows[:3]}"
        assert first.score >= COPIED_AT_LEAST, f"{task}: {first}"
        honest = [row.score for row in rows if copier not in pair_of(row)]
        assert max(honest, default=0) < first.score, f"{task}: {rows[:3]}"


# The honest class alone.

@pytest.fixture(scope="module")
def honest_report(tmp_path_factory):
    return similarity.similarity_report(UNIT, [write_class(tmp_path_factory.mktemp("honest"), HONEST)])


def test_honest_formulations_of_a_task_score_low(honest_report):
    compared = [row for row in honest_report if row.score > 0]
    assert compared, "the honest students share nothing at all: the class is not what this test means"
    for row in honest_report:
        assert row.score < HONEST_BELOW, row


def test_every_task_compares_the_students_who_wrote_it(honest_report):
    for task in TASKS:
        formulations = len(list(ALTERNATIVES[UNIT.name].glob(f"{task}__*.py")))
        wrote = {"reference"} | {f"student{j}" for j in range(formulations)}
        compared = {name for row in rows_of(honest_report, task) for name in pair_of(row)}
        assert compared == wrote, task
        assert {name for name, _ in honest_report.not_compared[task]} == set(HONEST) - wrote, task


# A copied-and-renamed pair.

@pytest.mark.parametrize("victim", ["reference", "student0", "student2"])
def test_a_renamed_reformatted_copy_ranks_first_in_every_task(tmp_path, victim):
    students = dict(HONEST, copier=plain_copy(HONEST[victim]))
    report = similarity.similarity_report(UNIT, [write_class(tmp_path, students)])
    assert_copy_ranks_first(report, victim)
    overall = report.overall[0]
    assert {overall.name_a, overall.name_b} == {victim, "copier"} and overall.score >= COPIED_AT_LEAST


def test_in_the_second_unit_too_a_copy_ranks_first_and_honest_pairs_score_low(tmp_path):
    unit = units.get("rotary_alibi")
    honest = honest_class(unit)
    copy = plain_copy(honest["student1"], tuple(unit.rubric.TASK_OF_FUNCTION))
    report = similarity.similarity_report(unit, [write_class(tmp_path, dict(honest, copier=copy))])
    assert_copy_ranks_first(report, "student1")
    assert max(row.score for row in report if "copier" not in pair_of(row)) < HONEST_BELOW


def test_a_copy_with_a_statement_added_to_each_function_still_ranks_first(tmp_path):
    copy = ast.parse(plain_copy(HONEST["reference"]))
    for node in ast.walk(copy):
        if isinstance(node, ast.FunctionDef) and len(node.body) > 2:
            node.body.insert(len(node.body) // 2, ast.parse("padding = len([]) + 1").body[0])
    students = dict(HONEST, copier=ast.unparse(copy))
    report = similarity.similarity_report(UNIT, [write_class(tmp_path, students)])
    for task in TASKS:
        first = rows_of(report, task)[0]
        assert pair_of(first) == {"reference", "copier"} and first.score >= 0.5, (task, rows_of(report, task)[:3])


_IDENTIFIER = st.from_regex(r"[a-z_][a-z0-9_]{0,9}", fullmatch=True).filter(lambda name: not keyword.iskeyword(name))
_COMMENT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=30)
_EDITS = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(["comment", "blank", "trailing"]), _COMMENT),
                  max_size=30)


@st.composite
def copies(draw):
    victim = draw(st.sampled_from(sorted(HONEST)))
    count, taken = needed_names(HONEST[victim])
    names = draw(st.lists(_IDENTIFIER.filter(lambda name: name not in taken), min_size=count, max_size=count,
                          unique=True))
    order = draw(st.permutations(range(len(last_definitions(HONEST[victim])))))
    return victim, disguised_copy(HONEST[victim], names, order, draw(_EDITS))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(copies())
def test_any_renaming_and_reformatting_of_a_copy_still_ranks_first(copied):
    victim, copy = copied
    with tempfile.TemporaryDirectory() as folder:
        report = similarity.similarity_report(UNIT, [write_class(folder, dict(HONEST, copier=copy))])
    assert_copy_ranks_first(report, victim)


def test_a_copy_in_a_notebook_ranks_first(tmp_path):
    copy = plain_copy(HONEST["student1"])
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# My solutions"), nbformat.v4.new_code_cell(HEADER),
                      nbformat.v4.new_code_cell("%matplotlib inline")]
    notebook.cells += [nbformat.v4.new_code_cell(ast.unparse(node))
                       for node in last_definitions(copy).values()]
    notebook.cells.append(nbformat.v4.new_code_cell("def broken(:\n    pass"))  # a cell that does not parse
    folder = write_class(tmp_path / "class", HONEST)
    (folder / "copier.ipynb").write_text(nbformat.writes(notebook), encoding="utf-8")
    report = similarity.similarity_report(UNIT, [folder])
    assert_copy_ranks_first(report, "student1")
    assert any("does not parse" in note for note in report.sources["copier"].notes)


# What is never compared.

def test_a_stub_only_submission_pairs_with_nothing(tmp_path):
    students = dict(HONEST, blank=STUB, pass_for_raise=STUB.replace(
        'raise NotImplementedError("Task sinusoidal: not implemented yet")', "pass"))
    report = similarity.similarity_report(UNIT, [write_class(tmp_path, students)])
    for name in ("blank", "pass_for_raise"):
        assert not [row for row in report if name in pair_of(row)]
        assert not [row for row in report.overall if name in (row.name_a, row.name_b)]
        for task in TASKS:
            assert dict(report.not_compared[task])[name] == "has the stub's code only", task


def test_the_stubs_own_code_is_not_a_fingerprint():
    code = similarity.fingerprint_submission(UNIT, _loaded("reference.py", REFERENCE)).tasks["learned"]
    assert "super" not in code.tokens and "NotImplementedError" not in code.tokens
    assert "LearnedPositionalEmbedding" not in code.tokens and "forward" not in code.tokens  # the def lines


def _loaded(name, text):
    from autograder.intake.load import Submission

    return Submission(name=name, path=Path(name), chunks=[{"label": name, "source": text}], skipped=[])


def test_unreadable_entries_are_listed_with_their_reason(tmp_path):
    folder = write_class(tmp_path / "class", {"reference": REFERENCE, "student0": HONEST["student0"],
                                              "broken": "def sinusoidal_table(:\n"})
    (folder / "notes.txt").write_text("not code")
    os.symlink(folder / "reference.py", folder / "linked.py")
    (folder / "deep.py").write_text("x = " + "(" * 5000 + ")" * 5000 + "\n")
    report = similarity.similarity_report(UNIT, [folder])
    skipped = dict(report.skipped)
    assert set(skipped) == {"notes.txt", "linked", "broken", "deep"}
    assert "symbolic link" in skipped["linked"] and "does not parse" in skipped["broken"]
    assert set(report.sources) == {"reference", "student0"}


# The page.

class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes = set(), set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def test_the_page_escapes_a_students_script_in_a_comment_a_string_and_a_name(tmp_path):
    hostile = HONEST["reference"].replace(
        "    position = torch.arange(num_positions",
        "    # <script>alert(1)</script>\n"
        "    note = \"</pre><script>alert(2)</script>\"\n"
        "    position = torch.arange(num_positions")
    name = "<img src=x onerror=alert(1)>"
    students = {name: hostile, "copier": plain_copy(hostile), "student0": HONEST["student0"]}
    report = similarity.similarity_report(UNIT, [write_class(tmp_path / "class", students)])
    assert pair_of(rows_of(report, "sinusoidal")[0]) == {name, "copier"}
    out = similarity.write_html(report, tmp_path / "similarity.html", report.sources)
    page = out.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text
    assert "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    parsed = _Tags()
    parsed.feed(page)
    assert parsed.tags <= {"html", "head", "meta", "title", "style", "body"} | similarity._TAGS
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert parsed.attributes <= {"lang", "charset", "class", "id", "href", "open"}
    assert "http:" not in page and "https:" not in page and "<link" not in page  # nothing fetched from outside
    assert 'class="line shared"' in page  # the shared lines are highlighted


# The command.

def test_main_writes_the_page_and_the_table_and_prints_the_top_pairs(tmp_path, capsys):
    folder = write_class(tmp_path / "class", dict(HONEST, copier=plain_copy(HONEST["student0"])))
    assert similarity.main([str(folder), "--unit", UNIT.name, "--out", str(tmp_path / "out"), "--top", "2"]) == 0
    printed = capsys.readouterr().out
    assert "student0  ~  copier" in printed or "copier  ~  student0" in printed
    assert (tmp_path / "out" / "similarity.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "similarity.csv").read_text(encoding="utf-8"))))
    first = next(row for row in rows if row["task"] == "sinusoidal")
    assert {first["submission_a"], first["submission_b"]} == {"student0", "copier"}
    assert float(first["score"]) >= COPIED_AT_LEAST
    assert any(row["task"] == "overall" for row in rows)


@pytest.mark.parametrize("argv, says", [
    (["missing-folder", "--unit", "positional_encodings", "--out", "out"], "no such file or folder"),
    (["{class}", "--unit", "no_such_unit", "--out", "out"], "invalid choice"),
    (["{class}", "--unit", "positional_encodings", "--out", "out", "--top", "0"], "--top must be 1 or more"),
    (["{empty}", "--unit", "positional_encodings", "--out", "out"], "no submission to compare"),
])
def test_main_refuses_bad_input_with_status_2(tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    write_class(tmp_path / "class", {"reference": REFERENCE})
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "readme.txt").write_text("nothing here")
    argv = [part.format(**{"class": "class", "empty": "empty"}) for part in argv]
    assert similarity.main(argv) == 2
    assert says in capsys.readouterr().err


# The algorithm's parts.

def test_winnowing_keeps_the_smallest_of_each_window_once():
    hashes = [77, 74, 42, 17, 98, 50, 17, 98, 8, 88, 67, 39, 77, 74, 42, 17, 98]  # the paper's example
    assert similarity.winnow(hashes, 4) == [(17, 3), (17, 6), (8, 8), (39, 11), (17, 15)]
    assert similarity.winnow([5, 3, 9], 4) == [(3, 1)]
    assert similarity.winnow([], 4) == []


def test_the_ranking_across_tasks_is_the_mean_over_the_tasks_both_submitted():
    rows = [similarity.Pair("sinusoidal", "x", "y", 1.0, 5), similarity.Pair("shaw", "x", "y", 0.5, 3),
            similarity.Pair("sinusoidal", "x", "z", 0.9, 4)]
    assert similarity.overall_ranking(rows) == [similarity.Overall("x", "z", 0.9, 1, 4),
                                                similarity.Overall("x", "y", 0.75, 2, 8)]


def test_placeholders_make_a_kgram_the_same_whatever_its_names():
    first = similarity.kgram_hashes(["v_0", "=", "v_1", "+", "v_0"], {"v_0", "v_1"}, k=5)
    second = similarity.kgram_hashes(["v_7", "=", "v_3", "+", "v_7"], {"v_3", "v_7"}, k=5)
    other = similarity.kgram_hashes(["v_7", "=", "v_3", "+", "v_3"], {"v_3", "v_7"}, k=5)
    assert first == second != other
