"""TeX math to MathML at build time, so that formulas render with no JavaScript and no internet.

A page writes ``$...$`` for inline math and ``$$...$$`` for display math. Before Markdown runs, each formula
is converted with latex2mathml and replaced by a placeholder word, which Markdown leaves alone; after
Markdown, each placeholder is swapped for its MathML. (MathML put straight into the Markdown would be read
as Markdown too: an ``*`` or ``_`` inside it could become emphasis.)

Code is left alone: fenced blocks (``` or ~~~, indented or not) and code spans, whatever their backtick count.
``\\$`` writes a literal dollar sign. An inline formula follows pandoc's rule, so that prices and shell
variables in prose are not math: the opening ``$`` is not followed by a space, the closing one is not
preceded by a space nor followed by a digit.
"""

import re

from latex2mathml.converter import convert as _tex_to_mathml

# A word Markdown leaves as it is (no underscores, no asterisks); the number tells the formulas apart.
_TOKEN = "MATHMLPLACEHOLDER{}X"
_TOKEN_PATTERN = re.compile(r"MATHMLPLACEHOLDER(\d+)X")
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_DOLLAR_ENTITY = "&#36;"  # a literal dollar in the HTML; a `$` would read as an unconverted delimiter

# Outside code: $$...$$ (may span lines), then $...$ on one line; \$ is a literal dollar.
_MATH = re.compile(
    r"(?P<escaped>\\\$)"
    r"|\$\$(?P<display>.+?)\$\$"
    r"|\$(?P<inline>[^\s$](?:[^$\n]*?[^\s$\\])?)\$(?!\d)",
    re.DOTALL,
)
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)


def mathml(tex, display=False):
    """One formula's MathML; a display formula as a block of its own."""
    return _tex_to_mathml(tex.strip(), display="block" if display else "inline")


def _convert_prose(text, formulas):
    """Replace the math in a stretch of prose (no code in it) by placeholders, collected in ``formulas``."""
    def replace(match):
        if match.group("escaped"):
            return _DOLLAR_ENTITY
        display = match.group("display") is not None
        formulas.append(mathml(match.group("display") if display else match.group("inline"), display))
        token = _TOKEN.format(len(formulas) - 1)
        return token

    return _MATH.sub(replace, text)


def _convert_outside_code_spans(text, formulas):
    pieces, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces.append(_convert_prose(text[last:span.start()], formulas))
        pieces.append(span.group(0))
        last = span.end()
    pieces.append(_convert_prose(text[last:], formulas))
    return "".join(pieces)


def replace_math(markdown):
    """Markdown with each formula replaced by a placeholder, and the list of their MathML, in order."""
    formulas, out, prose = [], [], []
    fence = None  # the fence that opened the code block we are in, if any
    for line in markdown.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if fence is None and opening:
            out.append(_convert_outside_code_spans("".join(prose), formulas))
            prose = []
            fence = opening.group(2)
            out.append(line)
        elif fence is not None:
            # A closing fence: the same character, at least as long, nothing after it.
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = None
            out.append(line)
        else:
            prose.append(line)
    out.append(_convert_outside_code_spans("".join(prose), formulas))
    return "".join(out), formulas


def restore_math(html, formulas):
    """HTML with each placeholder replaced by its MathML; a display formula written as a paragraph of its own
    (``$$`` on its own lines) loses the <p> around it."""
    def formula(match):
        return formulas[int(match.group(1))]

    html = re.sub(r"<p>\s*(MATHMLPLACEHOLDER\d+X)\s*</p>", lambda m: _TOKEN_PATTERN.sub(formula, m.group(1)), html)
    return _TOKEN_PATTERN.sub(formula, html)


def convert(markdown):
    """The whole round trip on plain text, for tests: Markdown with its formulas as MathML."""
    text, formulas = replace_math(markdown)
    return restore_math(text, formulas)


# MkDocs hooks: the formulas of each page, kept from its Markdown until its HTML is made.
_PAGES = {}


def on_page_markdown(markdown, page, config, files):
    text, formulas = replace_math(markdown)
    _PAGES[page.file.src_uri] = formulas
    return text


def on_page_content(html, page, config, files):
    return restore_math(html, _PAGES.pop(page.file.src_uri, []))
