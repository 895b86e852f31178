"""Read a submission into chunks of source text. Nothing is executed here.

A ``.py`` file is one chunk. A notebook is one chunk per code cell, run in
order by the worker, each on its own so that an error in one cell does not hide
the functions defined in the others. IPython-only lines (``%magic``,
``!shell``, ``x = !cmd``, ``name?``) become ``pass`` so that line numbers in
messages still match the notebook; cells run by a cell magic other than
``%%time``/``%%capture`` are skipped, and so are nbgrader's test cells and
read-only cells (the course's checks, demonstrations and pictures).
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".py", ".ipynb")
PREFERRED_NAMES = ("positional_encodings.py", "positional_encodings.ipynb")
ASSIGNMENT_FILES = ("checks.py", "conftest.py", "notebook_loader.py")  # handed out with the assignment
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!]|[\w.,\s\[\]]+=\s*[%!]|[\w.]+\?{1,2}\s*$)")
_KEPT_CELL_MAGICS = ("%%time", "%%capture")


class LoadError(Exception):
    """The submission could not be read; the message says why, for the student."""


@dataclass
class Submission:
    name: str  # how the student is named in reports: the file or folder name
    path: Path
    chunks: list  # [{"label": str, "source": str}]
    skipped: list  # notes on what was left out (magics, shell lines)


def _python_lines(source):
    kept, skipped = [], 0
    for line in source.splitlines():
        if _IPYTHON_LINE.search(line):
            indent = line[: len(line) - len(line.lstrip())]
            kept.append(f"{indent}pass  # IPython line left out by the grader")
            skipped += 1
        else:
            kept.append(line)
    return "\n".join(kept) + "\n", skipped


def _notebook_chunks(path):
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise LoadError(f"{path.name} is not UTF-8 text ({error.reason}); is it really a notebook?") from None
    except json.JSONDecodeError as error:
        raise LoadError(
            f"{path.name} is not a valid notebook: its JSON breaks at line {error.lineno}, "
            f"column {error.colno} ({error.msg}). Re-save it from Jupyter, or upload the .ipynb unedited."
        ) from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise LoadError(f"{path.name} is not a notebook in nbformat 4: it has no list of cells.")
    chunks, notes, magic_lines = [], [], 0
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        nbgrader = (cell.get("metadata") or {}).get("nbgrader") or {}
        if isinstance(nbgrader, dict) and (nbgrader.get("grade") or nbgrader.get("locked")) \
                and not nbgrader.get("solution"):
            continue  # a test cell or a read-only demonstration: the course's cells, not the student's code
        first_line = source.lstrip().split("\n", 1)[0]
        if first_line.startswith("%%"):
            if not first_line.startswith(_KEPT_CELL_MAGICS):
                notes.append(f"cell {number} runs under {first_line.split()[0]} and was left out")
                continue
            source = source.split("\n", 1)[1] if "\n" in source else ""
        text, skipped = _python_lines(source)
        magic_lines += skipped
        chunks.append({"label": f"{path.name}, cell {number}", "source": text})
    if magic_lines:
        notes.append(f"{magic_lines} IPython line(s) (magics, shell commands) were left out")
    return chunks, notes


def submission_name(path):
    """How a submission is named in reports: a file by its stem, a student folder by its name."""
    path = Path(path)
    return path.stem if path.suffix in SUFFIXES else path.name


def load(path):
    """Read one submission (a file, or a folder holding one) into a Submission."""
    path = Path(path)
    name = submission_name(path)
    if path.is_dir():
        path = find_submission_file(path)
    if path.suffix == ".ipynb":
        chunks, notes = _notebook_chunks(path)
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as error:
            raise LoadError(f"{path.name} is not UTF-8 text ({error.reason}).") from None
        chunks, notes = [{"label": path.name, "source": text}], []
    return Submission(name=name, path=path, chunks=chunks, skipped=notes)


def find_submission_file(folder):
    """The file to grade in a student's folder: positional_encodings.py/.ipynb, else the only one there.

    The folder may nest it (nbgrader's ``submitted/STUDENT/ASSIGNMENT/``); the
    self-check files that come with the assignment are never the submission.
    """
    files = sorted(p for p in folder.rglob("*") if p.suffix in SUFFIXES and p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    for preferred in PREFERRED_NAMES:
        found = [p for p in files if p.name == preferred]
        if len(found) == 1:
            return found[0]
    candidates = [p for p in files if not p.name.startswith("test_") and p.name not in ASSIGNMENT_FILES]
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise LoadError(f"{folder.name}/ holds no .py or .ipynb file to grade.")
    names = ", ".join(str(p.relative_to(folder)) for p in candidates[:5])
    raise LoadError(f"{folder.name}/ holds several files that could be the submission ({names}); "
                    "name the one to grade positional_encodings.py or positional_encodings.ipynb.")


def expand(paths):
    """Turn command-line paths into submission paths: files as given; in a folder, each file and subfolder."""
    found = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {raw}")
        if path.is_file():
            found.append(path)
            continue
        if any((path / name).is_file() for name in PREFERRED_NAMES):
            found.append(path)  # a single student's folder
            continue
        entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
        found.extend(p for p in entries if p.is_dir() or p.suffix in SUFFIXES)
    return found
