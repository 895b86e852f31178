"""Read a submission into chunks of source text. Nothing is executed here, and nothing is followed.

A ``.py`` file is one chunk. A notebook is one chunk per code cell, run in
order by the worker, each on its own so that an error in one cell does not hide
the functions defined in the others. A ``.py`` file that does not compile is
cut the same way, into runs of its top-level statements (``python_chunks``):
the statement with the syntax error is a chunk of its own, and the rest runs. IPython-only lines (``%magic``,
``!shell``, ``x = !cmd``, ``name?``) become ``pass`` so that line numbers in
messages still match the notebook; cells run by a cell magic other than
``%%time``/``%%capture`` are skipped, and so are nbgrader's test cells and
read-only cells (the course's checks, demonstrations and pictures).

Every path below the one the grader is given is the student's, so a submission
is read as regular files only. A symbolic link, a hard link with a name outside
the submission, a device, a named pipe or a socket anywhere in it is refused
with a LoadError that names it, never opened: files are opened with
``O_NOFOLLOW`` and checked with ``fstat`` on the open descriptor, folders are
walked through descriptors (``dir_fd=``), and what is read is checked to be
what the walk found. Sizes are capped before anything is read (``MAX_*``).
Names starting with a dot (``.ipynb_checkpoints``, ``.venv``, ``.git``) are
never graded and never entered; in a class folder each is listed with that reason (``class_entries``).

A notebook is data: its size, nesting and number of values are checked before it
is parsed, its structure before any field is used, and, where the ``nbformat``
package is installed (always on the grader's side), it is validated against
nbformat's own schema. This file is also the student's ``notebook_loader.py``
(see build.py), so it uses the standard library only and works without nbformat.
"""

import codecs
import io
import json
import os
import re
import stat
import sys
import tokenize
import warnings
from bisect import bisect_right
from dataclasses import dataclass
from hashlib import sha256
from itertools import accumulate
from pathlib import Path

SUFFIXES = (".py", ".ipynb")
ASSIGNMENT_FILES = ("checks.py", "conftest.py", "notebook_loader.py")  # handed out with the assignment
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!]|[\w.,\s\[\]]+=\s*[%!]|[\w.]+\?{1,2}\s*$)")
_KEPT_CELL_MAGICS = ("%%time", "%%capture")

# Limits, checked before reading or parsing. An executed course notebook with its pictures is about
# 0.6 MB, 60 cells and nesting 7 deep; a student's folder is a notebook and a few files, two levels deep.
MAX_FILE_BYTES = 32 * 1024**2  # the file graded; a notebook this big is mostly pictures
MAX_FOLDER_BYTES = 64 * 1024**2  # all regular files of a student's folder (what batch.py fingerprints)
MAX_ENTRIES = 10_000  # names listed in a student's folder, at every depth
MAX_DEPTH = 16  # folders below the submission's own
MAX_CELLS = 5_000
MAX_JSON_DEPTH = 64  # far below the depth at which Python's json (or anything after it) would recurse too far
MAX_JSON_VALUES = 200_000  # containers and members of lists and objects (the course notebook has 2,000)

_O = {name: getattr(os, name, 0) for name in ("O_NOFOLLOW", "O_DIRECTORY", "O_NONBLOCK", "O_NOCTTY",
                                               "O_CLOEXEC", "O_BINARY")}
# O_NONBLOCK: if a named pipe is swapped in after the check, opening it returns at once instead of waiting.
_FILE_FLAGS = os.O_RDONLY | _O["O_NOFOLLOW"] | _O["O_NONBLOCK"] | _O["O_NOCTTY"] | _O["O_CLOEXEC"] | _O["O_BINARY"]
_DIR_FLAGS = os.O_RDONLY | _O["O_NOFOLLOW"] | _O["O_DIRECTORY"] | _O["O_NONBLOCK"] | _O["O_CLOEXEC"]
# Linux and macOS walk by descriptor; elsewhere (a student's Windows machine) by path, with the same checks.
_BY_DESCRIPTOR = bool(_O["O_NOFOLLOW"] and _O["O_DIRECTORY"] and os.open in os.supports_dir_fd
                      and os.stat in os.supports_dir_fd and os.scandir in os.supports_fd)


class LoadError(Exception):
    """The submission could not be read; the message says why, for the student."""


@dataclass
class Submission:
    name: str  # how the student is named in reports: the file or folder name
    path: Path
    chunks: list  # [{"label": str, "source": str}]
    skipped: list  # notes on what was left out (magics, shell lines)
    # nbgrader's grade ids in a notebook's cells, every cell's (the course's test cells too): data that says which
    # assignment the notebook is (core/recognize.py); empty for a .py file
    grade_ids: tuple = ()


# Showing what a student named: one line, no terminal escapes.

def shown_name(parts):
    """A submitted name (or path parts) as it can be shown safely: non-printable characters escaped."""
    if isinstance(parts, str):
        parts = (parts,)
    return "/".join("".join(c if c.isprintable() and c != "\\" else c.encode("unicode_escape", "backslashreplace")
                            .decode("ascii") for c in part) for part in parts)


def _size(count):
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if count < 1024 or unit == "TB":
            return f"{count} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024


def _kind(mode):
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _refuse_kind(shown, mode):
    if stat.S_ISLNK(mode):
        return LoadError(f"{shown} is a symbolic link, and the grader never follows links (one could lead anywhere, "
                         "outside your submission too); upload the file itself, not a link to it.")
    return LoadError(f"{shown} is {_kind(mode)}, not a regular file; the grader reads only regular files and "
                     "folders. Remove it from your submission.")


def _refuse_links(shown, links, names_inside):
    if links > names_inside:
        others = links - names_inside
        return LoadError(f"{shown} is a hard link: the same file has {others} other name{'s' * (others > 1)} "
                         "outside your submission (or hidden in it), and the grader reads only your submission's "
                         "own files. Upload a copy of the file, not a link to it.")
    return None


def _refuse_size(shown, size):
    advice = ("clear its outputs (Kernel > Restart Kernel and Clear Outputs of All Cells) and save it again"
              if shown.endswith(".ipynb") else "upload only your code")
    return LoadError(f"{shown} is {_size(size)}, more than the {_size(MAX_FILE_BYTES)} a submitted file may be; "
                     f"{advice}.")


# Reading regular files through descriptors.

def _open(name, flags, dir_fd):
    return os.open(name, flags, dir_fd=dir_fd) if _BY_DESCRIPTOR and dir_fd is not None else os.open(
        name if dir_fd is None else os.path.join(dir_fd, name), flags)


def _read_regular(name, shown, dir_fd=None, expect=None, names_inside=1):
    """The bytes of regular file ``name`` (in folder ``dir_fd``), checked on its open descriptor.

    ``expect``: the (st_dev, st_ino) the walk saw, so a file swapped in since is refused;
    ``names_inside``: how many of its hard links the walk found inside the submission.
    """
    try:
        fd = _open(name, _FILE_FLAGS, dir_fd)
    except OSError as error:
        if error.errno == getattr(os, "ELOOP", None):  # O_NOFOLLOW met a link: one swapped in since the check
            raise _refuse_kind(shown, stat.S_IFLNK) from None
        raise LoadError(f"{shown} could not be opened ({error.strerror or error}).") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_kind(shown, st.st_mode)
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise LoadError(f"{shown} changed while the grader was reading your submission; submit it again.")
        refusal = _refuse_links(shown, st.st_nlink, names_inside)
        if refusal:
            raise refusal
        if st.st_size > MAX_FILE_BYTES:
            raise _refuse_size(shown, st.st_size)
        parts, left = [], MAX_FILE_BYTES + 1  # one byte more than allowed: a file still growing is seen
        while left > 0:
            try:
                part = os.read(fd, min(left, 1 << 20))
            except BlockingIOError:  # nothing regular blocks; only something swapped in could
                raise LoadError(f"{shown} could not be read: it is not a regular file.") from None
            if not part:
                break
            parts.append(part)
            left -= len(part)
        data = b"".join(parts)
        if len(data) > MAX_FILE_BYTES:
            raise _refuse_size(shown, len(data))
        return data
    except OSError as error:
        raise LoadError(f"{shown} could not be read ({error.strerror or error}).") from None
    finally:
        os.close(fd)


@dataclass
class _File:
    parts: tuple  # names from the submission's folder down to the file
    size: int
    key: tuple  # (st_dev, st_ino)
    links: int  # st_nlink


class _Folder:
    """A student's folder, open and walked: its regular files, each checked; anything else refused."""

    def __init__(self, path):
        self.path = Path(path)
        self.label = shown_name(os.path.basename(os.path.abspath(self.path))) + "/"
        try:
            st = os.lstat(self.path)
        except OSError as error:
            raise LoadError(f"{self.label} could not be read ({error.strerror or error}).") from None
        if not stat.S_ISDIR(st.st_mode):
            raise _refuse_kind(self.label.rstrip("/"), st.st_mode)
        self.fd = self._open_dir(os.fspath(self.path), None, self.label, st)
        try:
            self.files = self._walk()
        except BaseException:
            self.close()
            raise

    def close(self):
        if isinstance(self.fd, int):
            os.close(self.fd)
        self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def _open_dir(self, name, parent, shown, seen):
        """Open folder ``name`` without following a link; check it is the folder ``seen`` by lstat."""
        if not _BY_DESCRIPTOR:
            return name if parent is None else os.path.join(parent, name)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError as error:
            if error.errno in (getattr(os, "ELOOP", -1), getattr(os, "ENOTDIR", -1)):
                raise LoadError(f"{shown} changed while the grader was reading your submission "
                                "(it is no longer a folder); submit it again.") from None
            raise LoadError(f"{shown} could not be opened ({error.strerror or error}).") from None
        st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            os.close(fd)
            raise LoadError(f"{shown} changed while the grader was reading your submission; submit it again.")
        return fd

    def _walk(self):
        files, listed = [], [0]
        self._walk_into(self.fd, (), files, listed)
        total = sum(file.size for file in files)
        if total > MAX_FOLDER_BYTES:
            raise LoadError(f"{self.label} holds {_size(total)} of files, more than the {_size(MAX_FOLDER_BYTES)} "
                            "a submission may hold; upload only your notebook or .py file.")
        self.names_of = {}  # (st_dev, st_ino): how many of the file's names are inside the submission
        for file in files:
            self.names_of[file.key] = self.names_of.get(file.key, 0) + 1
        for file in files:
            refusal = _refuse_links(shown_name(file.parts), file.links, self.names_of[file.key])
            if refusal:
                raise refusal
        return files

    def _walk_into(self, fd, parts, files, listed):
        names = []
        try:
            with os.scandir(fd) as entries:  # a descriptor: the folder opened, not a path that could be swapped
                for entry in entries:
                    listed[0] += 1
                    if listed[0] > MAX_ENTRIES:
                        raise LoadError(f"{self.label} holds more than {MAX_ENTRIES} files and folders; upload "
                                        "only your notebook or .py file.")
                    if not entry.name.startswith("."):  # hidden: checkpoints, environments; never graded or entered
                        names.append(entry.name)
        except OSError as error:
            raise LoadError(f"{shown_name(parts) + '/' if parts else self.label} could not be listed "
                            f"({error.strerror or error}).") from None
        for name in sorted(names):
            shown = shown_name(parts + (name,))
            try:
                st = (os.stat(name, dir_fd=fd, follow_symlinks=False) if _BY_DESCRIPTOR
                      else os.lstat(os.path.join(fd, name)))
            except OSError as error:
                raise LoadError(f"{shown} could not be read ({error.strerror or error}).") from None
            if stat.S_ISREG(st.st_mode):
                files.append(_File(parts + (name,), st.st_size, (st.st_dev, st.st_ino), st.st_nlink))
            elif stat.S_ISDIR(st.st_mode):
                if len(parts) + 1 > MAX_DEPTH:
                    raise LoadError(f"{shown}/ is nested more than {MAX_DEPTH} folders deep in your submission; "
                                    "upload only your notebook or .py file.")
                child = self._open_dir(name, fd, shown + "/", st)
                try:
                    self._walk_into(child, parts + (name,), files, listed)
                finally:
                    if isinstance(child, int):
                        os.close(child)
            else:
                raise _refuse_kind(shown, st.st_mode)

    def read(self, file):
        """The bytes of ``file`` (one the walk found), reached again folder by folder without following links."""
        fd, opened = self.fd, []
        try:
            for depth, name in enumerate(file.parts[:-1]):
                shown = shown_name(file.parts[: depth + 1]) + "/"
                if _BY_DESCRIPTOR:
                    try:
                        fd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                    except OSError as error:
                        raise LoadError(f"{shown} changed while the grader was reading your submission "
                                        f"({error.strerror or error}); submit it again.") from None
                    opened.append(fd)
                else:
                    fd = os.path.join(fd, name)
            return _read_regular(file.parts[-1], shown_name(file.parts), fd, file.key, self.names_of[file.key])
        finally:
            for descriptor in opened:
                os.close(descriptor)

    def candidates(self):
        return [file for file in self.files if file.parts[-1].endswith(SUFFIXES)]

    def submission_file(self, preferred_names=()):
        """The file to grade: one named as in ``preferred_names`` (the unit's module, ``name.py``/``.ipynb``),
        else the only .py or .ipynb there."""
        files = sorted(self.candidates(), key=lambda file: file.parts)
        for preferred in preferred_names:
            found = [file for file in files if file.parts[-1] == preferred]
            if len(found) == 1:
                return found[0]
        candidates = [file for file in files if not file.parts[-1].startswith("test_")
                      and file.parts[-1] not in ASSIGNMENT_FILES]
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            raise LoadError(f"{self.label} holds no .py or .ipynb file to grade.")
        names = ", ".join(shown_name(file.parts) for file in candidates[:5])
        wanted = " or ".join(preferred_names) or "a name of its own"
        raise LoadError(f"{self.label} holds several files that could be the submission ({names}); "
                        f"name the one to grade {wanted}.")


def regular_files(folder):
    """The paths (relative to ``folder``) of the regular files a student's folder holds, hidden ones left out.

    Raises LoadError, naming the entry, for anything that is not a regular file or folder, and for
    a folder over the limits; follows no link.
    """
    with _Folder(folder) as opened:
        return [Path(*file.parts) for file in sorted(opened.files, key=lambda file: file.parts)]


# Python files: the encoding they declare, universal newlines.

def _python_text(data, shown):
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "unknown encoding" in str(error):
            declared = str(error).rsplit(":", 1)[-1].strip()
            raise LoadError(f"{shown} declares the encoding {shown_name(declared)!s} in its coding line, which Python "
                            "does not know; save it as UTF-8 and remove that line.") from None
        if data.startswith(codecs.BOM_UTF8):
            raise LoadError(f"{shown} starts with a UTF-8 byte-order mark, but its coding line names another "
                            "encoding; save it as UTF-8 and remove that line.") from None
        raise LoadError(f"{shown} is not UTF-8 text ({shown_name(str(error))}); save it as UTF-8, or name its "
                        "encoding in a coding line (# -*- coding: latin-1 -*-).") from None
    said = "UTF-8" if encoding.startswith("utf-8") else f"{encoding}, as its coding line says"
    try:
        text = data.decode(encoding)  # "utf-8-sig" when the file starts with a byte-order mark: removed
    except UnicodeDecodeError as error:
        raise LoadError(f"{shown} is not {said} ({error.reason} at byte {error.start}); save it as UTF-8.") from None
    except Exception as error:  # noqa: BLE001  (a coding line may name any codec: base64, idna, punycode...)
        raise LoadError(f"{shown} cannot be read as {said} ({type(error).__name__}); save it as UTF-8 and "
                        "remove its coding line.") from None
    _check_text(text, shown)
    return _universal_newlines(text)


def _check_text(text, where):
    """Refuse a lone surrogate (from a broken escape): it is not text, and would break every report that shows it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise LoadError(f"{where} holds {shown_name(text[error.start])}, half of a character (a lone surrogate), "
                        "which is not text; remove it and save the file again.") from None


def _universal_newlines(text):
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as Python reads a file in text mode


def _python_lines(source):
    kept, skipped = [], 0
    lines = source.split("\n")  # newlines are already "\n"; not splitlines(): U+2028 in a string is no line end
    if lines[-1] == "":
        lines.pop()
    for line in lines:
        if _IPYTHON_LINE.search(line):
            indent = line[: len(line) - len(line.lstrip())]
            kept.append(f"{indent}pass  # IPython line left out by the grader")
            skipped += 1
        else:
            kept.append(line)
    return "\n".join(kept) + "\n", skipped


# Notebooks: limits, then structure, then nbformat's schema; only then a field is used.

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_PLAIN_STRING = re.compile(rb'"[^"]*(?:"|\Z)')  # once escapes are gone; always matches, so never backtracks
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_BRACKET_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}.__getitem__


def _json_type(value):
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    return "a number"


def _not_nbformat(shown, complaint):
    return LoadError(f"{shown} is not valid nbformat 4: {complaint}. Open it in Jupyter and save it again, or "
                     "upload the .ipynb as Jupyter saved it.")


def _deepest(skeleton):
    brackets = _NOT_BRACKET.sub(b"", skeleton)
    return max(accumulate(map(_BRACKET_STEP, brackets)), default=0)


def json_depth(data):
    """The deepest nesting of [ and { in JSON bytes, strings left out: from the bytes alone, at C speed."""
    return _deepest(_PLAIN_STRING.sub(b"", _ESCAPE.sub(b"", data)))


def _check_json_size(data, shown):
    """Refuse JSON too deep or with too many values, from its bytes alone: before parsing costs anything.

    UTF-8 never uses the bytes of ``"``, ``\\``, brackets or commas inside another character.
    """
    # A backslash starts JSON's only escape and comes only inside strings: with each escape gone, left
    # to right as JSON reads them, every quote left opens or closes a string. All of it runs in C.
    unescaped = _ESCAPE.sub(b"", data)
    strings = unescaped.count(b'"') // 2  # each a key or a member: at most two per comma or opening bracket
    skeleton = _PLAIN_STRING.sub(b"", unescaped) if strings <= 2 * MAX_JSON_VALUES + 1 else b""
    values = skeleton.count(b",") + skeleton.count(b"[") + skeleton.count(b"{")
    closers = skeleton.count(b"]") + skeleton.count(b"}")
    if strings > 2 * MAX_JSON_VALUES + 1 or values > MAX_JSON_VALUES or closers > MAX_JSON_VALUES:
        raise LoadError(f"{shown} holds more than {MAX_JSON_VALUES} JSON values; a notebook has far fewer. "
                        "Clear its outputs and save it again.")
    deepest = _deepest(skeleton)
    if deepest > MAX_JSON_DEPTH:
        raise LoadError(f"{shown} nests its JSON more than {MAX_JSON_DEPTH} levels deep; a notebook is about 7 "
                        "deep. Open it in Jupyter and save it again.")


def _parse_notebook(data, shown):
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise LoadError(f"{shown} is saved as UTF-16; Jupyter saves notebooks as UTF-8. Open it in Jupyter and "
                        "save it again.")
    _check_json_size(data, shown)
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark, which some editors write, is dropped
    except UnicodeDecodeError as error:
        raise LoadError(f"{shown} is not UTF-8 text ({error.reason}); is it really a notebook?") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise LoadError(
            f"{shown} is not a valid notebook: its JSON breaks at line {error.lineno}, "
            f"column {error.colno} ({error.msg}). Re-save it from Jupyter, or upload the .ipynb unedited."
        ) from None
    except ValueError as error:  # an integer of more than 4300 digits
        raise LoadError(f"{shown} is not a valid notebook: {shown_name(str(error))[:200]}.") from None
    except RecursionError:  # the size check above already refuses this; never let it out
        raise LoadError(f"{shown} nests its JSON too deep to be a notebook.") from None


def _check_structure(notebook, shown):
    """The fields this module uses, and the ones nbformat's schema needs to be checked at all, have their types.

    Returns the minor version.
    """
    if not isinstance(notebook, dict):
        raise _not_nbformat(shown, f"it is {_json_type(notebook)} of JSON, not an object with cells")
    major, minor = notebook.get("nbformat"), notebook.get("nbformat_minor")
    if type(major) is not int:
        raise _not_nbformat(shown, "its nbformat (the version) is " + (
            "missing" if major is None else f"{_json_type(major)}, not the number 4"))
    if major != 4:
        raise LoadError(f"{shown} is in nbformat {major}, and the grader reads nbformat 4 (Jupyter since 2015). "
                        "Open it in a current Jupyter and save it again.")
    if type(minor) is not int or minor < 0:
        raise _not_nbformat(shown, "its nbformat_minor is " + (
            "missing" if minor is None else f"{_json_type(minor) if type(minor) is not int else minor}, "
                                            "not a number from 0"))
    if not isinstance(notebook.get("metadata"), dict):
        raise _not_nbformat(shown, "its metadata is " + (
            "missing" if "metadata" not in notebook else f"{_json_type(notebook['metadata'])}, not an object"))
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise _not_nbformat(shown, "it has no list of cells" if cells is None
                            else f"its cells are {_json_type(cells)}, not a list of cells")
    if len(cells) > MAX_CELLS:
        raise LoadError(f"{shown} has {len(cells)} cells, more than the {MAX_CELLS} the grader reads; a "
                        "notebook for this assignment has about 60.")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise _not_nbformat(shown, f"cell {number} is {_json_type(cell)}, not an object")
        if not isinstance(cell.get("cell_type"), str):
            raise _not_nbformat(shown, f"cell {number} has no cell_type" if "cell_type" not in cell
                                else f"cell {number}'s cell_type is {_json_type(cell['cell_type'])}, not a string")
        source = cell.get("source")
        if not (isinstance(source, str) or isinstance(source, list) and all(isinstance(s, str) for s in source)):
            raise _not_nbformat(shown, f"cell {number} has no source" if "source" not in cell else
                                f"cell {number}'s source is {_json_type(source)}"
                                f"{' holding something other than text' if isinstance(source, list) else ''}, "
                                "not text (a string or a list of strings)")
        metadata = cell.get("metadata")
        if not isinstance(metadata, dict):
            raise _not_nbformat(shown, f"cell {number} has no metadata" if "metadata" not in cell
                                else f"cell {number}'s metadata is {_json_type(metadata)}, not an object")
        nbgrader = metadata.get("nbgrader", {})
        if not isinstance(nbgrader, dict):
            raise _not_nbformat(shown, f"cell {number}'s metadata.nbgrader is {_json_type(nbgrader)}, not an object")
        for flag in ("grade", "locked", "solution"):
            if nbgrader.get(flag) is not None and not isinstance(nbgrader[flag], bool):
                raise _not_nbformat(shown, f"cell {number}'s metadata.nbgrader.{flag} is "
                                           f"{_json_type(nbgrader[flag])}, not true or false")
    return minor


def schema_in_use():
    """What checks a notebook beyond its structure: "nbformat X (fastjsonschema)", or None without nbformat."""
    validators = _nbformat_validators()
    return None if validators is None else f"nbformat {validators[0]} ({validators[1]})"


_validators = {}


def _nbformat_validators():
    """(nbformat's version, "fastjsonschema", the nbformat.validator module or None until a failure needs it).

    nbformat's own schema files are compiled with fastjsonschema here, as nbformat does with that validator;
    nbformat.validator itself imports jsonschema, which costs a second at start, so it is imported only to
    word a complaint about a notebook that failed.
    """
    if "version" not in _validators:
        try:
            import importlib.metadata
            import importlib.util

            spec = importlib.util.find_spec("nbformat")  # found, not imported
            import fastjsonschema

            _validators["folder"] = Path(next(iter(spec.submodule_search_locations))) / "v4"
            _validators["version"] = importlib.metadata.version("nbformat")
            _validators["compile"] = fastjsonschema.compile
            _validators["error"] = fastjsonschema.JsonSchemaException
        except (ImportError, AttributeError, TypeError, StopIteration, importlib.metadata.PackageNotFoundError):
            _validators["version"] = None  # the student's side without Jupyter: the structural checks are all
    if _validators["version"] is None:
        return None
    return _validators["version"], "fastjsonschema", None


def _fast_validator(minor):
    """nbformat 4.``minor``'s schema, compiled once (a minor from the future: the newest, relaxed as nbformat does)."""
    key = ("fast", minor)
    if key not in _validators:
        folder = _validators["folder"]
        path = folder / f"nbformat.v4.{minor}.schema.json"
        schema = json.loads((path if path.is_file() else folder / "nbformat.v4.schema.json").read_text("utf-8"))
        if not path.is_file():
            schema = _relaxed(schema)
            for kind in ("cell", "output"):
                schema["definitions"][kind]["oneOf"].append({"$ref": f"#/definitions/unrecognized_{kind}"})
        _validators[key] = _validators["compile"](schema)
    return _validators[key]


def _relaxed(node):
    if isinstance(node, dict):
        return {key: True if key == "additionalProperties" else _relaxed(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_relaxed(value) for value in node]
    return node


def _where(path, index=None):
    path = list(path)
    if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
        head, path = f"cell {(path[1] if index is None else index) + 1}", path[2:]
    else:
        head = "the notebook"
    rest = "".join(f"[{p}]" if isinstance(p, int) else f".{shown_name(str(p))}" for p in path).lstrip(".")
    return f"{head}'s {rest}" if rest else head


_FAST_CELL = re.compile(r"data\.cells\[(\d+)\]")


def without_iri_grammars():
    """Keep jsonschema, where it is not imported yet, from importing rfc3987-syntax.

    jsonschema checks the string formats "iri" and "iri-reference" with rfc3987-syntax where that is installed
    (Jupyter's event schemas bring it), and rfc3987-syntax builds 38 Lark grammars as it is imported: about 4 s of
    every command that reads a notebook, on the course machines. nbformat's schema names no string format, so the
    package is marked missing for this process before jsonschema is first imported (its checks of those two formats
    are then skipped, as they are where it is not installed). A process that imported jsonschema already (nbgrader's)
    is left as it is.
    """
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)


def _schema_complaint(module, notebook, minor, fast_message):
    """nbformat's complaint, in one line naming the cell: jsonschema's detail, sought on a failure only.

    fastjsonschema names the first cell that fails; jsonschema looks at that cell alone, which keeps
    a long notebook's message as cheap as a short one's.
    """
    if module is None:
        without_iri_grammars()
        import nbformat.validator as module  # jsonschema, for its words: on a failure only
    slow = module.get_validator(4, minor, name="jsonschema")
    index = _FAST_CELL.match(fast_message)
    index = int(index.group(1)) if index and int(index.group(1)) < len(notebook["cells"]) else None
    error = None
    if index is not None:
        error = next(iter(slow.iter_errors(dict(notebook, cells=[notebook["cells"][index]]))), None)
    if error is None:
        index = None
        error = next(iter(slow.iter_errors(notebook)), None)
    if error is None:
        return f"nbformat's schema refused it ({shown_name(' '.join(fast_message.split()))[:160]})"
    try:
        error = module.better_validation_error(error, 4, minor)
    except Exception:  # noqa: BLE001  (only a finer message is lost)
        pass
    where = _where(error.relative_path, index)
    if error.validator == "type":
        expected = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        names = {"object": "an object", "array": "a list", "string": "a string", "integer": "a whole number",
                 "number": "a number", "boolean": "true or false", "null": "null"}
        return f"{where} is {_json_type(error.instance)}, not {' or '.join(names.get(t, t) for t in expected)}"
    if error.validator == "oneOf":
        if isinstance(error.instance, dict) and "cell_type" in error.instance:
            return (f"{where} has cell_type {shown_name(str(error.instance['cell_type']))[:40]!r}, which is none of "
                    "code, markdown and raw, or fits none of them")
        return f"{where} is {_json_type(error.instance)} that fits none of the forms nbformat allows there"
    message = " ".join(str(error.message).split())
    return f"{where}: {shown_name(message[:160])}{'...' if len(message) > 160 else ''}"


def _check_schema(notebook, minor, shown):
    """Validate against nbformat's own schema (fastjsonschema: about 1 ms for the course notebook; jsonschema 40)."""
    validators = _nbformat_validators()
    if validators is None:
        return
    module = validators[2]
    cells = notebook["cells"]
    if minor < 5 and any("id" in cell for cell in cells):
        minor = 5  # ids are nbformat 4.5's; an editor that writes them with an older minor means 4.5
        notebook = dict(notebook, nbformat_minor=5)
    minor = min(minor, 6)  # any minor from the future: nbformat relaxes its newest schema the same way
    if minor >= 5:
        # Jupyter saves without ids at times, and nbformat's own reader adds them; so do we (they are not used).
        taken = {cell["id"] for cell in cells if isinstance(cell.get("id"), str)}
        for number, cell in enumerate(cells, start=1):
            if "id" not in cell:
                cell["id"] = next(f"cell-{number}-{n}" for n in range(len(cells) + 1)
                                  if f"cell-{number}-{n}" not in taken)
    try:
        _fast_validator(minor)(notebook)
        return
    except _validators["error"] as error:
        fast_message = str(error)
    except Exception as error:  # noqa: BLE001  (a fault of the validator's; the notebook is still refused)
        raise _not_nbformat(shown, f"nbformat's validator failed on it ({type(error).__name__})") from None
    try:
        complaint = _schema_complaint(module, notebook, minor, fast_message)
    except Exception:  # noqa: BLE001  (only the finer message is lost)
        complaint = f"nbformat's schema refused it ({shown_name(' '.join(fast_message.split()))[:160]})"
    raise _not_nbformat(shown, complaint)


_SHOWN_FIRST_LINE = 40  # characters of a cell's first line in its label
_DEFINITION = re.compile(r"((?:async\s+)?def|class)\s+([^\W\d]\w*)\s*\(")


def cell_label(shown, number, source):
    """How a student finds a code cell of notebook ``shown``: ``number``, its place among the notebook's code cells
    (markdown cells are not counted; JupyterLab numbers none), and its first line, made inert and short:
    "long_context.ipynb, code cell 5, `def ntk_inverse_frequencies(...)`". The label is also the name the cell's
    code is compiled under, so a traceback and a message add ", line N" to it."""
    first = next((line.strip() for line in source.split("\n") if line.strip()), "")
    definition = _DEFINITION.match(first)
    if definition:  # the name is what a student looks for; the arguments only lengthen it
        first = f"{' '.join(definition.group(1).split())} {definition.group(2)}(...)"
    # Inert as inert.inert_line makes it (this file is also the student's loader: standard library only), and
    # no backtick to end the code span early.
    first = "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                    for c in first).replace("`", "'")
    if len(first) > _SHOWN_FIRST_LINE:
        first = first[:_SHOWN_FIRST_LINE - 3].rstrip() + "..."
    return f"{shown}, code cell {number}" + (f", `{first}`" if first else " (empty)")


def _notebook_chunks(data, name):
    """The code cells of notebook bytes ``data`` (file ``name``) as chunks, and notes on what was left out."""
    shown = shown_name(name)
    notebook = _parse_notebook(data, shown)
    minor = _check_structure(notebook, shown)
    _check_schema(notebook, minor, shown)
    chunks, notes, magic_lines = [], [], 0
    code_cells = (cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    for number, cell in enumerate(code_cells, start=1):  # counted as a student counts them: code cells only
        source = cell["source"]
        source = _universal_newlines("".join(source) if isinstance(source, list) else source)
        nbgrader = cell["metadata"].get("nbgrader") or {}
        if (nbgrader.get("grade") or nbgrader.get("locked")) and not nbgrader.get("solution"):
            continue  # a test cell or a read-only demonstration: the course's cells, not the student's code
        label = cell_label(shown, number, source)
        lines = source.split("\n")
        at = next((index for index, line in enumerate(lines) if line.strip()), 0)
        first_line = lines[at].lstrip()
        if first_line.startswith("%%"):
            if not first_line.startswith(_KEPT_CELL_MAGICS):
                notes.append(f"code cell {number} runs under {shown_name(first_line.split()[0])[:40]} and was "
                             "left out")
                continue
            source = "\n" * at + "\n" + "\n".join(lines[at + 1:])  # blank where the magic was: lines keep their numbers
        _check_text(source, label + ",")
        text, skipped = _python_lines(source)
        magic_lines += skipped
        chunks.append({"label": label, "source": text})
    if magic_lines:
        notes.append(f"{magic_lines} IPython line(s) (magics, shell commands) were left out")
    return chunks, notes


def _chunks(data, name):
    if name.endswith(".ipynb"):
        return _notebook_chunks(data, name)
    return python_chunks(_python_text(data, shown_name(name)), shown_name(name)), []


# A .py file that does not compile. Python refuses the whole file; the grader runs what it can, as it does for a
# notebook's cells: the file is cut at its top-level statements (a def with its decorators, a class, an import),
# and each run of them that compiles is a chunk, the statement where compile() finds an error a chunk of its own.
# Each chunk keeps the file's name and its line numbers (blank lines before it), so messages point into the file.
# compile() runs nothing: it only reads the text. A file that compiles is one chunk, as it always was.
SPLIT_BYTES = 128 * 1024  # a larger file that does not compile stays one chunk (a student's file is about 20 KB)
SPLIT_LINES = 20_000
SPLIT_ERRORS = 16  # at most this many statements are set apart; what is left after stays one chunk
SPLIT_STOPS, SPLIT_TRIES = 4, 4  # where the tokenizer stops: how often it starts again, how many lines it tries
_SYNTAX_CHECK = "<the grader's syntax check of a .py file>"
# compile() warns of dubious code ("is" with a literal); its warnings are the job's to show, not the grader's
warnings.filterwarnings("ignore", module=re.escape(_SYNTAX_CHECK) + r"\Z")
_GOES_ON = re.compile(r"(?:else|elif|except|finally)\b|[)\]}]")  # a line at column 0 that ends no statement


def _compile_error(text):
    """The SyntaxError of ``text`` (its lines counted from 1), or None where it compiles."""
    try:
        compile(text, _SYNTAX_CHECK, "exec", dont_inherit=True)
    except SyntaxError as error:
        return error
    return None


def _statement_starts(lines):
    """The indexes of the lines where a top-level statement starts, decorators with their def: where Python's
    tokenizer sees a logical line begin at indentation 0 (so not in a string or bracket), ``else``, ``except`` and
    the like left out. Where the tokenizer stops (a string or bracket never closed, a bad dedent), what follows is
    read again from a later line at column 0: the first of the next few from which it reads to the end."""
    starts, offset, budget = {0}, 0, [SPLIT_TRIES * len(lines)]  # lines the tokenizer may read, tries and all

    def reads_to_the_end(first):
        budget[0] -= len(lines) - first
        return budget[0] >= 0 and _tokenized_starts(lines[first:])[1] is None

    for _ in range(SPLIT_STOPS):
        found, stopped = _tokenized_starts(lines[offset:])
        starts.update(offset + number for number in found)
        if stopped is None:
            break
        candidates = [number for number in range(offset + max(stopped, 0) + 1, len(lines))
                      if lines[number][:1] not in ("", " ", "\t", "\f", "#") and not _GOES_ON.match(lines[number])]
        if not candidates:
            break
        offset = next((number for number in candidates[:SPLIT_TRIES] if reads_to_the_end(number)), candidates[0])
        starts.add(offset)
    return sorted(starts)


def _tokenized_starts(lines):
    """(starts, the index of the line where tokenizing stopped, or None where it reached the end)."""
    starts, indent, first, decorated, bracket, opened = [], 0, True, False, 0, 0
    text = "\n".join(lines)
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    try:
        for token in tokens:
            kind, line = token.type, token.start[0] - 1
            if kind == tokenize.INDENT:
                indent += 1
            elif kind == tokenize.DEDENT:
                indent -= 1
            elif kind == tokenize.NEWLINE:
                first = True
            elif kind not in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING, tokenize.ENDMARKER):
                if token.string in ("(", "[", "{"):
                    opened = line if bracket == 0 else opened
                    bracket += 1
                elif token.string in (")", "]", "}"):
                    if bracket == 0:  # closes nothing: the tokenizer reads what follows as inside brackets
                        return starts, line
                    bracket -= 1
                if first and indent == 0 and token.string not in ("else", "elif", "except", "finally"):
                    if not decorated:
                        starts.append(line)
                    decorated = token.string == "@"
                first = False
    except (tokenize.TokenError, SyntaxError) as error:  # SyntaxError: IndentationError, and newer tokenizers
        where = getattr(error, "lineno", None) or (error.args[1][0] if len(error.args) > 1 and isinstance(
            error.args[1], tuple) else None)
        stopped = opened if bracket else (where - 1 if isinstance(where, int) else len(lines))
        return starts, min(stopped, len(lines))
    return starts, None


def python_chunks(text, label):
    """The chunks of a .py file's ``text`` (see above): [{"label", "source"}], in the file's order."""
    whole = [{"label": label, "source": text}]
    lines = text.split("\n")  # as compile() counts them (newlines are "\n" already)
    if len(text) > SPLIT_BYTES or len(lines) > SPLIT_LINES:
        return whole
    try:
        if _compile_error(text) is None:
            return whole
        ends = _statement_starts(lines) + [len(lines)]
        runs, cut, todo = [], 0, [(0, len(ends) - 1)]  # runs of statements [first, last), by index into ends
        while todo:
            first, last = todo.pop()
            error = _compile_error("\n".join(lines[ends[first]:ends[last]]))
            if error is None or last - first == 1 or cut >= SPLIT_ERRORS or not error.lineno:
                runs.append((first, last))
                continue
            # The statement where the error is (its first line, for a bracket or string never closed), alone;
            # the statements before and after it, each run checked again.
            at = min(max(bisect_right(ends, ends[first] + error.lineno - 1) - 1, first), last - 1)
            cut += 1
            todo += [run for run in ((at + 1, last), (at, at + 1), (first, at)) if run[0] < run[1]]
    except Exception:  # noqa: BLE001  (too deep or too odd to cut: graded whole, as it always was)
        return whole
    return [{"label": label, "source": "\n" * ends[first] + "\n".join(lines[ends[first]:ends[last]])}
            for first, last in sorted(runs)]


def submission_name(path):
    """How a submission is named in reports: a file by its stem, a student folder by its name."""
    path = Path(path)
    return path.stem if path.suffix in SUFFIXES else path.name


def _read_file(path):
    """The bytes of a submission that is one file: a regular file, not a link, with no other name."""
    shown = shown_name(path.name)
    try:
        st = os.lstat(path)
    except (OSError, ValueError) as error:
        raise LoadError(f"{shown} could not be read ({getattr(error, 'strerror', None) or error}).") from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse_kind(shown, st.st_mode)
    return _read_regular(os.fspath(path), shown, None, (st.st_dev, st.st_ino), names_inside=1)


def load(path, preferred_names=()):
    """Read one submission (a file, or a folder holding one) into a Submission; in a folder, the file to
    grade is one of ``preferred_names`` where there is one (see submission_file)."""
    path = Path(path)
    name = submission_name(path)
    if _is_folder(path):
        with _Folder(path) as folder:
            file = folder.submission_file(preferred_names)
            data = folder.read(file)
        path = path.joinpath(*file.parts)
    else:
        data = _read_file(path)
    chunks, notes = _chunks(data, path.name)
    grade_ids = _grade_ids(data) if path.name.endswith(".ipynb") else ()
    return Submission(name=name, path=path, chunks=chunks, skipped=notes, grade_ids=grade_ids)


def _grade_ids(data):
    """The nbgrader grade ids (strings, at most 200 characters) in the cells of notebook bytes ``data``, which
    ``_notebook_chunks`` has checked already (its size, nesting and structure)."""
    cells = json.loads(data.decode("utf-8-sig")).get("cells", [])
    ids = (((cell.get("metadata") or {}).get("nbgrader") or {}).get("grade_id") for cell in cells)
    return tuple(dict.fromkeys(grade_id for grade_id in ids if isinstance(grade_id, str) and len(grade_id) <= 200))


def _is_folder(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):  # ValueError: a NUL in the path; _read_file says what is wrong
        return False


def find_submission_file(folder, preferred_names=()):
    """The file to grade in a student's folder: one of ``preferred_names``, else the only one there.

    The folder may nest it (nbgrader's ``submitted/STUDENT/ASSIGNMENT/``); the
    self-check files that come with the assignment are never the submission.
    Raises LoadError for a folder holding a link or anything else not regular.
    """
    folder = Path(folder)
    with _Folder(folder) as opened:
        return folder.joinpath(*opened.submission_file(preferred_names).parts)


def fingerprint(path):
    """A sha256 digest of what a submission holds: a file's bytes, or a folder's regular files, names and bytes.

    Read as load() reads (never following a link, never blocking, capped); never
    raises: a submission that is refused gets the digest of why.
    """
    digest = sha256(b"submission 1\0")
    try:
        if _is_folder(path):
            with _Folder(path) as folder:
                for file in sorted(folder.files, key=lambda file: file.parts):
                    data = folder.read(file)
                    digest.update(b"/".join(os.fsencode(part) for part in file.parts) + b"\0")
                    digest.update(b"%d\0" % len(data) + data)
        else:
            data = _read_file(Path(path))
            digest.update(b"\0%d\0" % len(data) + data)
    except LoadError as error:
        return sha256(b"refused\0" + str(error).encode("utf-8", "backslashreplace")).hexdigest()
    except (OSError, ValueError) as error:  # a path the grader was given that cannot be read at all
        return sha256(b"unreadable\0" + repr(error).encode("utf-8", "backslashreplace")).hexdigest()
    return digest.hexdigest()


def expand(paths, preferred_names=()):
    """Turn command-line paths into submission paths: files as given; in a folder, each file and subfolder.

    Nothing is followed: a link named here, or found in a class folder, is a
    submission of its own, which load() then refuses, so that it has its row.
    What a class folder holds that is not graded is in ``class_entries``'s second list, with the reason.
    """
    return class_entries(paths, preferred_names)[0]


def _not_graded_because(name, mode):
    """Why an entry of a class folder is not a submission, or None where it is one (it gets a row)."""
    if name.startswith("."):
        return ("its name starts with \".\" (hidden: checkpoints, environments, .git); the grader never grades "
                "hidden entries. Rename it to grade it.")
    if stat.S_ISDIR(mode) or stat.S_ISLNK(mode) or name.endswith(SUFFIXES):
        return None  # a student's folder, or a file to grade: a link or anything not regular has a row saying why
    if stat.S_ISREG(mode):
        return "not a .py or .ipynb file, nor a student's folder."
    return f"{_kind(mode)}, not a .py or .ipynb file, nor a student's folder."


def class_entries(paths, preferred_names=()):
    """(submissions, skipped): command-line paths turned into submission paths, as ``expand``; and, for every
    entry of a class folder that is not one, (its path, why it is not graded), so that each entry of the folder
    is graded or listed with its reason (dot-names, other files, named pipes).

    Raises FileNotFoundError for a path that is not there, and OSError, said, for a class folder that cannot
    be listed.
    """
    found, skipped = [], []
    for raw in paths:
        path = Path(raw)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file or folder: {raw}") from None
        if not stat.S_ISDIR(st.st_mode):
            found.append(path)
            continue
        if any(os.path.lexists(path / name) for name in preferred_names):
            found.append(path)  # a single student's folder
            continue
        try:
            names = sorted(os.listdir(path))
        except OSError as error:
            raise OSError(f"the class folder {raw} cannot be listed ({error.strerror or error})") from None
        for name in names:
            entry = path / name
            try:
                mode = os.lstat(entry).st_mode
            except OSError:
                mode = stat.S_IFLNK  # gone or unreadable since it was listed: its row will say so
            reason = _not_graded_because(name, mode)
            if reason is None:
                found.append(entry)
            else:
                skipped.append((entry, reason))
    return found, skipped
