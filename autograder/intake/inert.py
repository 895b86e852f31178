"""Student text made inert, wherever it is shown: a terminal, a log, a CSV cell, a results file.

Text from a submission (exception messages, printed output, reprs, file and
folder names) can hold terminal escape sequences that rewrite a row of the
class table or retitle the instructor's terminal, carriage returns that hide
what came before them, and Unicode controls that reorder what a reader sees
(bidirectional overrides, zero-width characters). ``inert`` turns every such
character into a visible escape (``\\x1b``, ``\\r``, ``\\u202e``), so the text
reads as what it is and does nothing. Everything else, accents and other
scripts included, is kept as it is.

The grader applies it where student text enters the trusted side (the
loader's names, every string a job sends back), so every report downstream
gets inert text; the reporters apply it again where they print, which costs
little and keeps a report safe even for a Result built some other way.
"""

import re
import unicodedata

# Categories that do something rather than show something: controls, format characters (bidi overrides,
# zero-width joiners), surrogates, private use, unassigned, and the line and paragraph separators.
_ACTIVE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_SUSPECT = re.compile(r"[^\x20-\x7e\n\t]")  # the fast path: plain printable ASCII is never touched
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "|", "%")


def _escape(character):
    if character == "\r":
        return "\\r"  # as inert_line writes \n and \t, and as the module's docstring promises
    code = ord(character)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _neutralise(match):
    character = match.group()
    if character in "\n\t":
        return character
    return _escape(character) if unicodedata.category(character) in _ACTIVE_CATEGORIES else character


def inert(text, *, limit=None):
    """``text`` (any object: it is turned into a string first) with every active character escaped.

    Newlines and tabs are kept, so multi-line feedback stays multi-line; ``limit`` cuts the result to at most
    that many characters, marking the cut.
    """
    if not isinstance(text, str):
        try:
            text = str(text)
        except Exception:  # a hostile __str__ never reaches here from a job, but a Result may hold anything
            text = "<text that could not be shown>"
    if limit is not None and len(text) > limit:
        text = text[:limit] + " [...]"
    return _SUSPECT.sub(_neutralise, text)


def inert_line(text, *, limit=None):
    """``inert``, on one line: newlines and tabs are escaped too (names, table cells, log lines)."""
    return inert(text, limit=limit).replace("\n", "\\n").replace("\t", "\\t")


def csv_cell(text):
    """A text cell of grades.csv: inert, on one line, and never read as a formula by a spreadsheet.

    Spreadsheets run a cell that starts with = + - @ (and some read | and % too) as a formula; such a cell is
    prefixed with an apostrophe, which they show as text (OWASP's advice for CSV injection).
    """
    cell = inert_line(text)
    return "'" + cell if cell.startswith(_FORMULA_START) else cell


def as_readers_see(name):
    """The form under which two names look the same to some reader of a report: equal forms, one name to them.

    ``name`` as one line (inert_line), then what the readers' tools do to it: Unicode's compatibility
    normalisation (NFKC: a full-width ``＝`` is ``=``, ``e`` with a combining accent is ``é``) and case folding
    (a case-insensitive disk, a spreadsheet's lookup, an LMS's match: ``Ana`` is ``ana``), spaces at the ends
    dropped, and the apostrophes a spreadsheet hides at the start (csv_cell writes ``=SUM(1)`` as
    ``'=SUM(1)``, which a spreadsheet shows as ``=SUM(1)``, as it shows a student's own ``'=SUM(1)``). A name
    that reads as a number is the number (a spreadsheet shows ``007``, ``7.0`` and ``7e0`` all as 7).
    Two names are kept apart only where they differ in this form; it errs toward "the same".
    """
    shown = unicodedata.normalize("NFKC", inert_line(name))
    shown = unicodedata.normalize("NFKC", shown.casefold()).strip().lstrip("'").strip()
    try:
        return f"number {float(shown)!r}"
    except ValueError:
        return shown


def is_inert(text, *, one_line=False):
    """Whether ``text`` holds no active character (for tests and assertions at the boundary)."""
    for character in text:
        if character in "\n\t":
            if one_line:
                return False
            continue
        if unicodedata.category(character) in _ACTIVE_CATEGORIES:
            return False
    return True
