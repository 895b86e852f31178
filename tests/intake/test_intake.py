"""What a student hands in is read as data: regular files only, nothing followed, every notebook validated.

Invariants 1 and 2 of docs/threat-model.md, on the reading side (autograder/intake/load.py):
generated folders full of links, pipes, sockets, devices, hard links, huge and
deep entries; generated and mutated notebooks; the files every editor saves. The
answer is always the honest chunks or a LoadError that names what was refused:
never another exception, never a wait, never a byte from outside the submission.
"""

import codecs
import contextlib
import copy
import importlib.util
import json
import os
import random
import re
import signal
import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.ways_in import gradescope, platform
from autograder.intake import load as intake
from autograder.course.build import ROOT
from autograder.intake.load import LoadError, fingerprint, shown_name
from conftest import REFERENCE, STUDENT_DIR, UNIT


def load(path):
    """The grader's load, as it reads a submission of the first unit (its file names preferred in a folder)."""
    return intake.load(path, UNIT.file_names)


def expand(paths):
    return intake.expand(paths, UNIT.file_names)

COURSE_NOTEBOOK = ROOT / "assignments" / "source" / "positional_encodings" / "positional_encodings.ipynb"
STUDENT_LOADER = STUDENT_DIR / "notebook_loader.py"
HOST_FILE = Path("/etc/hostname") if Path("/etc/hostname").is_file() else Path("/etc/passwd")
SECRET = "SECRET-FROM-OUTSIDE-THE-SUBMISSION"  # in every file outside the submission that a test links to
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# Helpers: a time limit, and a record of what load.py opens.

@contextlib.contextmanager
def finishes_within(seconds):
    """Fail (instead of hanging the suite) if the body has not returned after ``seconds``: a blocked open ends."""
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s: something blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_opened = None  # a list while a test records what is opened; audit hooks cannot be removed, so one for all


def _audit(event, args):
    if _opened is not None and event == "open":
        _opened.append(args)


sys.addaudithook(_audit)


@contextlib.contextmanager
def recording_opens():
    global _opened
    _opened = []
    try:
        yield _opened
    finally:
        _opened = None


def assert_nothing_opened_by_following(opens, root):
    """Every open of a path in the submission (or of a name relative to one of its folders) refused links."""
    for path, _mode, flags in opens:
        if isinstance(path, int):
            continue
        path = os.fsdecode(path)
        if os.path.isabs(path) and not path.startswith(str(root)):
            continue  # the grader's own files (nbformat's schema)
        assert isinstance(flags, int) and flags & os.O_NOFOLLOW, f"opened {path!r} without O_NOFOLLOW"


def make_socket(path):
    """A Unix socket file at ``path`` (bound at a short name first: socket paths are limited to 108 bytes)."""
    short = tempfile.mktemp(prefix="s", dir="/tmp")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(short)
    finally:
        server.close()
    os.replace(short, path)


def _can_mknod():
    with tempfile.TemporaryDirectory() as folder:
        try:
            os.mknod(os.path.join(folder, "null"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
            return True
        except (PermissionError, AttributeError, OSError):
            return False


CAN_MKNOD = _can_mknod()


# Generated folders.

NAME_CHARACTERS = st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",))
names = st.text(NAME_CHARACTERS, min_size=1, max_size=12).filter(
    lambda name: name not in (".", "..", "sub") and len(name.encode()) <= 200
    and name.lower() not in [n.lower() for n in UNIT.file_names])
ODD_NAMES = ["new\nline", "esc\x1b[31mred", "tab\there", "back\\slash", "bell\x07", "ünïcødé", " spaced ",
             "quote\"d", "percent%s", "\u2028sep"]
any_name = st.one_of(names, st.sampled_from(ODD_NAMES))

# What an entry can be, and what the grader must say about it (None: a harmless entry).
KINDS = {
    "file": None,
    "folder": None,
    "hard link inside": None,  # a second name of the honest file, inside the submission
    "symlink to the reference": "symbolic link",
    "symlink to a host file": "symbolic link",
    "symlink to a folder": "symbolic link",
    "dangling symlink": "symbolic link",
    "looping symlink": "symbolic link",
    "hard link to a file outside": "hard link",
    "fifo": "named pipe",
    "socket": "socket",
    "character device": "character device",
    "block device": "block device",
    "huge sparse file": "more than",
    "deep folders": "nested more than",
}
if not CAN_MKNOD:
    KINDS = {kind: said for kind, said in KINDS.items() if "device" not in kind}

entries = st.lists(st.tuples(st.sampled_from(sorted(KINDS)), any_name, st.booleans(), st.booleans()),
                   max_size=6)


def build_tree(base, honest_at, honest_text, extras, replace_honest_by=None):
    """Write a student's folder under ``base``; returns (folder, offences: [(shown name, what must be said)])."""
    folder, outside = base / "student", base / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "secret.py").write_text(f"print({SECRET!r})\n")
    (outside / "reference.py").write_text(REFERENCE.read_text() + f"\n# {SECRET}\n")
    honest = folder.joinpath(*honest_at)
    honest.parent.mkdir(parents=True, exist_ok=True)
    offences = []
    if replace_honest_by is None:
        honest.write_text(honest_text)
    else:
        make_entry(honest, replace_honest_by, outside, honest)
        offences.append((shown_name(honest_at), KINDS[replace_honest_by]))
    used = {(honest_at[0],)}
    hidden_link, visible_links = False, []
    for kind, name, hidden, nested in extras:
        parts = ("sub",) * nested + (("." + name) if hidden else name,)
        if parts in used:
            continue
        used.add(parts)
        if nested:
            (folder / "sub").mkdir(exist_ok=True)
        if kind == "hard link inside" and replace_honest_by is not None:
            kind = "file"
        make_entry(folder.joinpath(*parts), kind, outside, honest)
        if KINDS[kind] and not hidden:  # a hidden entry is never entered, so never an offence
            offences.append((shown_name(parts), KINDS[kind]))
        elif kind == "hard link inside" and hidden:  # the honest file then has a name the grader does not see
            hidden_link = True
        elif kind == "hard link inside":
            visible_links.append(parts)
    if hidden_link:  # whichever of the honest file's visible names the walk meets first is the one to name
        offences += [(shown_name(parts), "hard link") for parts in [honest_at, *visible_links]]
    return folder, offences


def make_entry(path, kind, outside, honest):
    if kind == "file":
        path.write_bytes(os.urandom(64))
    elif kind == "folder":
        path.mkdir()
        (path / "notes.txt").write_text("mine\n")
    elif kind == "hard link inside":
        os.link(honest, path)
    elif kind == "symlink to the reference":
        os.symlink(REFERENCE, path)
    elif kind == "symlink to a host file":
        os.symlink(HOST_FILE, path)
    elif kind == "symlink to a folder":
        os.symlink(REFERENCE.parent, path)
    elif kind == "dangling symlink":
        os.symlink("/nonexistent/nowhere", path)
    elif kind == "looping symlink":
        os.symlink(path.name, path)
    elif kind == "hard link to a file outside":
        os.link(outside / "reference.py", path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        make_socket(path)
    elif kind == "character device":
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    elif kind == "block device":
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    elif kind == "huge sparse file":
        with open(path, "wb") as file:
            file.truncate(100 * 1024**3)
    elif kind == "deep folders":
        deep = path
        for _ in range(intake.MAX_DEPTH + 2):
            deep = deep / "d"
        deep.mkdir(parents=True)
        (deep / "positional_encodings.ipynb").write_text("{}")
    else:
        raise AssertionError(kind)


def assert_refused_naming_an_offence(error, offences):
    message = str(error)
    assert "\n" not in message and "\x1b" not in message, f"the message is not one safe line: {message!r}"
    assert any(said in message and (said in ("more than", "nested more than") or shown in message)
               for shown, said in offences), f"{message!r} names none of {offences}"


@FAST
@given(honest_at=st.sampled_from([("positional_encodings.py",), ("positional_encodings", "positional_encodings.py")]),
       value=st.text(max_size=30), extras=entries,
       replace_honest_by=st.one_of(st.none(), st.sampled_from([k for k, said in KINDS.items() if said
                                                                and k not in ("deep folders",)])))
def test_a_generated_folder_loads_honestly_or_is_refused_naming_the_entry(honest_at, value, extras,
                                                                         replace_honest_by):
    honest_text = f"answer = {value!r}\n"
    with tempfile.TemporaryDirectory() as base:
        folder, offences = build_tree(Path(base), honest_at, honest_text, extras, replace_honest_by)
        with finishes_within(20), recording_opens() as opens:
            try:
                submission = load(folder)
            except LoadError as error:
                assert offences, f"refused a harmless folder: {error}"
                assert_refused_naming_an_offence(error, offences)
            else:
                assert not offences, f"loaded a folder holding {offences}"
                assert submission.chunks == [{"label": "positional_encodings.py", "source": honest_text}]
                assert submission.path == folder.joinpath(*honest_at)
            digest = fingerprint(folder)
        assert_nothing_opened_by_following(opens, folder)
        assert re.fullmatch(r"[0-9a-f]{64}", digest)
        if not offences:
            twin = Path(base) / "twin"
            twin.mkdir()
            (twin / "student").mkdir()
            twin_folder = twin / "student"
            twin_folder.joinpath(*honest_at).parent.mkdir(parents=True, exist_ok=True)
            twin_folder.joinpath(*honest_at).write_text(honest_text + "# changed\n")
            assert fingerprint(twin_folder) != digest


@pytest.mark.parametrize("kind", [kind for kind, said in KINDS.items() if said and kind != "deep folders"])
def test_a_submission_named_as_one_file_is_refused_unless_regular(tmp_path, kind):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "reference.py").write_text(REFERENCE.read_text())
    path = tmp_path / "alice.py"
    make_entry(path, kind, outside, None)
    assert expand([path]) == [path]  # named on the command line: a row of its own, whatever it is
    with finishes_within(10):
        with pytest.raises(LoadError, match=re.escape(KINDS[kind])) as refused:
            load(path)
        assert fingerprint(path) != fingerprint(outside / "reference.py")
    assert str(refused.value).startswith("alice.py is ")


def test_a_fifo_never_blocks_whether_named_or_in_a_folder(tmp_path):
    os.mkfifo(tmp_path / "alone.py")
    (tmp_path / "student").mkdir()
    os.mkfifo(tmp_path / "student" / "positional_encodings.py")
    with finishes_within(5):
        for path in (tmp_path / "alone.py", tmp_path / "student"):
            with pytest.raises(LoadError, match="named pipe"):
                load(path)
            fingerprint(path)
        with pytest.raises(LoadError, match="named pipe"):
            intake._read_regular(os.fspath(tmp_path / "alone.py"), "alone.py")  # opened: O_NONBLOCK, then fstat


def test_a_symlink_to_the_reference_no_longer_scores_100(tmp_path):
    """The regression: a folder whose positional_encodings.py links to the kit's reference scored 100/100."""
    from autograder.core.grade import Grader

    folder = tmp_path / "mallory"
    folder.mkdir()
    os.symlink(REFERENCE, folder / "positional_encodings.py")
    grader = Grader(UNIT, sandbox="auto", timing_mode="withhold")
    try:
        result = grader.grade(folder)
    finally:
        grader.close()
    assert result.score == 0
    assert all(test.score == 0 and "symbolic link" in test.output for test in result.tests)
    assert "def sinusoidal_table" not in json.dumps(result.to_gradescope())


def test_a_symlink_to_a_host_file_puts_nothing_of_it_in_the_feedback(tmp_path):
    folder = tmp_path / "mallory"
    folder.mkdir()
    os.symlink(HOST_FILE, folder / "positional_encodings.py")
    with pytest.raises(LoadError, match="symbolic link") as refused:
        load(folder)
    first_line = HOST_FILE.read_text().splitlines()[0].strip()
    assert first_line and first_line not in str(refused.value).replace("positional_encodings.py", "")


def test_gradescope_refuses_a_symlinked_upload_without_following_it(tmp_path, monkeypatch):
    submission = tmp_path / "submission"
    (submission / "work").mkdir(parents=True)
    os.symlink(REFERENCE, submission / "work" / "positional_encodings.py")
    path, refusal = platform._find_file(submission, UNIT)
    assert path is None and refusal.score == 0
    assert "work/positional_encodings.py is a symbolic link" in refusal.notes[0]
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    os.symlink(REFERENCE, root / "submission" / "positional_encodings.py")
    monkeypatch.setenv(gradescope.UNIT_VARIABLE, UNIT.name)  # as run_autograder sets it
    assert gradescope.run(root) == 0
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "symbolic link" in results["output"]


def test_gradescope_lists_an_honest_upload_as_before(tmp_path):
    submission = tmp_path / "submission"
    (submission / "nested").mkdir(parents=True)
    (submission / "nested" / "positional_encodings.py").write_text("x = 1\n")
    (submission / ".hidden").write_text("")
    path, refusal = platform._find_file(submission, UNIT)
    assert refusal is None and path == submission / "nested" / "positional_encodings.py"


@pytest.mark.parametrize("swap", ["symlink", "fifo", "another file", "folder for a link"])
def test_an_entry_swapped_after_the_walk_is_refused_when_read(tmp_path, monkeypatch, swap):
    folder = tmp_path / "student"
    (folder / "work").mkdir(parents=True)
    target = folder / "work" / "positional_encodings.py"
    target.write_text("x = 1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "positional_encodings.py").write_text(REFERENCE.read_text())
    chosen = intake._Folder.submission_file

    def swap_then_choose(self, *preferred):
        file = chosen(self, *preferred)
        staged = tmp_path / "staged"
        if swap == "symlink":
            os.symlink(REFERENCE, staged)
            os.replace(staged, target)
        elif swap == "fifo":
            os.mkfifo(staged)
            os.replace(staged, target)
        elif swap == "another file":
            staged.write_text(REFERENCE.read_text())
            os.replace(staged, target)
        else:
            os.rename(folder / "work", tmp_path / "moved")
            os.symlink(elsewhere, folder / "work")
        return file

    monkeypatch.setattr(intake._Folder, "submission_file", swap_then_choose)
    with finishes_within(5), pytest.raises(LoadError, match="symbolic link|named pipe|changed while"):
        load(folder)


def test_hard_links_count_names_inside_the_submission(tmp_path):
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "positional_encodings.py").write_text("x = 1\n")
    os.link(folder / "positional_encodings.py", folder / "backup.txt")
    assert load(folder).chunks[0]["source"] == "x = 1\n"  # two names, both inside: one file
    os.link(folder / "positional_encodings.py", tmp_path / "outside.py")
    with pytest.raises(LoadError, match="hard link: the same file has 1 other name outside your submission"):
        load(folder)


def sparse(path, size):
    with open(path, "wb") as file:
        file.truncate(size)


def test_the_limits_are_checked_before_anything_is_read(tmp_path, monkeypatch):
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "positional_encodings.py").write_text("x = 1\n")
    for index in range(30):
        (folder / f"data{index}.txt").write_text("")
    monkeypatch.setattr(intake, "MAX_ENTRIES", 20)
    with pytest.raises(LoadError, match="student/ holds more than 20 files and folders"):
        load(folder)
    monkeypatch.undo()
    sparse(folder / "data0.txt", 40 * 1024**2)
    sparse(folder / "data1.txt", 40 * 1024**2)
    with pytest.raises(LoadError, match="student/ holds 80.0 MB of files, more than the 64.0 MB"):
        load(folder)
    sparse(tmp_path / "huge.py", 2**40)  # a terabyte: read, it would take hours
    sparse(tmp_path / "huge.ipynb", intake.MAX_FILE_BYTES + 1)
    started = time.perf_counter()
    with pytest.raises(LoadError, match="huge.py is 1.0 TB, more than the 32.0 MB a submitted file may be"):
        load(tmp_path / "huge.py")
    with pytest.raises(LoadError, match="clear its outputs"):
        load(tmp_path / "huge.ipynb")
    assert time.perf_counter() - started < 1


def test_expand_gives_a_link_in_a_class_folder_its_own_row(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "positional_encodings.py").write_text("x = 1\n")
    os.symlink(tmp_path / "alice", tmp_path / "bob")
    os.symlink(REFERENCE, tmp_path / "carol.py")
    os.mkfifo(tmp_path / "dave.ipynb")
    (tmp_path / "README.txt").write_text("")
    assert [path.name for path in expand([tmp_path])] == ["alice", "bob", "carol.py", "dave.ipynb"]
    os.symlink(REFERENCE, tmp_path / "alice" / "extra.py")
    assert expand([tmp_path / "alice"]) == [tmp_path / "alice"]
    with pytest.raises(LoadError, match="extra.py is a symbolic link"):
        load(tmp_path / "alice")
    with pytest.raises(LoadError, match="bob is a symbolic link"):
        load(tmp_path / "bob")


def test_fingerprint_never_raises_and_tells_a_link_from_a_copy(tmp_path):
    linked, copied = tmp_path / "linked", tmp_path / "copied"
    linked.mkdir()
    copied.mkdir()
    os.symlink(REFERENCE, linked / "positional_encodings.py")
    (copied / "positional_encodings.py").write_bytes(REFERENCE.read_bytes())
    assert fingerprint(linked) != fingerprint(copied)
    assert fingerprint(copied) == fingerprint(copied)
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint(tmp_path / "missing"))
    assert fingerprint(tmp_path / "missing") != fingerprint(linked)
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "new\nline.py").write_text("x = 1\n")
    assert re.fullmatch(r"[0-9a-f]{64}", fingerprint(odd))


# Notebooks: generated, mutated, and as editors save them.

def course_notebook():
    return json.loads(COURSE_NOTEBOOK.read_text(encoding="utf-8"))


def chunks_of(notebook_or_bytes, name="positional_encodings.ipynb"):
    data = notebook_or_bytes if isinstance(notebook_or_bytes, bytes) else json.dumps(notebook_or_bytes).encode()
    return intake._notebook_chunks(data, name)


def chunks_as_before(notebook, name="positional_encodings.ipynb"):
    """The chunks of the loader before this intake (json, then the cells): the oracle for valid notebooks."""
    chunks = []
    code_cells = [cell for cell in notebook["cells"] if cell.get("cell_type") == "code"]
    for number, cell in enumerate(code_cells, start=1):  # labels count code cells only (issue 34)
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        if (nbgrader.get("grade") or nbgrader.get("locked")) and not nbgrader.get("solution"):
            continue
        label = intake.cell_label(name, number, source)  # what a label says: test_cell_labels.py
        first = source.lstrip().split("\n", 1)[0]
        if first.startswith("%%"):
            if not first.startswith(("%%time", "%%capture")):
                continue
            # the magic's line left blank, so that the lines keep their numbers in the cell
            blank, rest = len(source) - len(source.lstrip("\n")), source.lstrip("\n")
            source = "\n" * (blank + 1) + rest.split("\n", 1)[1] if "\n" in rest else ""
        lines = [f"{line[: len(line) - len(line.lstrip())]}pass  # IPython line left out by the grader"
                 if intake._IPYTHON_LINE.search(line) else line for line in source.splitlines()]
        chunks.append({"label": label, "source": "\n".join(lines) + "\n"})
    return chunks


def test_the_course_notebook_loads_exactly_as_before():
    notebook = course_notebook()
    chunks, notes = chunks_of(COURSE_NOTEBOOK.read_bytes())
    assert chunks == chunks_as_before(notebook) and len(chunks) >= 7 and notes == []
    assert load(COURSE_NOTEBOOK).chunks == chunks


def released(notebook):
    """The notebook as nbgrader's release leaves it: solutions cleared, hidden tests gone, metadata kept."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        source = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "# YOUR CODE HERE\nraise NotImplementedError()",
                        source, flags=re.S)
        source = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", source, flags=re.S)
        cell["source"] = source.splitlines(keepends=True)
    return notebook


def test_the_released_notebook_loads_exactly_as_before():
    notebook = released(course_notebook())
    assert chunks_of(notebook)[0] == chunks_as_before(notebook)


# The ways editors save a valid notebook; any mix of them must give the chunks of the plain file.
def _no_ids(notebook):
    for cell in notebook["cells"]:
        cell.pop("id", None)


def _minor(minor):
    def change(notebook):
        notebook["nbformat_minor"] = minor
        if minor < 5:
            _no_ids(notebook)
    return change


def _sources_as_strings(notebook):
    for cell in notebook["cells"]:
        cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _sources_with(newline):
    def change(notebook):
        for cell in notebook["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = source.replace("\n", newline)
    return change


def _duplicate_ids(notebook):
    for cell in notebook["cells"]:
        if "id" in cell:
            cell["id"] = "same"


def _student_metadata(notebook):
    notebook["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for cell in notebook["cells"]:
        cell["metadata"].setdefault("tags", []).append("mine")
        cell["metadata"]["collapsed"] = False


NOTEBOOK_CHANGES = {
    "no ids": _no_ids, "minor 4": _minor(4), "minor 4 with ids": lambda nb: nb.update(nbformat_minor=4),
    "minor 5": _minor(5), "minor from the future": _minor(9), "sources as strings": _sources_as_strings,
    "duplicate ids": _duplicate_ids, "student metadata": _student_metadata,
}
FILE_CHANGES = {
    "BOM": lambda data: codecs.BOM_UTF8 + data,
    "CRLF line ends": lambda data: data.replace(b"\n", b"\r\n"),
    "indented": lambda data: json.dumps(json.loads(data), indent=4, ensure_ascii=False).encode(),
    "ASCII escapes": lambda data: json.dumps(json.loads(data), ensure_ascii=True).encode(),
}


@settings(max_examples=30, deadline=None)
@given(notebook_changes=st.lists(st.sampled_from(sorted(NOTEBOOK_CHANGES)), unique=True, max_size=4),
       newline=st.sampled_from(["\n", "\r\n", "\r"]),
       file_changes=st.lists(st.sampled_from(sorted(FILE_CHANGES)), unique=True, max_size=3))
def test_a_notebook_saved_by_any_editor_gives_the_chunks_of_the_plain_file(notebook_changes, newline, file_changes):
    notebook = course_notebook()
    plain, _ = chunks_of(notebook)
    for change in notebook_changes:
        NOTEBOOK_CHANGES[change](notebook)
    _sources_with(newline)(notebook)  # what a Windows or an old Mac editor leaves in the cells' text
    data = json.dumps(notebook, indent=1).encode()
    for change in file_changes:
        data = FILE_CHANGES[change](data)
    assert chunks_of(data)[0] == plain


@pytest.mark.parametrize("variant", ["plain", "BOM", "CRLF", "lone CR", "latin-1 cookie", "cp1252 cookie",
                                     "BOM and CRLF"])
def test_a_python_file_saved_by_any_editor_loads(tmp_path, variant):
    cookie = {"latin-1 cookie": "latin-1", "cp1252 cookie": "cp1252"}.get(variant)
    text = (f"# -*- coding: {cookie} -*-\n" if cookie else "") + 'greeting = "h\u00e9llo"\nanswer = 42\n'
    data = text.encode(cookie or "utf-8")
    if "BOM" in variant:
        data = codecs.BOM_UTF8 + data
    if "CRLF" in variant:
        data = data.replace(b"\n", b"\r\n")
    if variant == "lone CR":
        data = data.replace(b"\n", b"\r")
    path = tmp_path / "positional_encodings.py"
    path.write_bytes(data)
    [chunk] = load(path).chunks
    assert chunk["source"] == text
    namespace = {}
    exec(compile(chunk["source"], chunk["label"], "exec"), namespace)
    assert namespace["greeting"] == "h\u00e9llo" and namespace["answer"] == 42


@pytest.mark.parametrize("data, said", [
    (b"# -*- coding: klingon -*-\nx = 1\n", "klingon"),
    (b"# -*- coding: base64 -*-\nx = 1\n", "base64"),
    (codecs.BOM_UTF8 + b"# -*- coding: latin-1 -*-\nx = 1\n", "byte-order mark"),
    (b'x = "caf\xe9"\n', "not UTF-8"),
])
def test_a_python_file_that_cannot_be_decoded_is_refused_saying_why(tmp_path, data, said):
    path = tmp_path / "positional_encodings.py"
    path.write_bytes(data)
    with pytest.raises(LoadError, match=said):
        load(path)


def test_the_three_malformed_notebooks_of_the_issue_say_what_is_wrong():
    notebook = course_notebook()
    code = next(index for index, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code")
    cases = []
    broken = copy.deepcopy(notebook)
    broken["cells"][code]["metadata"] = []
    cases.append((broken, f"cell {code + 1}'s metadata is a list, not an object"))
    broken = copy.deepcopy(notebook)
    broken["cells"] = {"0": notebook["cells"][0]}
    cases.append((broken, "its cells are an object, not a list of cells"))
    broken = copy.deepcopy(notebook)
    broken["cells"][code]["source"] = 12
    cases.append((broken, f"cell {code + 1}'s source is a number, not text"))
    for broken, said in cases:
        with pytest.raises(LoadError, match=re.escape(said)) as refused:
            chunks_of(broken)
        assert str(refused.value).startswith("positional_encodings.ipynb is not valid nbformat 4: ")


def test_the_grader_checks_nbformats_schema_beyond_the_fields_it_uses():
    """Faults that the structural checks do not look for, nbformat's schema finds, naming the cell."""
    notebook = course_notebook()
    code = next(index for index, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code")
    broken = copy.deepcopy(notebook)
    broken["cells"][code]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": 5}]
    with pytest.raises(LoadError, match=rf"not valid nbformat 4: cell {code + 1}'s outputs\[0\]\.text is a number"):
        chunks_of(broken)
    broken = copy.deepcopy(notebook)
    broken["cells"][code]["executed"] = True
    with pytest.raises(LoadError, match=rf"cell {code + 1}: Additional properties are not allowed \('executed'"):
        chunks_of(broken)
    broken = copy.deepcopy(notebook)
    broken["metadata"]["kernelspec"] = {"name": "python3"}
    with pytest.raises(LoadError, match="the notebook's metadata.kernelspec: 'display_name' is a required property"):
        chunks_of(broken)
    assert intake.schema_in_use().startswith("nbformat ")


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)


def loads_or_refuses(data):
    try:
        chunks, notes = chunks_of(data)
    except LoadError as error:
        assert str(error) and "\n" not in str(error)
        return None
    assert all(isinstance(chunk["source"], str) for chunk in chunks) and all(isinstance(n, str) for n in notes)
    return chunks


@FAST
@given(JSON)
def test_any_json_is_a_notebook_or_a_load_error(value):
    loads_or_refuses(json.dumps(value).encode())


@FAST
@given(st.binary(max_size=200))
def test_any_bytes_are_a_notebook_or_a_load_error(data):
    loads_or_refuses(data)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, path + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, path + (index,))


SMALL_NOTEBOOK = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {
    "name": "python3", "display_name": "Python 3", "language": "python"}}, "cells": [
    {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Title\n", "text"]},
    {"cell_type": "code", "id": "c1", "metadata": {"nbgrader": {"solution": True, "grade": False, "locked": False,
                                                                "grade_id": "x", "schema_version": 3}},
     "execution_count": 1, "source": ["x = 1\n", "%time y = 2"],
     "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                 {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo=",
                                                                          "text/plain": ["<Figure>"]}}]},
    {"cell_type": "raw", "id": "r1", "metadata": {}, "source": ""},
]}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_valid_notebook_mutated_anywhere_is_a_notebook_or_a_load_error(data):
    notebook = copy.deepcopy(SMALL_NOTEBOOK)
    path = data.draw(st.sampled_from(list(_paths(notebook))))
    how = data.draw(st.sampled_from(["replace", "wrap in a list", "delete", "nest deep"]))
    if not path:
        notebook = [notebook] if how == "wrap in a list" else data.draw(JSON)
    else:
        parent = notebook
        for key in path[:-1]:
            parent = parent[key]
        if how == "delete":
            del parent[path[-1]]
        elif how == "wrap in a list":
            parent[path[-1]] = [parent[path[-1]]]
        elif how == "nest deep":
            for _ in range(data.draw(st.integers(1, 200))):
                parent[path[-1]] = {"x": parent[path[-1]]} if data.draw(st.booleans()) else [parent[path[-1]]]
        else:
            parent[path[-1]] = data.draw(JSON)
    with finishes_within(10):
        loads_or_refuses(json.dumps(notebook).encode())


@pytest.mark.parametrize("depth", [intake.MAX_JSON_DEPTH + 1, 1000, 100_000])
@pytest.mark.parametrize("where", ["top", "metadata", "cell metadata", "source", "unclosed"])
def test_deep_nesting_is_refused_before_parsing(depth, where):
    if where == "top":
        data = b"[" * depth + b"]" * depth
    elif where == "unclosed":
        data = b'{"cells": ' + b"[" * depth
    else:
        deep = "[" * depth + "1" + "]" * depth
        notebook = copy.deepcopy(SMALL_NOTEBOOK)
        holder = {"metadata": notebook["metadata"], "cell metadata": notebook["cells"][1]["metadata"],
                  "source": notebook["cells"][1]}[where]
        holder["deep" if where != "source" else "source"] = "DEEP"
        data = json.dumps(notebook).encode().replace(b'"DEEP"', deep.encode())
    with finishes_within(5), pytest.raises(LoadError, match="nests its JSON more than 64 levels"):
        chunks_of(data)


@pytest.mark.parametrize("cells, said", [(intake.MAX_CELLS + 1, "cells, more than the 5000"),
                                         (300_000, "more than 200000 JSON values")])
def test_huge_cell_counts_are_refused_before_validation(cells, said):
    notebook = dict(SMALL_NOTEBOOK, cells=[{"cell_type": "raw", "metadata": {}, "source": ""}] * cells)
    started = time.perf_counter()
    with finishes_within(20), pytest.raises(LoadError, match=said):
        chunks_of(json.dumps(notebook).encode())
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize("data", [
    b'"' + b'\\"' * 4_000_000, b"[" + b'"",' * 3_000_000 + b'""]', b"]" * 8_000_000, b"[" + b"0," * 4_000_000 + b"0]",
    b"[" + b"1" * 5000 + b"]",
], ids=["escaped quotes", "tiny strings", "closers", "numbers", "a 5000-digit number"])
def test_pathological_json_is_refused_quickly(data):
    started = time.perf_counter()
    with finishes_within(20), pytest.raises(LoadError):
        chunks_of(data)
    assert time.perf_counter() - started < 5


def test_validation_costs_a_small_fraction_of_a_grade(tmp_path):
    """A course notebook with a picture in every code cell: loading it (JSON, nbformat's schema, the structural
    checks) costs a small multiple of parsing its JSON alone, measured side by side in the same run (about 4.5x
    here, a few tens of ms, where grading takes about 0.4 s). A ratio, not a time: the machine's load moves both."""
    notebook = course_notebook()
    picture = codecs.encode(random.Random(0).randbytes(60_000), "base64").decode()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {
                "image/png": picture, "text/plain": ["<Figure size 640x480 with 1 Axes>"]}}]
    path = tmp_path / "positional_encodings.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    load(path)  # nbformat imported and its schema compiled once per process
    loading, parsing = [], []
    for _ in range(3):  # up to three rounds: a reading near the bound on a loaded machine is measured again
        for _ in range(7):  # interleaved, so that a busy moment slows both
            started = time.perf_counter()
            load(path)
            loading.append(time.perf_counter() - started)
            started = time.perf_counter()
            json.loads(path.read_bytes())
            parsing.append(time.perf_counter() - started)
        ratio = min(loading) / min(parsing)
        if ratio < 8:  # far from the bound: no second round needed
            break
    assert ratio < 12, (f"loading a {path.stat().st_size / 1e6:.1f} MB notebook took {min(loading):.3f} s, "
                        f"{ratio:.1f}x parsing its JSON ({min(parsing):.3f} s)")


# The student's copy (notebook_loader.py) works without nbformat, with the same structural checks.

@pytest.fixture()
def loader_without_nbformat(monkeypatch):
    """The student's notebook_loader.py, imported where nbformat is missing (it looks once, then remembers)."""
    assert intake.schema_in_use()  # the grader's copy has found nbformat before it is hidden from the other
    hidden = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "nbformat"}
    for name in hidden:
        del sys.modules[name]
    sys.modules["nbformat"] = None  # import nbformat now raises ImportError
    try:
        spec = importlib.util.spec_from_file_location("notebook_loader_without_nbformat", STUDENT_LOADER)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert module.schema_in_use() is None
    finally:
        sys.modules.update(hidden)
    return module


def test_the_students_loader_is_this_module(loader_without_nbformat):
    assert STUDENT_LOADER.read_text().split("\n", 1)[1] == (ROOT / "autograder" / "intake" / "load.py").read_text()


def test_the_students_loader_works_without_nbformat(loader_without_nbformat, tmp_path):
    assert loader_without_nbformat.schema_in_use() is None
    data = COURSE_NOTEBOOK.read_bytes()
    assert loader_without_nbformat._notebook_chunks(data, "n.ipynb") == intake._notebook_chunks(data, "n.ipynb")
    for broken, said in [({"cells": {}}, "nbformat"), (dict(SMALL_NOTEBOOK, cells=[{"cell_type": "code",
                         "metadata": [], "source": ""}]), "cell 1's metadata is a list")]:
        with pytest.raises(loader_without_nbformat.LoadError, match=said):
            loader_without_nbformat._notebook_chunks(json.dumps(broken).encode(), "n.ipynb")
    schema_only = copy.deepcopy(SMALL_NOTEBOOK)
    del schema_only["cells"][1]["outputs"][0]["name"]  # a fault only nbformat's schema sees
    assert loader_without_nbformat._notebook_chunks(json.dumps(schema_only).encode(), "n.ipynb")[0]
    with pytest.raises(LoadError, match="not valid nbformat 4: cell 2"):
        intake._notebook_chunks(json.dumps(schema_only).encode(), "n.ipynb")
    os.symlink(REFERENCE, tmp_path / "positional_encodings.py")
    with pytest.raises(loader_without_nbformat.LoadError, match="symbolic link"):
        loader_without_nbformat.load(tmp_path / "positional_encodings.py")


def test_a_lone_surrogate_in_a_cell_is_refused_naming_the_cell():
    notebook = copy.deepcopy(SMALL_NOTEBOOK)
    notebook["cells"][1]["source"] = ["x = '\ud800'\n"]  # json.dumps writes it as the escape \ud800
    with pytest.raises(LoadError, match=r"code cell 1, `x = '\\ud800'`, holds \\ud800, half of a character"):
        chunks_of(notebook)


def test_an_odd_file_name_is_escaped_in_labels_and_messages(tmp_path):
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "my\nwork\x1b[2J.py").write_text("x = 1\n")
    [chunk] = load(folder).chunks
    assert chunk["label"] == "my\\nwork\\x1b[2J.py" and chunk["source"] == "x = 1\n"
    os.mkfifo(folder / "pipe\nname")
    with pytest.raises(LoadError) as refused:
        load(folder)
    assert str(refused.value).startswith("pipe\\nname is a named pipe")
