"""A student's notebook made inert for whoever reads it: nbgrader's formgrader, the feedback HTML, Jupyter.

nbconvert writes a notebook's HTML as it finds it: raw HTML in markdown cells
and in raw cells, ``text/html`` and ``application/javascript`` outputs, widget
state and ``javascript:`` links all reach the page as they are, so a student's
notebook can run script in the instructor's formgrader or in the feedback page.
``MakeInert`` is the nbgrader preprocessor that stops it, on what autograde saves
and again before generate_feedback writes its HTML:

* a markdown cell (and a ``text/markdown`` output) that holds raw HTML, a link
  or an image whose URL is not plainly safe, or a mermaid block (nbconvert
  7.17 copies its text into the page unescaped) is replaced by its own HTML as
  nbconvert renders it, cleaned by nh3; any other markdown is left exactly as
  it is, so ordinary cells (the lesson's own) keep their text;
* raw cells that an HTML export copies into the page are cleaned by nh3;
* of an output, text, LaTeX, PNG and JPEG are kept, HTML is cleaned by nh3, and
  the rest (JavaScript, widget views, SVG, PDF, unknown types) is dropped, with
  a line of text saying what was left out; image metadata is kept only where it
  is a plain number (nbconvert writes ``width`` into the tag unquoted);
* attachments keep their raster images; the notebook's widget state goes.

Streams and errors are left alone: nbconvert escapes them, escape sequences
included (``ansi2html`` turns them into spans of its own).
"""

import copy
import re
from html.parser import HTMLParser

import nh3
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor, OverwriteCells
from pygments.token import STANDARD_TYPES
from traitlets import List

TEXT_OUTPUTS = frozenset({"text/plain", "text/latex"})  # nbconvert escapes both
IMAGE_OUTPUTS = frozenset({"image/png", "image/jpeg"})
IMAGE_ATTACHMENTS = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
LINK_SCHEMES = frozenset({"http", "https", "mailto"})

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_IMAGE_DATA_URL = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]*", re.IGNORECASE)
# What a browser ignores in a URL before it reads the scheme: tabs and newlines anywhere ("java\tscript:" is
# javascript:), and C0 controls and spaces in front.
_URL_IGNORED = re.compile(r"[\t\n\r]")
_C0_AND_SPACE = "".join(chr(code) for code in range(0x21))

# nh3's default tags, less those that reorder what a reader sees (bdo, bdi) or carry links of their own (map).
_TAGS = frozenset(nh3.ALLOWED_TAGS) - {"bdo", "bdi", "map", "area"}
_ATTRIBUTES = {tag: set(names) for tag, names in nh3.ALLOWED_ATTRIBUTES.items() if tag in _TAGS}
_ATTRIBUTES["a"] = {"href", "title"}
_ATTRIBUTES["img"] = {"src", "alt", "title", "width", "height"}
for _cell in ("th", "td"):
    _ATTRIBUTES[_cell] = _ATTRIBUTES.get(_cell, set()) | {"style"}  # markdown tables align columns by style
# The classes nbconvert's own markdown rendering uses (Pygments' token classes, the heading anchors); any other
# class could borrow the page's CSS (a fixed bar over the grades, say).
_CLASSES = frozenset(STANDARD_TYPES.values()) - {""} | {"highlight", "hll", "anchor-link"}


def _url_of(value):
    return _URL_IGNORED.sub("", value).lstrip(_C0_AND_SPACE)


def safe_link(url):
    """Whether a link's (decoded) href can only navigate: relative, an anchor, or http, https, mailto."""
    url = _url_of(url)
    scheme = _SCHEME.match(url.lower())
    return scheme.group(1) in LINK_SCHEMES if scheme else not url.startswith(("\\", "/\\"))


def safe_image(url):
    """Whether an image's (decoded) src loads nothing from elsewhere: a raster data: URL or a relative path."""
    url = _url_of(url)
    if _SCHEME.match(url.lower()):
        return _IMAGE_DATA_URL.fullmatch(url) is not None
    return not url.startswith(("//", "\\", "/\\"))  # a protocol-relative URL is another site's


def _attribute(tag, name, value):
    # Called by nh3 on every attribute it would keep, once its own URL scheme check has passed.
    if name == "href":
        return value if safe_link(value) else None
    if name == "src":
        return value if tag == "img" and safe_image(value) else None
    return value


_CLEANER = nh3.Cleaner(
    tags=set(_TAGS), clean_content_tags={"script", "style"}, attributes=_ATTRIBUTES,
    attribute_filter=_attribute, url_schemes=set(LINK_SCHEMES) | {"data"},
    allowed_classes={tag: set(_CLASSES) for tag in ("span", "div", "pre", "code", "a")},
    filter_style_properties={"text-align"}, strip_comments=True)


def clean_html(text):
    """HTML with only inert markup left: no script, no event handler, no link or image outside the policy."""
    return _CLEANER.clean(text)


class _Renderer(IPythonRenderer):
    """nbconvert's markdown renderer (the HTML a notebook's markdown becomes), noting whatever could be active.

    ``active`` turns true on raw HTML, a mermaid block, and a link or image whose URL, as it is written into
    the page, fails ``safe_link`` or ``safe_image``. An attachment that is missing renders as an empty image
    (nbconvert would stop the whole export on it).
    """

    def __init__(self, attachments=None):
        super().__init__(escape=False, attachments=attachments or {})
        self.active = False

    def inline_html(self, html_text):
        self.active = True
        return super().inline_html(html_text)

    def block_html(self, html_text):
        self.active = True
        return super().block_html(html_text)

    def block_code(self, code, info=None):
        if info and info.strip().startswith("mermaid"):
            self.active = True
        return super().block_code(code, info)

    def link(self, text, url, title=None):
        rendered = super().link(text, url, title)
        # The href as the browser reads it, from the tag itself: whatever unescaping the renderer did is done.
        if not safe_link(_first_attribute(rendered, "href")):
            self.active = True
        return rendered

    def image(self, text, url, title=None):
        rendered = super().image(text, url, title)
        if not safe_image(_first_attribute(rendered, "src")):
            self.active = True
        return rendered

    def _embed_image_or_attachment(self, src):
        if src.startswith("attachment:") and src[len("attachment:"):] not in self.attachments:
            self.active = True  # only the cleaned HTML, which has no reference left to it, can be exported
            return ""
        return super()._embed_image_or_attachment(src)


class _FirstTag(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.attributes = None

    def handle_starttag(self, tag, attrs):
        if self.attributes is None:
            self.attributes = dict(attrs)

    handle_startendtag = handle_starttag


def _first_attribute(rendered, name):
    parser = _FirstTag()
    parser.feed(rendered)
    parser.close()
    value = (parser.attributes or {}).get(name)
    return "" if value is None else value


def _render(source, attachments):
    renderer = _Renderer(attachments)
    return MarkdownWithMath(renderer=renderer).render(source), renderer.active


def clean_markdown(source, attachments=None):
    """Markdown that renders to nothing active: ``source`` itself when it renders safe as it is, else its HTML.

    The HTML is nbconvert's rendering of ``source``, cleaned by nh3, on one line inside a ``<div>``: markdown
    passes an HTML block on one line through as it is, so what a browser gets is what nh3 let through.
    """
    rendered, active = _render(source, attachments)
    if not active:
        return source
    if source.startswith("<div>") and source.endswith("</div>") and _one_block(clean_html(source[5:-6])) == source:
        return source  # cleaned already, here: cleaning twice changes nothing
    return _one_block(clean_html(rendered))


def _one_block(cleaned):
    # A newline would end the HTML block and hand the rest back to markdown; &#10; is the same character in
    # text and in attributes, and nh3 never writes one inside a tag.
    return "<div>" + cleaned.replace("\r", "").replace("\n", "&#10;") + "</div>"


def _text(value):
    return "".join(value) if isinstance(value, list) else str(value)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _image_metadata(metadata, mime):
    """What nbconvert may write into an image's tag: width and height as numbers, unconfined, alt text."""
    own = metadata.get(mime) if isinstance(metadata.get(mime), dict) else {}
    kept = {}
    for key in ("width", "height"):
        value = own.get(key, metadata.get(key))
        if _number(value):
            kept[key] = value
    if isinstance(own.get("unconfined"), bool):
        kept["unconfined"] = own["unconfined"]
    if isinstance(own.get("alt"), str):
        kept["alt"] = own["alt"]  # written quoted and escaped
    return kept


def inert_output(output):
    """One output made inert, or None where nothing of it is safe to show (an unknown output type)."""
    kind = output.get("output_type")
    if kind in ("stream", "error"):
        return output
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") if isinstance(output.get("data"), dict) else {}
    metadata = output.get("metadata") if isinstance(output.get("metadata"), dict) else {}
    kept, kept_metadata, dropped = {}, {}, []
    for mime, value in data.items():
        if mime in TEXT_OUTPUTS:
            kept[mime] = _text(value)
        elif mime in IMAGE_OUTPUTS and isinstance(value, str) and _BASE64.fullmatch(value):
            kept[mime] = value  # written into a src="data:..." attribute: base64 only
            kept_metadata[mime] = _image_metadata(metadata, mime)
        elif mime == "text/html":
            kept[mime] = clean_html(_text(value))
        elif mime == "text/markdown":
            kept[mime] = clean_markdown(_text(value))
        else:
            dropped.append(mime)
    if dropped and "text/plain" not in kept:
        kept["text/plain"] = f"[not shown here: {', '.join(sorted(dropped))} output]"
    output["data"] = NotebookNode(kept)
    output["metadata"] = NotebookNode({mime: NotebookNode(value) for mime, value in kept_metadata.items()})
    return output


def inert_attachments(attachments):
    """The attachments of a markdown cell with their raster images only (base64 text, as nbformat has it)."""
    kept = {}
    for name, bundle in (attachments or {}).items():
        if isinstance(bundle, dict):
            images = {mime: value for mime, value in bundle.items()
                      if mime in IMAGE_ATTACHMENTS and isinstance(value, str) and _BASE64.fullmatch(value)}
            if images:
                kept[name] = images
    return kept


def _shown_as_html(cell):
    # nbconvert copies a raw cell into an HTML page when its raw_mimetype (lowercased) is "" or text/html.
    mime = cell.get("metadata", {}).get("raw_mimetype", "")
    return not isinstance(mime, str) or mime.lower() in ("", "text/html")


def make_inert(cell):
    """One cell made inert in place (see the module's docstring); returns it."""
    if cell.cell_type == "markdown":
        if "attachments" in cell:
            cell.attachments = inert_attachments(cell.attachments)
        cell.source = clean_markdown(cell.source, cell.get("attachments"))
    elif cell.cell_type == "raw" and _shown_as_html(cell):
        cell.source = clean_html(cell.source)
    elif cell.cell_type == "code":
        cell.outputs = [output for output in map(inert_output, cell.get("outputs", [])) if output is not None]
    return cell


# The titles a cell gives its figures (plt.title("..."), ax.set_title('...'), fig.suptitle(...), ax.set(title="...")):
# a plain string literal only, read from the cell's text, never run.
_TITLE = re.compile(r"""(?:\b(?:title|set_title|suptitle)\(\s*[rf]?|\btitle\s*=\s*r?)"""
                    r"""(["'])((?:(?!\1)[^\\\n]){1,120})\1""")


def describe_images(cell):
    """Alt text for each picture a code cell printed that has none: what its titles say, or which cell made it.

    nbconvert's HTML gives an image with no alt text a placeholder and warns once per page ("Alternative text is
    missing on N image(s)"); a screen reader then says nothing useful. The text is written quoted and escaped.
    """
    titles = [match.group(2) for match in _TITLE.finditer(cell.get("source") or "")]
    count = 0
    for output in cell.get("outputs", []):
        for mime in IMAGE_OUTPUTS:
            if mime not in output.get("data", {}):
                continue
            own = output.setdefault("metadata", NotebookNode()).setdefault(mime, NotebookNode())
            if not isinstance(own.get("alt"), str) or not own["alt"].strip():
                count += 1
                about = "; ".join(titles) if titles else "no title in its code"
                own["alt"] = f"Figure {count} printed by this cell ({about})"


# nbconvert's HTML exporter configures ``NbConvertBase.display_data_priority``, which every preprocessor inherits;
# nbgrader's base class declares the trait again without config=True, so traitlets warned once per nbgrader
# preprocessor of the feedback ("Config option `display_data_priority` not recognized by ..."), four warnings a
# run that no instructor could act on. Each feedback step takes it as configurable again: the value is nbconvert's
# own, and no step reads it.
_PRIORITY = List(NbGraderPreprocessor.class_traits()["display_data_priority"].default()).tag(config=True)


class FeedbackStep(NbGraderPreprocessor):
    """An nbgrader preprocessor of the kit's feedback that accepts nbconvert's output priority (see above)."""

    display_data_priority = _PRIORITY


class ClearHiddenTestsInFeedback(ClearHiddenTests):
    """nbgrader's ClearHiddenTests (configured as ``ClearHiddenTests``), accepting nbconvert's output priority."""

    display_data_priority = _PRIORITY


class OverwriteCellsQuietly(OverwriteCells):
    """nbgrader's OverwriteCells (configured as ``OverwriteCells``), without a false warning on every hidden test.

    The gradebook keeps a locked cell's checksum from before generate_assignment clears its hidden tests, and the
    released cell's text lacks them: for each such cell of every submission, OverwriteCells warned "Attribute
    'checksum' ... has changed!" (nbgrader issue 1961), and a cell a student did edit looked the same as one
    nobody touched. Here a locked cell whose text is exactly what was released (the gradebook's text with its
    hidden tests cleared) gets the gradebook's text back first, so OverwriteCells finds it unchanged; a cell
    that differs from what was released is left to OverwriteCells, which warns and puts the original back.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and cell.cell_type == "code":
            try:
                source_cell = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except Exception:  # noqa: BLE001  (a missing cell is OverwriteCells' to report, below)
                source_cell = None
            if source_cell is not None and source_cell.locked and cell.source != source_cell.source:
                released = copy.deepcopy(cell)  # a grade cell's metadata, which ClearHiddenTests checks
                released.source = source_cell.source
                clear = ClearHiddenTests(parent=self)  # the course's delimiters, from its configuration
                released, _ = clear.preprocess_cell(released, resources, cell_index)
                if cell.source == released.source:
                    cell.source = source_cell.source
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        kept = cell.metadata.get("nbgrader")
        if grade_id is not None and isinstance(kept, dict) and "grade_id" not in kept:
            # A cell of another notebook (another unit's handed in here): OverwriteCells drops the id it does not
            # know but keeps the cell's grade or solution flag, on which nbgrader 0.9's add_missing_grade_cells
            # then fails (KeyError 'grade_id') and the student gets no row. Not this assignment's cell: a plain one.
            del cell.metadata["nbgrader"]
        return cell, resources

    def add_missing_grade_cells(self, nb, resources):
        """nbgrader's, where the cell before a missing grade cell may be missing too: each missing grade cell goes
        back after the nearest earlier cell of the source that the notebook holds (the start, where none).

        nbgrader 0.9 puts it after the one cell before it in the source and fails (KeyError) where that one is
        missing as well, as in a notebook of another unit handed in here, or one whose solution cell and test
        cell were both deleted: the student got no row. Here the row is made, and the grader says why it scores
        what it scores (autograder/core/recognize.py)."""
        source = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        cells = source.source_cells
        order = [cell.name for cell in cells]
        grade_cells = {cell.name: cell for cell in source.grade_cells}
        solutions = {cell.name for cell in source.solution_cells}
        for place, grade_id in enumerate(order):
            if grade_id not in grade_cells:
                continue
            held = {}  # {grade id: index} of the graded and solution cells the notebook holds (the ones put back too,
            for index, cell in enumerate(nb.cells):  # which are plain dicts inside)
                marks = (cell.get("metadata") or {}).get("nbgrader") or {}
                if (marks.get("grade") or marks.get("solution")) and isinstance(marks.get("grade_id"), str):
                    held[marks["grade_id"]] = index
            if grade_id in held:
                continue
            self.log.warning(f"Missing grade cell {grade_id} encountered, adding to notebook")
            added = self.missing_cell_transform(cells[place], grade_cells[grade_id].max_score,
                                                is_solution=grade_id in solutions)
            before = [held[name] for name in order[:place] if name in held]
            nb.cells.insert(before[-1] + 1 if before else 0, added)
        return nb, resources


class MakeInert(FeedbackStep):
    """Make a student's notebook inert for the pages that show it (the formgrader, the feedback HTML)."""

    def preprocess(self, nb, resources):
        # Widget state is rendered by the widget manager's own script, HTML widgets and all.
        nb.metadata.pop("widgets", None)
        for cell in nb.cells:
            make_inert(cell)
            if cell.cell_type == "code":
                describe_images(cell)
        return nb, resources


# ---------------------------------------------------------------------------------------------------------
# Formulas without internet access. nbconvert leaves $...$ in the page for MathJax, which it loads from a
# CDN: a student reading the feedback offline sees raw TeX. OfflineMath writes each formula of a markdown
# cell as MathML, which current browsers draw natively, so the page needs nothing from elsewhere. The MathML
# comes from latex2mathml, whose output is not safe as it is (\text{<img ...>} passes through unescaped), so
# it is parsed as XML and written again from an allowlist of MathML elements and attributes; a formula whose
# conversion fails, or does not parse, stays as its TeX, escaped (MathJax still draws it when online).

MATHML_TAGS = frozenset({
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac", "msqrt",
    "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "mpadded", "mphantom",
    "menclose", "merror"})  # no annotation-xml, mglyph or malignmark: the ones sanitiser bypasses go through
MATHML_ATTRIBUTES = frozenset({
    "display", "displaystyle", "scriptlevel", "mathvariant", "mathsize", "stretchy", "fence", "separator",
    "symmetric", "largeop", "movablelimits", "accent", "accentunder", "lspace", "rspace", "minsize", "maxsize",
    "linethickness", "columnalign", "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines",
    "frame", "width", "height", "depth", "voffset", "notation", "form"})
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9 .%+\-]{0,40}")
_MATHML_NAMESPACE = "{http://www.w3.org/1998/Math/MathML}"


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_TEXT_ESCAPE = re.compile(r"\\([_%&#${}])")  # \_ \% \& \# \$ \{ \} in TeX's text mode: the character itself
# A text group of plain characters and text-mode escapes (\texttt{rel\_k}, \text{50\% of \#1}). latex2mathml
# trips on some escapes there (\} ends its group early and leaves a backslash; \# and \& make it fail, and the
# formula would show as TeX), so each such group is handed to it as a placeholder word and its text put back in
# the MathML. Anything else in a group (a command, a brace, < or >) is left to latex2mathml as it is.
_TEXT_GROUP = re.compile(r"\\(text|texttt|textrm|textsf|textit|textbf)\{((?:\\[_%&#${} ]|[^{}\\<>&#$%~^_])*)\}")
_PLACEHOLDER = re.compile(r"KITTEXT(\d+)")


def _text_of_group(group):
    """The characters a text group shows: each escape its character, each space one that MathML keeps."""
    return re.sub(r"\\(.)", r"\1", group).replace(" ", "\N{NO-BREAK SPACE}")


def _written(element, groups=()):
    tag = element.tag[len(_MATHML_NAMESPACE):] if element.tag.startswith(_MATHML_NAMESPACE) else element.tag
    if tag not in MATHML_TAGS:
        raise ValueError(f"not a MathML element the feedback shows: {tag}")
    attributes = "".join(f' {name}="{_escape(value)}"' for name, value in sorted(element.attrib.items())
                         if name in MATHML_ATTRIBUTES and _PLAIN_VALUE.fullmatch(value))
    if tag == "math":
        attributes = ' xmlns="http://www.w3.org/1998/Math/MathML"' + attributes
    text = element.text or ""
    if tag == "mtext":  # \texttt{rel\_k}: latex2mathml keeps text mode's escapes, which would show as "rel\_k"
        placeholder = _PLACEHOLDER.fullmatch(text)
        if placeholder and int(placeholder.group(1)) < len(groups):
            text = _text_of_group(groups[int(placeholder.group(1))])
        else:
            text = _TEXT_ESCAPE.sub(r"\1", text)
    inner = _escape(text) + "".join(_written(child, groups) + _escape(child.tail or "") for child in element)
    return f"<{tag}{attributes}>{inner.replace(chr(10), ' ').replace(chr(13), ' ')}</{tag}>"


def mathml(tex, display=False):
    """The formula ``tex`` as MathML built only from the allowlist above, or None where it cannot be."""
    import xml.etree.ElementTree as ElementTree

    from latex2mathml.converter import convert

    groups = []

    def placeholder(match):
        groups.append(match.group(2))
        return f"\\{match.group(1)}{{KITTEXT{len(groups) - 1}}}"

    try:
        converted = convert(_TEXT_GROUP.sub(placeholder, tex), display="block" if display else "inline")
        return _written(ElementTree.fromstring(converted), groups)
    except Exception:  # latex2mathml raises many kinds on TeX it does not know; the TeX is shown instead
        return None


class _MathRenderer(_Renderer):
    """nbconvert's rendering with each formula written by ``mathml``; ``formulas`` counts them."""

    def __init__(self, attachments=None):
        super().__init__(attachments)
        self.formulas = 0

    def _formula(self, tex, display, fallback):
        self.formulas += 1
        return mathml(tex, display) or fallback

    def inline_math(self, body):
        return self._formula(body, False, super().inline_math(body))

    def block_math(self, body):
        return self._formula(body, True, super().block_math(body))

    def latex_environment(self, name, body):
        return self._formula(f"\\begin{{{name}}}{body}\\end{{{name}}}", True, super().latex_environment(name, body))


def offline_math(source, attachments=None):
    """A markdown cell's text with its formulas as MathML, or the text as it is where it has no formula.

    Run after ``make_inert``: a cell that renders to anything active is an HTML block by then and is left
    alone (its formulas stay TeX). Otherwise the cell becomes its own rendering, on one line in a ``<div>``,
    with each formula written by ``mathml``; the rest is nbconvert's rendering of markdown that is safe as it is.
    """
    renderer = _MathRenderer(attachments)
    with_math = MarkdownWithMath(renderer=renderer).render(source)
    if renderer.active or not renderer.formulas:
        return source  # an HTML block already (see make_inert), or no formula: nothing to change
    return _one_block(with_math)


class OfflineMath(FeedbackStep):
    """Each formula of the feedback's markdown as MathML, so that it renders without internet access."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                cell.source = offline_math(cell.source, cell.get("attachments"))
        return nb, resources
