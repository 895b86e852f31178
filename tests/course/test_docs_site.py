"""The documentation site: it builds with --strict, works with no network, shows its formulas as MathML, and the
README stays a short entry point that keeps the two commands.

The site needs the kit's `docs` extra (mkdocs, mkdocs-material, latex2mathml), which the test extra includes.
"""

import importlib.util
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "docs" / "hooks" / "math.py"
# The pages whose formulas the site is for: each must show MathML.
MATH_PAGES = ("grading.md", "units/positional_encodings.md", "units/rotary_alibi.md", "units/long_context.md",
              "benchmarks.md")
DEMO_COMMAND = ("python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e . "
                "&& .venv/bin/python -m autograder demo")
TEST_COMMAND = ('python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e ".[test]" '
                '&& .venv/bin/pip install --no-deps "timm>=1.0,<2" && .venv/bin/python -m pytest --full')
README_MAX_LINES = 120


def _load_hook():
    # Not imported as `math`: that is the standard library's name.
    spec = importlib.util.spec_from_file_location("docs_math_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def hook():
    return _load_hook()


# ---- The hook's converter ----

def test_inline_math_becomes_inline_mathml(hook):
    out = hook.convert("the angle $t\\theta_i$ of pair i")
    assert out.startswith("the angle <math") and out.endswith("</math> of pair i"), out
    assert 'display="inline"' in out and "&#x003B8;" in out  # theta
    assert "$" not in out


def test_display_math_becomes_block_mathml_without_its_paragraph(hook):
    text, formulas = hook.replace_math("before\n\n$$\\frac{a}{b}$$\n\nafter\n")
    assert len(formulas) == 1 and 'display="block"' in formulas[0] and "<mfrac>" in formulas[0]
    assert "$" not in text
    # What Markdown makes of the placeholder paragraph: the <p> goes, the formula stays.
    token = text.split("\n")[2]
    html = hook.restore_math(f"<p>before</p>\n<p>{token}</p>\n<p>after</p>", formulas)
    assert html == f"<p>before</p>\n{formulas[0]}\n<p>after</p>"


def test_dollars_in_code_spans_and_fenced_blocks_are_left_alone(hook):
    source = ("run `echo $HOME` and ``a `$x$` b`` then $y$\n"
              "```bash\nexport PATH=\"$PWD/bin:$PATH\"   # $z$\n```\n"
              "~~~~\n$w$\n~~~~\n")
    out = hook.convert(source)
    assert "`echo $HOME`" in out and "``a `$x$` b``" in out
    assert 'export PATH="$PWD/bin:$PATH"   # $z$' in out and "\n$w$\n" in out
    assert out.count("<math") == 1 and "<mi>y</mi>" in out


def test_an_escaped_dollar_is_a_literal_dollar_not_math(hook):
    out = hook.convert("it costs \\$5 and \\$6, not $x$")
    assert out.startswith("it costs &#36;5 and &#36;6, not <math"), out
    assert out.count("<math") == 1


def test_prose_dollars_that_are_not_math_stay_as_they_are(hook):
    # pandoc's rule: no space inside the delimiters, no digit right after the closing one.
    assert hook.convert("between $5 and $6 a day") == "between $5 and $6 a day"
    assert hook.convert("a $ b $ c") == "a $ b $ c"


# ---- The built site ----

class _Page(HTMLParser):
    """What a built page loads, and its prose (text outside code, scripts and styles, entities left as written)."""

    SKIP = {"code", "pre", "script", "style", "math"}

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.loads, self.prose, self.math, self._skipping = [], [], 0, 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for attribute in ("src", "href"):
            if tag in ("script", "link", "img", "iframe", "source", "embed") and attrs.get(attribute):
                self.loads.append((tag, attrs[attribute]))
        self.math += tag == "math"
        self._skipping += tag in self.SKIP

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self._skipping -= tag in self.SKIP

    def handle_endtag(self, tag):
        self._skipping -= tag in self.SKIP

    def handle_data(self, data):
        if self._skipping <= 0:
            self.prose.append(data)


def _nav_pages(nav):
    for entry in nav:
        if isinstance(entry, str):
            yield entry
        elif isinstance(entry, dict):
            for value in entry.values():
                yield from ([value] if isinstance(value, str) else _nav_pages(value))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    assert "WARNING" not in build.stderr, build.stderr
    return out


@pytest.fixture(scope="module")
def pages(site):
    found = {}
    for path in site.rglob("*.html"):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        found[path.relative_to(site).as_posix()] = page
    return found


def test_every_page_in_the_nav_is_built(site):
    import yaml
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = list(_nav_pages(config["nav"]))
    assert len(nav) >= 10, nav
    for source in nav:
        assert (ROOT / "docs" / source).is_file(), source
        # use_directory_urls is off, so that links work from file://: page.md becomes page.html
        assert (site / source).with_suffix(".html").is_file(), f"{source} was not built"


def test_the_site_loads_nothing_from_the_network(site, pages):
    assert len(pages) >= 10
    for name, page in pages.items():
        for tag, url in page.loads:
            assert not re.match(r"(?i)^\s*(https?:)?//", url), f"{name}: <{tag}> loads {url}"
    # the theme's own scripts are in the site itself
    assert (site / "assets" / "javascripts").is_dir()


def test_the_math_pages_show_mathml_and_no_tex_is_left(pages):
    for source in MATH_PAGES:
        page = pages[str(Path(source).with_suffix(".html").as_posix())]
        assert page.math > 0, f"{source} has no <math> element"
    for name, page in pages.items():
        prose = "".join(page.prose)
        assert "MATHMLPLACEHOLDER" not in prose, name
        assert "$" not in prose, f"{name}: a TeX delimiter was left: {prose[max(prose.find('$') - 60, 0):][:120]!r}"
        leftover = re.search(r"\\(frac|theta|sqrt|cdot|operatorname|mathrm|begin|lvert|le)\b", prose)
        assert leftover is None, f"{name}: TeX left in the text: {leftover.group(0)}"


# ---- The README ----

def test_the_readme_is_short_and_keeps_both_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES
    fenced = re.findall(r"```bash\n(.*?)```", readme, re.DOTALL)
    assert any(DEMO_COMMAND in block for block in fenced), "the demo command is not in a ```bash block"
    assert any(TEST_COMMAND in block for block in fenced), "the test command is not in a ```bash block"


def test_the_readme_links_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert any(link.startswith("docs/") for link in relative)
    for link in relative:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"
