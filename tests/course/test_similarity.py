"""The similarity report (autograder/course/similarity.py) on a generated class.

The class: the reference, and one student per formulation in submissions/alternatives/ (student j writes the
j-th alternative of each task that has one, and leaves the other tasks as the stub gives them). These are honest,
different solutions. A copier then takes one student's functions, renames every local variable, lets
``ast.unparse`` reformat every statement, and adds comments and blank lines: that pair must rank first, well
above any honest pair. Then the copier pads: statements that do nothing, code that never runs, helpers nothing
calls (all dropped before comparing), and helpers that are called (compared: the containment stays a copy's).
Every honest formulation the suite holds, blind sets included, stays below a copy's bound in every unit.
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
SUBMISSIONS = Path(__file__).parents[1] / "submissions"
ALTERNATIVES = {"positional_encodings": SUBMISSIONS / "alternatives",
                "rotary_alibi": SUBMISSIONS / "rotary_alibi" / "alternatives"}
REFERENCE_TEXT = UNIT.reference_path.read_text(encoding="utf-8")
REFERENCE = strip_markers(REFERENCE_TEXT)
STUB = make_stub(REFERENCE_TEXT, UNIT)
HEADER = "import math\n\nimport torch\nfrom torch import nn\n"

COPIED_AT_LEAST = 0.9  # a renamed, reformatted copy: the same code once normalised
HONEST_BELOW = 0.4  # two different formulations of one task (at most 0.21 here, 0.26 in rotary_alibi)


# Every honest formulation the suite holds: those above, and the blind sets (written by people who had not read
# the grader), the third unit's only there.
ALL_ALTERNATIVES = {"positional_encodings": (ALTERNATIVES["positional_encodings"],
                                             SUBMISSIONS / "blind" / "positional_encodings" / "alternatives"),
                    "rotary_alibi": (ALTERNATIVES["rotary_alibi"],
                                     SUBMISSIONS / "blind" / "rotary_alibi" / "alternatives"),
                    "long_context": (SUBMISSIONS / "blind" / "long_context" / "alternatives",)}


def honest_class(unit, folders=None):
    """{name: text}: the reference, and student j with the j-th alternative of every task that has one
    (``folders``: where the alternatives are, by default ``ALTERNATIVES[unit.name]``)."""
    by_task = {}
    for folder in folders or (ALTERNATIVES[unit.name],):
        for path in sorted(folder.glob("*.py")):
            by_task.setdefault(path.name.split("__")[0], []).append(path.read_text(encoding="utf-8"))
    assert set(by_task) == set(unit.rubric.TASK_NAMES)
    reference = unit.reference_path.read_text(encoding="utf-8")
    students = {"reference": unit.finished_reference}
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


# Padding that does nothing: dropped before fingerprinting (issue 34, point 8).

def pad_every_statement(text, line="_pad = 0"):
    """``text`` with ``line`` after every statement of every block (function and class bodies, branches, loops)."""
    padding = ast.parse(line).body

    class Pad(ast.NodeTransformer):
        def generic_visit(self, node):
            super().generic_visit(node)
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt) \
                        and not isinstance(node, ast.Module):
                    setattr(node, name, [new for statement in block for new in [statement, *padding]])
            return node

    return ast.unparse(ast.fix_missing_locations(Pad().visit(ast.parse(text))))


@pytest.mark.parametrize("line", ["_pad = 0", "_pad = _pad_seed + 1 if False else 0", "'padding'; 0; pass"])
def test_a_copy_padded_after_every_statement_scores_as_a_copy(tmp_path, line):
    # Before statements without effect were dropped, "_pad = 0" after every statement took the reference's copy
    # down to about 0.06 to 0.28 a task (0.17 across tasks), below honest pairs; an exact copy is 1.0. Lone
    # constants and pass (the last line) were dropped already: the padding that was not is what this is about.
    copy = pad_every_statement(plain_copy(HONEST["reference"]), line)
    assert copy.count(line.split(";")[0]) > 50
    report = similarity.similarity_report(UNIT, [write_class(tmp_path, dict(HONEST, copier=copy))])
    assert_copy_ranks_first(report, "reference")
    overall = report.overall[0]
    assert {overall.name_a, overall.name_b} == {"reference", "copier"} and overall.score >= COPIED_AT_LEAST


_JUNK_NAME = st.from_regex(r"_?[a-z][a-z0-9]{0,7}", fullmatch=True).filter(lambda name: not keyword.iskeyword(name))
# Statements with no effect on any output, as a copier pads with them: {j}, {k} are fresh names, {p} a parameter of
# the function they go into, {n} a small number. Each is a list of lines, at the block's indentation.
_JUNK = [
    "{j} = {n}", "{j} = {p}", "{j} = ({p}, {n})", "{j} = len([{p}]) + {n}", "{j} = math.sqrt({n} + 1.0)",
    "{j} = {n}\n{k} = {j} * 2 + {n}", "{j} = {n}\n{j} += {n}", "{j} = [{n}]\n{j} += [{p}]", "{j} = {n}\ndel {j}",
    "{p}", "{n}", "({p}, {n})", "{p} is None", "'a note'", "...", "pass",
    "import os", "import collections as {j}", "from math import pi as {j}",
    "def {j}({k}):\n    return {k} + {n}", "class {j}:\n    {k} = {n}",
    "if False:\n    print({p})", "if {n} > 99:\n    pass", "for {j} in range({n}):\n    pass",
    "try:\n    pass\nexcept ValueError:\n    print({p})",
]
_JUNK_IN_CLASS = ["{j} = {n}", "{j} = ({n}, {n})", "pass", "'a note'"]  # a class body's own junk


def _parameters(node):
    return [argument.arg for argument in ast.walk(node.args)
            if isinstance(argument, ast.arg)] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []


def _blocks(tree):
    """[(block, owner, parameters in scope, in a class body)] of every statement list inside the functions."""
    found = []

    def walk(node, parameters, in_class):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                found.append((block, node, parameters, in_class and name == "body"))
                for statement in block:
                    walk(statement, parameters + _parameters(statement), isinstance(statement, ast.ClassDef))
        for handler in getattr(node, "handlers", ()):
            walk(handler, parameters, False)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            walk(node, _parameters(node), isinstance(node, ast.ClassDef))
    return found


@st.composite
def padded_copies(draw):
    """A disguised copy of one honest student's functions (renamed, reformatted, reordered), then junk added:
    statements without effect anywhere in the functions, code after a return, and unused top-level helpers."""
    victim, copy = draw(copies())
    tree = ast.parse(copy)
    taken = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    taken |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    taken |= {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    taken |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    taken |= set(dir(builtins)) | {"math", "torch", "nn", "os", "collections", "pi"}
    fresh = _JUNK_NAME.filter(lambda name: name not in taken)
    blocks = _blocks(tree)
    for _ in range(draw(st.integers(1, 25))):
        block, _, parameters, in_class = draw(st.sampled_from(blocks))
        template = draw(st.sampled_from(_JUNK_IN_CLASS if in_class else _JUNK))
        j, k = draw(st.lists(fresh, min_size=2, max_size=2, unique=True))
        junk = template.format(j=j, k=k, n=draw(st.integers(0, 9)),
                               p=draw(st.sampled_from(parameters)) if parameters else "None")
        at = draw(st.integers(0, len(block)))
        block[at:at] = ast.parse(junk).body
    for block, _, parameters, in_class in blocks:  # code that never runs, after a function's return
        if not in_class and isinstance(block[-1], (ast.Return, ast.Raise)) and draw(st.booleans()):
            block.extend(ast.parse(f"print({parameters[0] if parameters else 1})\nreturn None").body)
    for _ in range(draw(st.integers(0, 3))):  # helpers nothing calls, among the top-level functions
        name = draw(fresh)
        body = draw(st.sampled_from(["return torch.arange(n).float() * 2", "print(n)\nreturn n.add_(1)",
                                     "x = torch.zeros(n, n)\nfor i in range(n):\n    x[i, i] = 1\nreturn x"]))
        helper = ast.parse(f"def {name}(n):\n" + "\n".join("    " + line for line in body.split("\n"))).body
        at = draw(st.integers(0, len(tree.body)))
        tree.body[at:at] = helper
    padded = ast.unparse(ast.fix_missing_locations(tree))
    compile(padded, "padded.py", "exec")  # still Python
    return victim, padded


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(padded_copies())
def test_a_copy_padded_with_statements_that_do_nothing_still_scores_as_a_copy(copied):
    victim, copy = copied
    with tempfile.TemporaryDirectory() as folder:
        report = similarity.similarity_report(UNIT, [write_class(folder, dict(HONEST, copier=copy))])
    assert_copy_ranks_first(report, victim)
    for task in TASKS:
        for row in rows_of(report, task):
            if pair_of(row) == {victim, "copier"}:
                assert row.containment >= COPIED_AT_LEAST, row


def test_a_copy_padded_with_a_helper_it_calls_ranks_first_by_containment(tmp_path):
    # A called helper is compared (it is code the task runs), so the copy's score falls; what it copied is all
    # still there, so its containment does not.
    helper = ("def _trace(*values):\n    shown = [tuple(getattr(v, 'shape', ())) for v in values]\n"
              "    for index, shape in enumerate(shown):\n        print('value', index, 'has shape', shape)\n"
              "    return len(shown)\n\n\n")
    copy = ast.parse(plain_copy(HONEST["student0"]))
    for node in ast.walk(copy):
        if isinstance(node, ast.FunctionDef) and node.body and node.name != "__init__":
            node.body.insert(0, ast.parse(f"_trace({', '.join(_parameters(node)) or 'None'})").body[0])
    students = dict(HONEST, copier=helper + ast.unparse(ast.fix_missing_locations(copy)))
    report = similarity.similarity_report(UNIT, [write_class(tmp_path, students)])
    lowered = 0
    for task in TASKS:
        if "student0" in dict(report.not_compared[task]):
            continue
        first = rows_of(report, task)[0]
        assert pair_of(first) == {"student0", "copier"} and first.containment >= COPIED_AT_LEAST, (task, first)
        lowered += first.score < first.containment
    assert lowered, "the helper added nothing to compare: the test does not show what it means to"


def test_a_helper_the_task_calls_is_compared_under_any_name():
    unit = units.get("rotary_alibi")
    victim = honest_class(unit)["reference"] + "\n\n" + (
        SUBMISSIONS / "blind" / "rotary_alibi" / "alternatives" / "apply_rotary__hf_rotate_half.py").read_text()
    assert "def _rotate(" in victim and "_rotate(" in ast.unparse(last_definitions(victim, ("apply_rotary",))[
        "apply_rotary"])
    copy = victim.replace("_rotate", "turn_a_quarter")
    code = {name: similarity.fingerprint_submission(unit, _loaded(f"{name}.py", text)).tasks["apply_rotary"]
            for name, text in (("victim", victim), ("copy", copy))}
    assert [shown.name for shown in code["victim"].functions] == ["apply_rotary", "_rotate"]
    assert [shown.name for shown in code["copy"].functions] == ["apply_rotary", "turn_a_quarter"]
    assert code["victim"].hashes == code["copy"].hashes
    without = similarity.fingerprint_submission(unit, _loaded("x.py", victim.replace(
        "def _rotate(", "def _unused(")))  # apply_rotary calls a _rotate the file no longer defines
    assert len(without.tasks["apply_rotary"].functions) == 1


# What the analysis keeps: statements with an effect, whatever they look like.

def _dropped(text):
    """The function in ``text`` with no-effect statements dropped, as code (names as written: no renaming)."""
    tree = similarity._Tidy().visit(ast.parse(text).body[0])
    return ast.unparse(similarity.drop_no_effect(tree))


@pytest.mark.parametrize("kept", [
    "x.add_(1)", "x[0] = 1", "x.a = 1", "print(x)", "y = x[0]\n    y += 1", "y = x\n    y *= 2", "x += 1",
    "global G\n    G = 1", "torch.manual_seed(0)", "assert x", "raise ValueError", "yield x",
    "y = yield x\n    print(y)", "with torch.no_grad():\n        x.mul_(2)", "for i in range(2):\n        x.add_(i)",
    "del x[0]", "for x[0] in range(2):\n        pass",
])
def test_a_statement_with_an_effect_is_kept(kept):
    text = f"def f(x):\n    {kept}\n"
    assert _dropped(text) == ast.unparse(ast.parse(text))


@pytest.mark.parametrize("text, becomes", [
    ("def f(x):\n    _ = x.add_(1)\n    return x", "def f(x):\n    x.add_(1)\n    return x"),
    ("def f(x):\n    a = 1\n    b = a + 1\n    c = b * 2\n    return x", "def f(x):\n    return x"),
    ("def f(x):\n    a = 0\n    a = a + 1\n    return x", "def f(x):\n    return x"),
    ("def f(x):\n    if True:\n        return x\n    return 0", "def f(x):\n    return x"),
    ("def f(x):\n    def g():\n        return h()\n    def h():\n        return 1\n    return x",
     "def f(x):\n    return x"),
    ("def f(x):\n    t = locals()\n    a = 1\n    return t", "def f(x):\n    t = locals()\n    a = 1\n    return t"),
    ("class C:\n    k = 1\n    j = 2\n    def m(self):\n        return self.k",
     "class C:\n    k = 1\n\n    def m(self):\n        return self.k"),
])
def test_what_the_analysis_drops_and_what_it_keeps(text, becomes):
    assert _dropped(text) == becomes


_VARIABLES = ("a", "b", "c", "_pad")
_LEAF = st.sampled_from(_VARIABLES + ("0", "1", "2", "len(t)", "t[0]"))
_EXPRESSION = st.recursive(_LEAF, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(lambda parts: "({} {} {})".format(*parts)),
    inner.map(lambda x: f"record({x})"), inner.map(lambda x: f"-{x}"),
    st.tuples(inner, inner).map(lambda pair: f"min({pair[0]}, {pair[1]})")), max_leaves=4)


def _statements(depth):
    simple = st.one_of(
        st.tuples(st.sampled_from(_VARIABLES), _EXPRESSION).map(lambda s: [f"{s[0]} = {s[1]}"]),
        st.tuples(st.sampled_from(_VARIABLES), _EXPRESSION).map(lambda s: [f"{s[0]} += {s[1]}"]),
        _EXPRESSION.map(lambda e: [e]), st.just(["pass"]), st.just(["import os"]),
        _EXPRESSION.map(lambda e: [f"t[0] = {e}"]), _EXPRESSION.map(lambda e: [f"t.append({e})"]),
        _EXPRESSION.map(lambda e: ["alias = t", f"alias += [{e}]"]),
        _EXPRESSION.map(lambda e: [f"fresh = [{e}]", f"fresh += [{e}]"]),
        _EXPRESSION.map(lambda e: ["def g():", f"    return {e}"]),
        _EXPRESSION.map(lambda e: [f"return {e}"]))
    if depth == 0:
        return simple
    block = st.lists(_statements(depth - 1), min_size=1, max_size=3).map(
        lambda parts: ["    " + line for part in parts for line in part])
    return st.one_of(
        simple,
        st.tuples(_EXPRESSION, block, block).map(lambda s: [f"if {s[0]} > 1:", *s[1], "else:", *s[2]]),
        block.map(lambda body: ["for i in range(2):", *body]),
        st.tuples(st.sampled_from(["True", "False", "0"]), block).map(lambda s: [f"if {s[0]}:", *s[1]]))


def _run(text):
    """What the function f in ``text`` returns, leaves in its list argument, and records; or the exception."""
    namespace, log, given = {}, [], [1, 2]

    def record(value):
        log.append(value)
        return value

    exec(compile(text, "generated.py", "exec"), namespace)  # the test's own generated code, not a student's
    try:
        return namespace["f"](given, record), given, log
    except Exception as error:  # noqa: BLE001
        return type(error).__name__


@settings(max_examples=300, deadline=None)
@given(st.lists(_statements(2), max_size=8), st.sampled_from(_VARIABLES))
def test_dropping_what_has_no_effect_never_changes_what_a_function_does(statements, returned):
    """Generated functions, run before and after: the same result, the same list, the same calls in the same order
    (where the original raises, an expression the analysis takes for pure may be what raised: not compared)."""
    lines = ["def f(t, record):", "    a, b, c, _pad = 1, 2, 3, 0"]
    lines += ["    " + line for statement in statements for line in statement] + [f"    return {returned}"]
    text = "\n".join(lines) + "\n"
    before = _run(text)
    tree, _ = similarity.normalise(ast.parse(text).body[0])  # renamed too: the parameters, the locals
    after = _run(ast.unparse(tree))
    if not isinstance(before, str):
        assert after == before, ast.unparse(tree)


# Given code and the class's common code.

def test_the_given_code_of_a_unit_is_no_ones_fingerprint():
    unit = units.get("long_context")
    given = similarity.stub_kgrams(unit)
    # A student who pastes the given rotation's body into scaled_rope_scores, instead of calling apply_rotary.
    stub = make_stub(unit.reference_path.read_text(encoding="utf-8"), unit)
    apply_rotary = next(node for node in ast.parse(stub).body if getattr(node, "name", "") == "apply_rotary")
    body = "\n".join("    " + line for statement in apply_rotary.body[1:]
                     for line in ast.unparse(statement).split("\n"))
    pasted = stub + "\n\ndef scaled_rope_scores(x, positions, base=10000.0, *, interleaved=True):\n" + body + "\n"
    code = similarity.fingerprint_submission(unit, _loaded("pasted.py", pasted)).tasks["scaled_rope_scores"]
    assert len(code.tokens) > 100  # the pasted code is there, and is the student's as far as the stream goes
    assert not code.hashes and code.why_not == "has the stub's code only"  # but every k-gram of it is the stub's
    own = pasted.replace("out = turned.flatten(-2)", "out = turned.flatten(-2) * 1.5 - 0.25 * turned.flatten(-2)")
    code = similarity.fingerprint_submission(unit, _loaded("own.py", own)).tasks["scaled_rope_scores"]
    assert code.hashes and not code.hashes & given  # a line of its own: fingerprints, none of them the stub's


def test_common_fingerprints_are_those_more_than_half_hold_in_a_class_large_enough():
    sets = [{1, 2, 3}, {1, 2}, {1, 2}, {1, 4}, {5}, {6}]  # 1 in 4 of 6, 2 in 3 of 6 (half, not more)
    assert similarity.common_fingerprints(sets) == {1}
    assert similarity.common_fingerprints(sets[:5]) == frozenset()  # 5 submissions: too few to tell
    assert similarity.common_fingerprints(sets[:5], min_class=5) == {1, 2}  # 3 of 5 is more than half


COMMON_LINES = '''    if not isinstance(num_positions, int) or not isinstance(d_model, int):
        raise TypeError(f"num_positions and d_model must be ints, got {num_positions!r} and {d_model!r}")
    if d_model <= 0 or d_model % 2 != 0:
        raise ValueError(f"d_model must be a positive even number, got {d_model}")
'''


def test_code_most_of_the_class_writes_does_not_make_two_honest_students_alike(tmp_path):
    """Every student writes the same checks first (as a lesson may teach them): without the class-wide filter
    they are most of what two honest solutions share; with it, they count for nothing."""
    unit = UNIT
    honest = honest_class(unit, ALL_ALTERNATIVES[unit.name])
    students = {}
    for name, text in honest.items():
        node = last_definitions(text)["sinusoidal_table"]
        first = node.body[0]
        lines = text.split("\n")
        at = first.lineno - 1 if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)) \
            else first.end_lineno
        students[name] = "\n".join(lines[:at] + COMMON_LINES.rstrip("\n").split("\n") + lines[at:])
        compile(students[name], name, "exec")
    writers = [name for name in students if "sinusoidal_table" in students[name]]
    assert len(writers) >= similarity.COMMON_MIN_CLASS
    folder = write_class(tmp_path / "class", students)
    kept = similarity.similarity_report(unit, [folder], keep_common=True)
    filtered = similarity.similarity_report(unit, [folder])
    assert filtered.common["sinusoidal"] and not kept.common["sinusoidal"]
    alike_kept = max(row.containment for row in rows_of(kept, "sinusoidal"))
    alike_filtered = max(row.containment for row in rows_of(filtered, "sinusoidal"))
    assert alike_kept >= 0.5  # the checks alone make some pair look half alike
    assert alike_filtered < 0.45, rows_of(filtered, "sinusoidal")[:3]  # as alike as the honest class without them
    # and a copy in that class still stands out
    students["copier"] = plain_copy(students["student1"])
    report = similarity.similarity_report(unit, [write_class(tmp_path / "with_copy", students)])
    first = rows_of(report, "sinusoidal")[0]
    assert pair_of(first) == {"student1", "copier"} and first.score >= COPIED_AT_LEAST


@pytest.mark.parametrize("unit_name", sorted(ALL_ALTERNATIVES))
@pytest.mark.parametrize("keep_common", [False, True])
def test_honest_alternatives_stay_below_the_copy_bound_in_every_unit(tmp_path, unit_name, keep_common):
    unit = units.get(unit_name)
    honest = honest_class(unit, ALL_ALTERNATIVES[unit_name])
    report = similarity.similarity_report(unit, [write_class(tmp_path, honest)], keep_common=keep_common)
    assert len(report) > 20
    for row in report:
        assert row.score < COPIED_AT_LEAST and row.containment < COPIED_AT_LEAST, row


def test_a_pair_ranks_by_containment_and_a_few_shared_runs_rank_low():
    rows = [similarity.Pair("shaw", "small", "big", 0.2, 2, 1.0),  # 2 shared runs: counts as 2/5 contained
            similarity.Pair("shaw", "x", "y", 0.5, 30, 0.8),
            similarity.Pair("shaw", "x", "padded", 0.45, 40, 0.95)]  # a copy padded: lower score, contained
    assert [(row.name_a, row.name_b) for row in similarity.overall_ranking(rows)] == [
        ("x", "padded"), ("x", "y"), ("small", "big")]


def test_every_statement_form_is_analysed_without_fault():
    """match, async, except*, := , nonlocal, global, while-else, annotations: each read, none a fault."""
    text = '''import torch


def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
    match d_model:
        case 0 | 1:
            raise ValueError("too small")
        case {"a": 1, **rest}:
            unused = rest
        case [first, *others]:
            pass
    if (n := num_positions) < 0:
        raise ValueError
    async def never_called():
        await something()
    try:
        x = 1
    except* ValueError as error:
        pass
    count = 0
    def bump():
        nonlocal count
        count += 1
    bump()
    global SEEN
    SEEN = count
    while False:
        pass
    else:
        y = 2
    z: float = 3.0
    return torch.zeros(n, d_model)
'''
    code = similarity.fingerprint_submission(UNIT, _loaded("odd.py", text)).tasks["sinusoidal"]
    assert not code.why_not and code.hashes
    assert "await" not in code.tokens and "something" not in code.tokens  # the inner def nothing calls: dropped
    assert {"nonlocal", "global", "SEEN", "match", "case"} <= set(code.tokens)  # what has an effect: kept
