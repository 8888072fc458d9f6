"""The rendered book as a reader meets it, checked in a real browser (headless Chromium).

``make test`` runs this module after ``tools/render_book.py`` has rendered the committed notebooks
into ``_build/test/_build/html`` (set ``LOWRANK_BOOK_HTML`` to check another build, for instance
``_build/html`` after ``make book``). The pages are served over HTTP on 127.0.0.1 and opened with
Playwright driving Debian's ``/usr/bin/chromium`` (``CHROMIUM`` overrides the path; Playwright never
downloads a browser here). For ``index.html`` and every page in ``_toc.yml`` it checks: no
JavaScript error in the console, no failed request and no request leaving 127.0.0.1, every image
loaded, every piece of math typeset by MathJax without errors and no raw ``$$`` left in the text,
every internal link pointing at an existing file and anchor. Chapter pages must also carry their
number, a lead paragraph under the title, the closing "What to take away", the download button for their
notebook, the generated re-run box and one box per sphinx-proof directive in their source; the
bibliography lists every entry of the .bib files; the execution report lists every chapter as
succeeded. A full-page PNG screenshot of each page goes to ``_build/screenshots/`` (mirroring the
page's path; ``LOWRANK_SCREENSHOTS`` overrides the folder), and one at phone width to
``_build/screenshots/phone/``.

At desktop (1280 px) and phone (390 px) width, every page is also checked as a reader sees it
(as a reader would): every image keeps its natural aspect ratio and sits in a numbered, captioned figure; no
raw ``$`` or TeX is left in the text; no stderr or error output block is shown; the page does not
scroll sideways (the elements that stick out are named) and no formula, image, table or code is
cut off by a box that hides its overflow; and chapter prose shows values, not the
names of the chapter's parameters. Each failure names the page, the width and the element (its
section, file name or text). The re-run box must list every scale with its hardware and time, and
link the source archive and "Running it yourself".

And as a reader who wants the answer on any screen: at 390 px the visible hamburger opens the
chapter list and the contents button the page contents (at 1280 px the hamburger hides and shows
the chapter list); every table cell is padded by at least 3 px and numbers are right-aligned; every
table in a chapter and on the landing page has a numbered caption; pasted values are not bold in
running text, and no paragraph of running text is set in bold; a chapter's lead is in the body
weight and about four lines at most on a phone; no raw MyST role or directive markup is left;
parameter cells are folded away; the landing page's first screen, at both widths, holds each
paper's answer to the title question whole, and none of its tables scrolls sideways; no figure text
is drawn smaller than ``lowrank.book.figures.MIN_TEXT_PX`` (9 CSS px) at either width, computed from
the size of each figure's smallest text and the width the browser drew the chosen variant at (a
chapter or landing-page figure whose text size is unknown fails too: its notebook predates the
figure formatter); and every figure's plotting area takes at least
``lowrank.book.figures.MIN_PLOT_FRAC`` of its width and none of its texts is drawn over another, in
the variant shown (measured when the figure was drawn; required on the landing page).

Without Chromium (``tools/ensure_chromium.sh`` installs it when it can) or Playwright the browser
tests are skipped with the reason, except under CI (``CI=true``), where they fail.
"""
from __future__ import annotations

import ast
import base64
import functools
import html.parser
import http.server
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
import yaml

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("LOWRANK_BOOK_HTML", ROOT / "_build" / "test" / "_build" / "html")).resolve()
SCREENSHOTS = Path(os.environ.get("LOWRANK_SCREENSHOTS", ROOT / "_build" / "screenshots")).resolve()
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
IN_CI = os.environ.get("CI", "").lower() == "true"

# Flags for a closed network: no background services, updates or sync, which would otherwise
# flood the log with refused connections. Playwright adds a fresh --user-data-dir per launch.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio",
]
VIEWPORT = {"width": 1280, "height": 900}
# The widths every page is checked at: a laptop, and a phone held upright (iPhone 12-15: 390 css px).
VIEWPORTS = {"desktop": VIEWPORT, "phone": {"width": 390, "height": 844}}
WIDTHS = tuple(VIEWPORTS)
PROOF_DIRECTIVE = re.compile(r"^\s*(`{3,}|:{3,})\{prf:(\w+)\}", re.MULTILINE)
# Hosts that serve scripts, styles or fonts to pages (links to project home pages are fine).
CDN_HOST = re.compile(
    r"(^|\.)(cdn[\w-]*\.[\w.-]+|[\w-]*cdn\.[\w.-]+|jsdelivr\.net|unpkg\.com|googleapis\.com|gstatic\.com|"
    r"use\.fontawesome\.com|kit\.fontawesome\.com|use\.typekit\.net|code\.jquery\.com|polyfill\.io|"
    r"esm\.sh|skypack\.dev)$")
URL = re.compile(r"https?://([A-Za-z0-9.-]+)[^\s\"'<>)]*")
# Dead defaults inside the speech-rule-engine that MathJax 3.2.2 bundles: MathJax points the engine
# at its own [mathjax]/sre/mathmaps (components/src/a11y/sre/sre_config.js); the other two are for
# Internet Explorer only. The browser test below proves that no request leaves 127.0.0.1.
MATHJAX_DEAD_URLS = (
    "https://cdn.jsdelivr.net/npm/speech-rule-engine@",
    "https://cdn.jsdelivr.net/npm/sre-mathmaps-ie@",
    "https://cdn.jsdelivr.net/npm/wicked-good-xpath@",
)


# --- what the book should contain: from the sources, not from the build --------------------

@dataclass(frozen=True)
class Page:
    path: str               # relative to the HTML root, e.g. "chapters/05_rank_barrier.html"
    source: Path | None     # the .md / .ipynb it is built from (None for index.html)
    numbered: bool = False  # in a numbered part of the toc: a chapter
    number: int | None = None

    @property
    def is_chapter(self) -> bool:
        return self.source is not None and self.source.suffix == ".ipynb" and self.path.startswith("chapters/")

    def __str__(self) -> str:
        return self.path


def _source_of(docname: str) -> Path:
    for suffix in (".ipynb", ".md", ".rst"):
        if (ROOT / f"{docname}{suffix}").is_file():
            return ROOT / f"{docname}{suffix}"
    raise FileNotFoundError(f"_toc.yml names {docname!r}, which has no .ipynb/.md/.rst source")


def book_pages() -> list[Page]:
    """index.html, then every document of _toc.yml in reading order; chapters numbered continuously."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf8"))
    pages = [Page("index.html", None), Page(f"{toc['root']}.html", _source_of(toc["root"]))]
    counter = 0

    def walk(entries, numbered):
        nonlocal counter
        for entry in entries or []:
            if "file" in entry:
                name = str(Path(entry["file"]).with_suffix("")) if entry["file"].endswith((".md", ".ipynb")) \
                    else entry["file"]
                number = None
                if numbered:
                    counter += 1
                    number = counter
                pages.append(Page(f"{name}.html", _source_of(name), numbered, number))
            walk(entry.get("sections"), numbered)

    for part in toc.get("parts", []):
        walk(part.get("chapters"), bool(part.get("numbered")))
    walk(toc.get("chapters"), bool(toc.get("numbered")))
    return pages


PAGES = book_pages()
CHAPTERS = [p for p in PAGES if p.is_chapter]


def source_text(page: Page) -> str:
    """Markdown of a page's source (all markdown cells of a notebook)."""
    if page.source is None:
        return ""
    if page.source.suffix == ".ipynb":
        nb = json.loads(page.source.read_text(encoding="utf8"))
        return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return page.source.read_text(encoding="utf8")


def notebook_parameters(notebook: Path) -> list[str]:
    """Names assigned in the notebook's cell tagged ``parameters``."""
    nb = json.loads(notebook.read_text(encoding="utf8"))
    [cell] = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    tree = ast.parse("".join(cell["source"]))
    return [t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]


def bib_entries() -> int:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf8"))
    text = "".join((ROOT / f).read_text(encoding="utf8") for f in config.get("bibtex_bibfiles", []))
    return len(re.findall(r"^\s*@(?!comment|string|preamble)\w+\s*\{", text, flags=re.MULTILINE | re.IGNORECASE))


# --- the built HTML, read as files --------------------------------------------------------

def _unavailable(reason: str):
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the browser test must run here)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def html_root() -> Path:
    if not (HTML / "index.html").is_file():
        _unavailable(f"no rendered book in {HTML}: run `make test`, or `python tools/render_book.py` first")
    return HTML


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.loads: list[str] = []  # URLs the page itself loads: scripts, stylesheets, icons, images

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag in ("script", "img", "iframe", "source", "audio", "video") and a.get("src"):
            self.loads.append(a["src"])
        if tag == "link" and a.get("href") and set((a.get("rel") or "").split()) & {
                "stylesheet", "preload", "icon", "modulepreload", "manifest"}:
            self.loads.append(a["href"])


@functools.lru_cache(maxsize=None)
def parsed(path: Path) -> _Collect:
    collector = _Collect()
    collector.feed(path.read_text(encoding="utf8", errors="replace"))
    return collector


def test_built_html_references_no_cdn(html_root):
    """No .html/.js/.css file names a CDN, and no page loads anything from another host."""
    offenders = []
    for path in sorted(html_root.rglob("*")):
        if path.suffix not in (".html", ".js", ".css") or "_sources" in path.relative_to(html_root).parts:
            continue
        rel = path.relative_to(html_root).as_posix()
        text = path.read_text(encoding="utf8", errors="replace")
        for match in URL.finditer(text):
            if not CDN_HOST.search(match.group(1).lower()):
                continue
            if rel.startswith("_static/mathjax/") and match.group(0).startswith(MATHJAX_DEAD_URLS):
                continue
            offenders.append(f"{rel}: {match.group(0)}")
        if path.suffix == ".html":
            offenders += [f"{rel} loads {url}" for url in parsed(path).loads
                          if urlsplit(url).scheme in ("http", "https") or url.startswith("//")]
    assert not offenders, "the book must read offline:\n" + "\n".join(sorted(set(offenders)))


def test_mathjax_is_served_locally_with_the_book_macros(html_root):
    chapter = html_root / CHAPTERS[0].path if CHAPTERS else html_root / PAGES[1].path
    text = chapter.read_text(encoding="utf8")
    scripts = [s for s in parsed(chapter).loads if "mathjax" in s.lower()]
    assert scripts, f"{chapter.name} loads no MathJax"
    for src in scripts:
        assert (chapter.parent / src.split("?")[0]).resolve().is_file(), f"{src} is not in the build"
    for macro in ("dhead", "dproj", "softmax", "rank", "erank", "srank", "Ebound"):
        assert f'"{macro}"' in text, f"TeX macro \\{macro} is not configured for MathJax"


# --- the book in a browser ------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(html_root):
    handler = functools.partial(_QuietHandler, directory=str(html_root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        _unavailable(f"Chromium not found at {CHROMIUM}: install Debian's `chromium` package "
                     "(tools/ensure_chromium.sh does it when run as root with apt-get)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the Python package playwright is not installed (it is in requirements/lock.txt: make setup)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class Visit:
    """What a reader's browser saw on one page."""
    url: str
    final_path: str
    errors: list[str] = field(default_factory=list)     # console errors, uncaught exceptions
    failed: list[str] = field(default_factory=list)     # failed or 4xx/5xx requests
    external: list[str] = field(default_factory=list)   # requests to another host (blocked)
    dom: dict = field(default_factory=dict)


DOM_PROBE = """async () => {
  const mj = window.MathJax;
  const mathjaxLoaded = !!(mj && mj.startup && mj.startup.promise);
  if (mathjaxLoaded) { await mj.startup.promise; }
  const mathErrors = [];
  if (mathjaxLoaded && mj.startup.document) {
    for (const item of mj.startup.document.math) {
      item.root.walkTree((node) => {
        const undefinedMacro = node.isKind('mtext') && node.attributes.get('mathcolor') === 'red';
        if (node.isKind('merror') || undefinedMacro) { mathErrors.push(item.math); }
      });
    }
  }
  const article = document.querySelector('article') || document.body;
  const rawDollars = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeValue.includes('$$') && !n.parentElement.closest(skip)) { rawDollars.push(n.nodeValue.trim().slice(0, 120)); }
  }
  const text = (el) => { const c = el.cloneNode(true); c.querySelectorAll('.headerlink, .section-number').forEach((x) => x.remove()); return c.textContent.trim(); };
  const h1 = article.querySelector('h1');
  let lead = h1 ? h1.nextElementSibling : null;
  const rerun = article.querySelector('.rerun-chapter');
  return {
    mathjaxLoaded,
    mathErrors,
    rawDollars,
    math: Array.from(article.querySelectorAll('.math'), (el) => ({ text: el.textContent.slice(0, 80), typeset: !!el.querySelector('mjx-container') })),
    mjxCount: article.querySelectorAll('mjx-container').length,
    images: Array.from(document.images, (img) => ({ src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0 })),
    links: Array.from(document.querySelectorAll('a[href]'), (a) => ({ raw: a.getAttribute('href'), abs: a.href })),
    ids: Array.from(document.querySelectorAll('[id], a[name]'), (el) => el.id || el.getAttribute('name')),
    h1: h1 ? text(h1) : null,
    h1Number: h1 && h1.querySelector('.section-number') ? h1.querySelector('.section-number').textContent.trim() : null,
    leadHtml: lead && lead.tagName === 'P' ? lead.innerHTML.trim() : null,
    h2: Array.from(article.querySelectorAll('section > h2'), text),
    proofs: article.querySelectorAll('div.proof.admonition').length,
    rerunText: rerun ? rerun.textContent : null,
    rerunRows: rerun ? rerun.querySelectorAll('table.rerun-chapter-parameters tbody tr').length : 0,
    rerunScales: rerun ? Array.from(rerun.querySelectorAll('table.rerun-chapter-scales tbody tr'), (tr) => Array.from(tr.cells, (td) => td.textContent.trim())) : [],
    rerunLinks: rerun ? Array.from(rerun.querySelectorAll('a[href]'), (a) => a.getAttribute('href')) : [],
    downloads: Array.from(document.querySelectorAll('.dropdown-download-buttons a, a.btn[href$=".ipynb"], a[href$=".ipynb"]'), (a) => a.getAttribute('href')),
    citations: article.querySelectorAll('.citation').length,
    partCaptions: Array.from(document.querySelectorAll('.bd-sidebar-primary p.caption'), (p) => p.textContent.trim()),
    tableRows: Array.from(article.querySelectorAll('table tbody tr'), (tr) => Array.from(tr.cells, (td) => td.textContent.trim())),
  };
}"""


# Before the screenshot: fonts loaded, layout settled, nothing scrolled (a theme script that scrolls
# the navigation to the current page can leave a container scrolled sideways).
SETTLE = """async () => {
  await document.fonts.ready;
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  window.scrollTo(0, 0);
  for (const el of document.querySelectorAll('*')) { if (el.scrollLeft) { el.scrollLeft = 0; } }
  return document.documentElement.scrollWidth - document.documentElement.clientWidth;
}"""


# After SETTLE: what the reader sees, element by element, for the layout and prose checks. Every
# finding names where it is (the enclosing section's heading) so that a failure points at one element.
LAYOUT_PROBE = r"""() => {
  const article = document.querySelector('article') || document.body;
  const vw = document.documentElement.clientWidth;
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const where = (el) => {
    const sec = el.closest('section');
    const h = sec ? sec.querySelector('h1, h2, h3, h4, h5, h6') : null;
    const c = h ? h.cloneNode(true) : null;
    if (c) { c.querySelectorAll('.headerlink').forEach((x) => x.remove()); }
    const adm = el.closest('.admonition');
    const box = adm && adm.querySelector('.admonition-title') ? ` in box "${clean(adm.querySelector('.admonition-title').textContent).slice(0, 60)}"` : '';
    return (c ? `section "${clean(c.textContent)}"` : 'page top') + box;
  };
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + (typeof el.className === 'string' && el.className.trim() ? '.' + el.className.trim().split(/\s+/).slice(0, 3).join('.') : '');
  const skipText = 'pre, code, kbd, samp, script, style, textarea, mjx-container, .highlight, .MathJax, mjx-assistive-mml';

  // Images: natural against rendered aspect ratio; numbered figure around it.
  const images = Array.from(article.querySelectorAll('img'), (img) => {
    const r = img.getBoundingClientRect();
    const fig = img.closest('figure');
    const num = fig ? fig.querySelector('figcaption .caption-number') : null;
    return {
      src: (img.getAttribute('src') || '').split('/').pop(), alt: img.getAttribute('alt') || '',
      naturalW: img.naturalWidth, naturalH: img.naturalHeight, w: r.width, h: r.height,
      visible: r.width > 0 && r.height > 0 && !img.closest('.rerun-chapter'),
      numbered: !!num, number: num ? clean(num.textContent) : null,
      caption: fig && fig.querySelector('figcaption') ? clean(fig.querySelector('figcaption').textContent).slice(0, 80) : null,
      where: where(img),
    };
  });

  // Raw TeX or dollar signs left in the text a reader sees.
  const rawTex = [];
  const tex = /\$|\\[A-Za-z]{2,}|\\[{}()\[\]]|\^\{|_\{/;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!parent || parent.closest(skipText) || !tex.test(n.nodeValue)) { continue; }
    const m = n.nodeValue.match(tex);
    const at = Math.max(0, m.index - 40);
    rawTex.push({ text: clean(n.nodeValue.slice(at, m.index + 60)), where: where(parent), element: describe(parent) });
  }

  // Output blocks from stderr (warnings, progress bars) and tracebacks.
  const stderr = Array.from(article.querySelectorAll('.stderr, .output.error, .output.traceback'),
    (el) => ({ text: clean(el.textContent).slice(0, 120), where: where(el), element: describe(el) }));

  // What sticks out of the window: outermost elements whose right edge is past it, not clipped by a
  // scrolling ancestor, not fixed (drawers), not hidden.
  const sticksOut = [];
  const clipped = (el) => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (['auto', 'scroll', 'hidden', 'clip'].includes(cs.overflowX)) { return true; }
      if (cs.position === 'fixed') { return true; }
    }
    return false;
  };
  const overflowing = new Set();
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) { continue; }
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || cs.display === 'none' || cs.position === 'fixed' || clipped(el)) { continue; }
    overflowing.add(el);
  }
  for (const el of overflowing) {
    if (overflowing.has(el.parentElement)) { continue; }
    sticksOut.push({ element: describe(el), by: Math.round(el.getBoundingClientRect().right - vw),
                     text: clean(el.textContent).slice(0, 80), where: where(el) });
  }

  // What is cut off: maths, images, tables and code wider than an ancestor that hides its overflow
  // (a box with overflow: hidden clips a long formula instead of letting the page scroll).
  const cutOff = [];
  for (const el of article.querySelectorAll('mjx-container, img, table, pre, code')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) { continue; }
    for (let a = el.parentElement; a && a !== article.parentElement; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === 'auto' || ox === 'scroll') { break; }
      if (ox === 'hidden' || ox === 'clip') {
        const ar = a.getBoundingClientRect();
        const by = Math.round(Math.max(r.right - ar.right, ar.left - r.left));
        if (by > 1) {
          cutOff.push({ element: describe(el), box: describe(a), by, where: where(el),
                        text: clean(el.textContent || el.getAttribute('src') || '').slice(0, 60) });
        }
        break;
      }
    }
  }

  // Tables whose content is cut off without a visible sign that it scrolls: wider than the first
  // box around them that does not let it spill (a box that hides it, or one that scrolls without
  // the book's visible scrollbar, class book-scrolls from book_scroll.js), or with a cell that
  // clips its own text.
  const cutTables = [];
  for (const t of article.querySelectorAll('table')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) { continue; }
    let box = t.parentElement;
    while (box && box !== article.parentElement && getComputedStyle(box).overflowX === 'visible') { box = box.parentElement; }
    if (box && box !== article.parentElement) {
      const br = box.getBoundingClientRect();
      const by = Math.round(Math.max(r.right - br.right, br.left - r.left));
      const ox = getComputedStyle(box).overflowX;
      const shown = (ox === 'auto' || ox === 'scroll') && box.classList.contains('book-scrolls');
      if (by > 1 && !shown) {
        cutTables.push({ element: describe(t), box: describe(box), by, where: where(t),
                         text: clean((t.querySelector('tr') || t).textContent).slice(0, 60) });
      }
    }
    for (const c of t.querySelectorAll('td, th')) {
      if (c.getBoundingClientRect().width === 0 || getComputedStyle(c).overflowX === 'visible') { continue; }
      if (c.scrollWidth > c.clientWidth + 1) {
        cutTables.push({ element: describe(c), box: 'its own cell', by: c.scrollWidth - c.clientWidth, where: where(c),
                         text: clean(c.textContent).slice(0, 60) });
      }
    }
  }

  // Prose: the visible text of paragraphs, list items, captions and headings, without code, maths,
  // tables, cell outputs and the re-run box (where parameter names belong).
  const prose = [];
  for (const el of article.querySelectorAll('p, li, figcaption, dt, dd, h1, h2, h3, h4, caption')) {
    if (el.closest('.rerun-chapter, table, .cell_output, .cell_input, pre, .highlight, nav, .toctree-wrapper')) { continue; }
    if (el.querySelector('p, li')) { continue; }  // the innermost block carries the text
    const c = el.cloneNode(true);
    const codes = Array.from(c.querySelectorAll('code'), (x) => clean(x.textContent));
    c.querySelectorAll('code, kbd, samp, pre, mjx-container, script, style, .headerlink').forEach((x) => x.remove());
    const text = clean(c.textContent);
    if (text || codes.length) { prose.push({ text, codes, where: where(el), tag: el.tagName.toLowerCase() }); }
  }
  return { viewportWidth: vw, images, rawTex, stderr, sticksOut, cutOff, cutTables, prose };
}"""


# Opens every folded box (a dropdown admonition, a details element), as a reader clicking it.
OPEN_FOLDED = r"""async () => {
  for (const d of document.querySelectorAll('details:not([open])')) { d.open = true; }
  for (const box of document.querySelectorAll('.dropdown')) {
    const body = Array.from(box.children).find((c) => !c.classList.contains('admonition-title'));
    if (body && body.getBoundingClientRect().height === 0) {
      (box.querySelector('.toggle-button') || box.querySelector('.admonition-title')).click();
    }
  }
  window.dispatchEvent(new Event('resize'));
  await new Promise((resolve) => setTimeout(resolve, 600));
}"""


# After SETTLE: tables, pasted values, leftover markup and the landing page's first screen.
READER_PROBE = r"""() => {
  const after = (el) => { const out = []; for (let e = el.nextElementSibling; e && out.length < 3; e = e.nextElementSibling) { out.push(e); } return out; };
  const article = document.querySelector('article') || document.body;
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const where = (el) => {
    const sec = el.closest('section');
    const h = sec ? sec.querySelector('h1, h2, h3, h4') : null;
    return h ? clean(h.textContent).replace(/#$/, '') : 'page top';
  };
  const numeric = /^[-−+]?(\d[\d,]*(\.\d+)?|\.\d+)( × 10[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)?%?(\s*±\s*[\d.]+( × 10[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)?)?$/;
  const px = (v) => parseFloat(v) || 0;
  const tables = Array.from(article.querySelectorAll('table'))
    .filter((t) => !t.closest('.rerun-chapter') && t.getBoundingClientRect().width > 0)
    .map((t) => {
      const box = t.closest('.book-table');
      const own = t.querySelector('caption .caption-number');
      const outer = box ? box.querySelector('.book-table-caption .caption-number') : null;
      const cells = Array.from(t.querySelectorAll('td, th'));
      const tight = cells.filter((c) => { const cs = getComputedStyle(c); return Math.min(px(cs.paddingLeft), px(cs.paddingRight)) < 3; });
      const leftNumbers = Array.from(t.querySelectorAll('tbody td')).filter((c) => {
        const text = clean(c.textContent);
        const align = getComputedStyle(c).textAlign;
        return numeric.test(text) && !['right', 'end'].includes(align);
      });
      return {
        where: where(t), first: clean((t.querySelector('tr') || t).textContent).slice(0, 60),
        number: own ? clean(own.textContent) : (outer ? clean(outer.textContent) : null),
        tight: tight.length, tightExample: tight.length ? clean(tight[0].textContent).slice(0, 30) : null,
        leftNumbers: leftNumbers.length, leftExample: leftNumbers.length ? clean(leftNumbers[0].textContent) : null,
      };
    });
  const boldPasted = Array.from(article.querySelectorAll('.pasted-text'))
    .filter((el) => !el.closest('strong, b, h1, h2, h3, h4, th, .caption-number, .rerun-chapter')
                    && parseInt(getComputedStyle(el).fontWeight, 10) >= 600)
    .map((el) => ({ text: clean(el.textContent).slice(0, 60), where: where(el) }));
  const rawMarkup = [];
  const markup = /\{(glue|glue:\w+|numref|ref|doc|cite|cite:\w+|prf:\w+|eq|math|term|download|table-caption)\}`?/;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!parent || parent.closest('pre, .highlight, .cell_input, script, style, .rerun-chapter')) { continue; }
    const m = n.nodeValue.match(markup);
    if (m) { rawMarkup.push({ text: clean(n.nodeValue.slice(Math.max(0, m.index - 30), m.index + 50)), where: where(parent) }); }
  }
  const shownSetup = Array.from(article.querySelectorAll('div.cell.tag_parameters'))
    .filter((cell) => { const input = cell.querySelector('.cell_input'); return input && !input.closest('details'); })
    .map((cell) => clean(cell.textContent).slice(0, 60));
  const found = article.querySelector('.book-found');
  const onFirstScreen = (el) => !!el && el.getBoundingClientRect().top < window.innerHeight && el.getBoundingClientRect().height > 0;
  const wholeOnFirstScreen = (el) => { const r = el.getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; };
  // The share of an element's visible text set in bold (600 or heavier), text node by text node.
  const boldShare = (el) => {
    let all = 0, bold = 0;
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const k = n.nodeValue.replace(/\s+/g, '').length;
      if (!k || !n.parentElement || n.parentElement.closest('mjx-assistive-mml')) { continue; }
      all += k;
      if (parseInt(getComputedStyle(n.parentElement).fontWeight, 10) >= 600) { bold += k; }
    }
    return all ? bold / all : 0;
  };
  const boldParagraphs = Array.from(article.querySelectorAll('p'))
    .filter((el) => !el.closest('table, figcaption, .caption, .admonition-title, nav, .rerun-chapter, .book-table-caption, dt, h1, h2, h3, h4, .toctree-wrapper'))
    .filter((el) => clean(el.textContent).length >= 40 && el.getBoundingClientRect().height > 0 && boldShare(el) > 0.5)
    .map((el) => ({ text: clean(el.textContent).slice(0, 80), where: where(el) }));
  const h1 = article.querySelector('h1');
  const leadEl = h1 && h1.nextElementSibling && h1.nextElementSibling.tagName === 'P' ? h1.nextElementSibling : null;
  const lead = leadEl ? {
    text: clean(leadEl.textContent).slice(0, 80), bold: boldShare(leadEl),
    lines: leadEl.getBoundingClientRect().height / (parseFloat(getComputedStyle(leadEl).lineHeight) || 1),
  } : null;
  // Tables wider than the box they scroll in: a reader has to swipe sideways to see every column.
  const scrolling = Array.from(article.querySelectorAll('table'))
    .filter((t) => t.getBoundingClientRect().width > 0 && !t.closest('.rerun-chapter'))
    .map((t) => {
      let box = t.parentElement;
      while (box && box !== article && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) { box = box.parentElement; }
      const width = box && box !== article ? box.clientWidth : article.clientWidth;
      return { where: where(t), first: clean((t.querySelector('tr') || t).textContent).slice(0, 60),
               by: Math.round(t.getBoundingClientRect().width - width) };
    })
    .filter((t) => t.by > 1);
  return {
    tables, boldPasted, rawMarkup, shownSetup, boldParagraphs, lead, scrolling,
    found: found ? {
      text: clean(found.textContent).slice(0, 400),
      words: clean(found.textContent).split(' ').filter((w) => /[A-Za-z0-9]/.test(w)).length,
      height: found.getBoundingClientRect().height,
      // the counts and the chart follow the box, which holds the answer alone
      countsTable: after(found).some((e) => e.matches('table') || !!e.querySelector('table')),
      chart: after(found).some((e) => !!e.querySelector('img')),
      chartLoaded: after(found).some((e) => !!e.querySelector('img') && e.querySelector('img').naturalWidth > 0),
      answers: Array.from(found.querySelectorAll('.book-answer-lede'), (el) => ({
        text: clean(el.closest('p').textContent).slice(0, 120), onFirstScreen: wholeOnFirstScreen(el) })),
    } : null,
  };
}"""


# After SETTLE: each figure's smallest text as drawn. A chapter figure sits in a
# <picture> (_ext/book_figures.py) that carries each variant's 1x width and smallest text in 1x
# pixels (lowrank.book.figures); the variant the browser chose and the width it drew it at give the
# text size on screen.
FIGURE_PROBE = r"""() => {
  const article = document.querySelector('article') || document.body;
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  return Array.from(article.querySelectorAll('figure img'))
    .filter((img) => img.getBoundingClientRect().width > 0 && !img.closest('.rerun-chapter'))
    .map((img) => {
      const pic = img.closest('picture[data-text-px]');
      const cap = img.closest('figure').querySelector('figcaption .caption-number');
      const out = { src: (img.getAttribute('src') || '').split('/').pop(), figure: cap ? clean(cap.textContent) : null,
                    shownWidth: img.getBoundingClientRect().width, known: !!pic };
      if (pic) {
        const narrow = !!pic.dataset.narrow && (img.currentSrc || '').endsWith('/' + pic.dataset.narrow);
        out.variant = narrow ? 'narrow' : 'wide';
        out.width1x = parseFloat(narrow ? pic.dataset.narrowWidth : pic.dataset.width);
        out.textPx = parseFloat(narrow ? pic.dataset.narrowTextPx : pic.dataset.textPx);
        const frac = narrow ? pic.dataset.narrowPlotFrac : pic.dataset.plotFrac;
        const overlaps = narrow ? pic.dataset.narrowOverlaps : pic.dataset.overlaps;
        out.plotFrac = frac === undefined ? null : parseFloat(frac);
        out.overlaps = overlaps === undefined ? null : JSON.parse(overlaps);
      }
      return out;
    });
}"""


@pytest.fixture(scope="module")
def visit(site, browser):
    """visit(page, width) -> Visit: load each page once per width, wait for MathJax, probe it, screenshot it.

    Desktop screenshots go to ``_build/screenshots/<page>.png``, phone ones to
    ``_build/screenshots/phone/<page>.png``.
    """
    seen: dict[tuple[str, str], Visit] = {}

    def load(page: Page, width: str = "desktop") -> Visit:
        if (page.path, width) in seen:
            return seen[page.path, width]
        url = urljoin(site, page.path)
        result = Visit(url=url, final_path=page.path)
        context = browser.new_context(viewport=VIEWPORTS[width], device_scale_factor=1)
        host = urlsplit(site).netloc

        def route(r):
            if urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:")):
                r.continue_()
            else:
                result.external.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.on("console", lambda m: result.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        tab.on("pageerror", lambda e: result.errors.append(f"uncaught exception: {e}"))
        # A request the browser cancels itself (net::ERR_ABORTED: a hidden variant of a figure still
        # in flight when the tab closes) is no missing resource; a missing one answers HTTP 404 below,
        # and an image that did not load fails the figure checks.
        tab.on("requestfailed", lambda r: result.failed.append(f"{r.url}: {r.failure}")
               if urlsplit(r.url).netloc == host and r.failure != "net::ERR_ABORTED" else None)
        tab.on("response", lambda r: result.failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
        try:
            tab.goto(url, wait_until="load")
            refresh = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', (HTML / page.path).read_text(encoding="utf8"))
            if refresh:  # index.html forwards to the first page
                tab.wait_for_url(urljoin(url, refresh.group(1)))
                tab.wait_for_load_state("load")
            result.final_path = urlsplit(tab.url).path.lstrip("/")
            result.dom = tab.evaluate(DOM_PROBE)
            result.dom["overflowX"] = tab.evaluate(SETTLE)
            result.dom["layout"] = tab.evaluate(LAYOUT_PROBE)
            result.dom["reader"] = tab.evaluate(READER_PROBE)
            result.dom["figures"] = tab.evaluate(FIGURE_PROBE)
            shot = screenshot_path(page, width)
            shot.parent.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(shot), full_page=True, timeout=180_000)  # long pages on a loaded machine
            # the tables of folded boxes (the re-run box) are measured once the boxes are open
            tab.evaluate(OPEN_FOLDED)
            result.dom["opened"] = tab.evaluate(LAYOUT_PROBE)
        finally:
            context.close()
        seen[page.path, width] = result
        return result

    return load


def screenshot_path(page: Page, width: str = "desktop") -> Path:
    rel = Path(page.path).with_suffix(".png")
    return SCREENSHOTS / rel if width == "desktop" else SCREENSHOTS / width / rel


def _page_ids(path: Path) -> set[str]:
    return parsed(path).ids


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_page_loads_cleanly_offline(visit, page):
    v = visit(page)
    assert not v.errors, f"{page}: JavaScript errors:\n" + "\n".join(v.errors)
    assert not v.failed, f"{page}: failed requests:\n" + "\n".join(v.failed)
    assert not v.external, f"{page}: requests to other hosts (the book must read offline):\n" + "\n".join(v.external)
    assert screenshot_path(page).stat().st_size > 0


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_images_load(visit, page):
    broken = [img["src"] for img in visit(page).dom["images"] if not img["ok"]]
    assert not broken, f"{page}: images that did not load: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_math_is_typeset(visit, page):
    dom = visit(page).dom
    math = dom["math"]
    if math:
        assert dom["mathjaxLoaded"], f"{page} has {len(math)} formulas but MathJax did not load"
        raw = [m["text"] for m in math if not m["typeset"]]
        assert not raw, f"{page}: formulas left untypeset: {raw[:5]}"
        assert dom["mjxCount"] >= len(math)
    assert not dom["mathErrors"], f"{page}: MathJax errors or undefined macros in: {dom['mathErrors'][:5]}"
    assert not dom["rawDollars"], f"{page}: raw $$ left in the text: {dom['rawDollars'][:5]}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_internal_links_resolve(visit, page, site):
    v = visit(page)
    here_ids = set(v.dom["ids"])
    broken = []
    for link in v.dom["links"]:
        raw, absolute = link["raw"], link["abs"]
        if raw.startswith(("javascript:", "mailto:")) or not absolute.startswith(site):
            continue
        parts = urlsplit(absolute)
        target = HTML / unquote(parts.path.lstrip("/"))
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(f"{raw} -> missing file {target.relative_to(HTML)}")
            continue
        anchor = unquote(parts.fragment)
        if not anchor or target.suffix != ".html":
            continue
        ids = here_ids if target == HTML / v.final_path else _page_ids(target)
        if anchor not in ids:
            broken.append(f"{raw} -> no id {anchor!r} in {target.relative_to(HTML)}")
    assert not broken, f"{page}: broken internal links:\n" + "\n".join(sorted(set(broken)))


@pytest.mark.parametrize("page", [p for p in PAGES if PROOF_DIRECTIVE.search(source_text(p))], ids=str)
def test_proof_boxes_present(visit, page):
    expected = len(PROOF_DIRECTIVE.findall(source_text(page)))
    assert visit(page).dom["proofs"] == expected, \
        f"{page}: {expected} sphinx-proof directives in the source, {visit(page).dom['proofs']} boxes rendered"


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_chapter_navigation_and_shape(visit, page):
    dom = visit(page).dom
    assert dom["h1Number"] == f"{page.number}.", \
        f"{page}: chapter heading numbered {dom['h1Number']!r}, expected {page.number}. (continuous across parts)"
    assert dom["leadHtml"], f"{page}: the title must be followed by a lead paragraph saying what the chapter shows"
    assert dom["h2"] and dom["h2"][-1] == "What to take away", \
        f"{page}: the last section must be 'What to take away', found {dom['h2'][-1:]}"


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_navigation_shows_the_parts(visit, page):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf8"))
    captions = [part["caption"] for part in toc.get("parts", []) if part.get("caption")]
    assert visit(page).dom["partCaptions"] == captions, f"{page}: the navigation does not list the parts of _toc.yml"


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_chapter_reexecution_affordances(visit, page):
    dom = visit(page).dom
    notebook = Path(page.path).with_suffix(".ipynb").name
    assert any(href.endswith(f"_sources/{Path(page.path).with_suffix('.ipynb').as_posix()}")
               for href in dom["downloads"]), f"{page}: no download button for {notebook}: {dom['downloads']}"
    number = notebook.split("_", 1)[0]
    assert dom["rerunText"] and f"lowrank run {number} -p" in dom["rerunText"], f"{page}: no re-run box"
    assert "papermill" in dom["rerunText"]
    params = notebook_parameters(page.source)
    assert dom["rerunRows"] == len(params), \
        f"{page}: re-run box lists {dom['rerunRows']} parameters, the parameters cell has {len(params)}"
    for name in params:
        assert name in dom["rerunText"], f"{page}: parameter {name} missing from the re-run box"
    scales = {row[0].split(":")[0]: row for row in dom["rerunScales"]}
    expected = {"default", *(d.name for d in (page.source.parent / "params").iterdir()
                             if (d / page.source.name.replace(".ipynb", ".yaml")).is_file())}
    assert set(scales) == expected, f"{page}: re-run box scales {sorted(scales)}, parameter sets {sorted(expected)}"
    for name, (_, command, hardware, time) in scales.items():
        assert command.startswith(f"lowrank run {number}") and hardware and time, \
            f"{page}: scale {name} lacks its command, hardware or time: {scales[name]}"
    assert "as in the paper" not in dom["rerunText"], f"{page}: the re-run box still says 'as in the paper'"
    assert any("_downloads/lowrank-" in href and href.endswith(".tar.gz") for href in dom["rerunLinks"]), \
        f"{page}: the re-run box does not link the source archive: {dom['rerunLinks']}"
    assert any("running" in href for href in dom["rerunLinks"]), \
        f"{page}: the re-run box does not link 'Running it yourself': {dom['rerunLinks']}"


def test_bibliography_lists_every_entry(visit):
    pages = [p for p in PAGES if "{bibliography}" in source_text(p)]
    assert pages, "no page has a {bibliography} directive"
    entries = bib_entries()
    for page in pages:
        shown = visit(page).dom["citations"]
        if ":all:" in source_text(page):
            assert shown == entries, f"{page}: {shown} bibliography entries shown, {entries} in the .bib files"
        else:
            assert shown > 0, f"{page}: empty bibliography"


def test_execution_report_lists_every_chapter(visit):
    pages = [p for p in PAGES if "{nb-exec-table}" in source_text(p)]
    assert pages, "no execution report page (a {nb-exec-table} directive) in the toc"
    rows = {row[0]: row for row in visit(pages[0]).dom["tableRows"] if row}
    for chapter in CHAPTERS:
        docname = str(Path(chapter.path).with_suffix(""))
        assert docname in rows, f"execution report has no row for {docname}: {sorted(rows)}"
        assert rows[docname][-1] == "succeeded", f"execution report: {docname} did not succeed: {rows[docname]}"


# --- the book as a reader meets it at every width -------------------------------------------------
#
# Each check runs on every page at desktop and phone width and names the page, the width and the
# element (its section, file name or text) that fails.

# Parameter names that are also ordinary words are only flagged in a value's place ("n = n"); a name
# with an underscore or a digit ("d_model", "construction_ns") is never prose.
_IDENTIFIER = re.compile(r"[_0-9]")
_TEMPLATE = re.compile(r"(?<![\w^_}\\])\{[A-Za-z_][A-Za-z0-9_]*\}")
# A paragraph that talks about the parameters themselves ("set `seed` with -p") may name them.
_ABOUT_PARAMETERS = re.compile(r"\bparameters?\b|-p\b|papermill|lowrank run", re.IGNORECASE)


def _shown(v: Visit) -> dict:
    return v.dom["layout"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_figures_keep_their_aspect_ratio(visit, page, width):
    bad = []
    for img in _shown(visit(page, width))["images"]:
        if not img["visible"] or not img["naturalW"]:
            continue
        expected = img["w"] * img["naturalH"] / img["naturalW"]
        if abs(img["h"] - expected) > max(2.0, 0.01 * expected):
            squeeze = 100 * (1 - (img["w"] / img["h"]) / (img["naturalW"] / img["naturalH"]))
            bad.append(f"{img['src']} ({img['where']}): shown {img['w']:.0f} x {img['h']:.0f} px, natural "
                       f"{img['naturalW']} x {img['naturalH']}: squeezed sideways by {squeeze:.0f} %")
    assert not bad, f"{page} at {width} width: images drawn out of shape:\n" + "\n".join(bad)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_figures_are_numbered(visit, page, width):
    bad = [f"{img['src']} ({img['where']}, alt {img['alt'][:40]!r})"
           for img in _shown(visit(page, width))["images"] if img["visible"] and not img["numbered"]]
    assert not bad, (f"{page} at {width} width: images outside a numbered, captioned figure "
                     "(use {glue:figure} / {figure} with a caption):\n" + "\n".join(bad))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_raw_tex_in_text(visit, page, width):
    bad = [f"{t['where']} ({t['element']}): ...{t['text']}..." for t in _shown(visit(page, width))["rawTex"]]
    assert not bad, f"{page} at {width} width: raw $ or TeX in the text (not typeset):\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_stderr_or_traceback_blocks(visit, page, width):
    bad = [f"{t['where']} ({t['element']}): {t['text']}" for t in _shown(visit(page, width))["stderr"]]
    assert not bad, f"{page} at {width} width: stderr or error output shown:\n" + "\n".join(bad)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_horizontal_overflow(visit, page, width):
    v = visit(page, width)
    culprits = [f"{c['element']} ({c['where']}) sticks out {c['by']} px: {c['text'][:60]!r}"
                for c in _shown(v)["sticksOut"]]
    assert v.dom["overflowX"] <= 0, (
        f"{page} is {v.dom['overflowX']} px wider than a {VIEWPORTS[width]['width']} px window ({width}): "
        "the page scrolls sideways; what sticks out:\n" + "\n".join(culprits[:10]))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_nothing_is_cut_off(visit, page, width):
    bad = [f"{c['element']} in {c['box']} ({c['where']}) cut off by {c['by']} px: {c['text']!r}"
           for c in _shown(visit(page, width))["cutOff"]]
    assert not bad, (f"{page} at {width} width: content wider than a box that hides its overflow "
                     "(clipped, neither wrapped nor scrollable):\n" + "\n".join(bad[:15]))


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_table_is_cut_off_without_showing_that_it_scrolls(visit, page, width):
    """Every table, those of folded boxes included, fits its box or shows that the box scrolls."""
    v = visit(page, width)
    cut = {(c["element"], c["where"], c["by"]): c for c in [*_shown(v)["cutTables"], *v.dom["opened"]["cutTables"]]}
    bad = [f"{c['element']} in {c['box']} ({c['where']}) cut off by {c['by']} px: {c['text']!r}"
           for c in cut.values()]
    assert not bad, (f"{page} at {width} width: a table's content is cut off with no visible sign that its "
                     "box scrolls:\n" + "\n".join(bad[:15]))


def parameter_names_in(text: str, params: list[str], codes: tuple[str, ...] = ()) -> list[str]:
    """Parameter names (or unfilled templates) where the reader expects a value.

    ``text`` is a paragraph's visible text without its inline code and maths; ``codes`` are the
    texts of its inline code elements. Flagged: an unfilled template ``{name}``; a parameter name
    with an underscore or a digit as a bare word; any parameter name in a value's place (after
    ``=``, ``∈``, ``≤`` ...); an inline code element that is exactly a parameter name, unless the
    paragraph is about the parameters themselves (it says "parameter", ``-p``, papermill or
    ``lowrank run``).
    """
    found = [m.group(0) for m in _TEMPLATE.finditer(text)]
    if not _ABOUT_PARAMETERS.search(text + " " + " ".join(codes)):
        found += [code for code in codes if code in params]
    for name in params:
        bare = re.compile(rf"(?<![\w.{{\\]){re.escape(name)}(?![\w(])")
        in_value_place = re.compile(rf"(=|∈|≤|≥|<|>)\s*{re.escape(name)}(?![\w(.])")
        if (_IDENTIFIER.search(name) and bare.search(text)) or in_value_place.search(text):
            found.append(name)
    return found


def test_parameter_name_detector():
    params = ["n", "d_model", "construction_ns", "seed", "ns"]
    assert parameter_names_in("At d = d_model and n = n, standard heads fit", params) == ["n", "d_model"]
    assert parameter_names_in("Over n ∈ {construction_ns} the threshold is n - 1", params) == \
        ["{construction_ns}"]
    assert parameter_names_in("At n = 64 with seed 0 the rank is 63; the ns run faster", params) == []
    assert parameter_names_in("the bound 1/\\sqrt{d_model}", params) == []
    # "$d = {}$`d_model`": the value's place holds the name as inline code
    assert parameter_names_in("(Gaussian, , )", params, ("n", "d_model")) == ["n", "d_model"]
    assert parameter_names_in("Re-run with -p seed 1", params, ("seed",)) == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_prose_shows_values_not_parameter_names(visit, page, width):
    params = notebook_parameters(page.source)
    bad = []
    for block in _shown(visit(page, width))["prose"]:
        names = parameter_names_in(block["text"], params, tuple(block.get("codes", ())))
        if names:
            bad.append(f"{block['where']} ({block['tag']}): {', '.join(dict.fromkeys(names))} in "
                       f"{block['text'][:140]!r}")
    assert not bad, f"{page} at {width} width: parameter names where a value belongs:\n" + "\n".join(bad)


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_screenshots_of_every_chapter(visit, page):
    for width in WIDTHS:
        visit(page, width)
        shot = screenshot_path(page, width)
        assert shot.is_file() and shot.stat().st_size > 10_000, f"{page}: no {width} screenshot at {shot}"


# --- answers first, readable on every screen ---------------------------------------------------

def _open_dialog(tab, dialog: str) -> dict:
    return tab.evaluate("""(id) => { const d = document.getElementById(id);
        return { open: !!(d && d.open), links: d ? d.querySelectorAll('a[href]').length : 0 }; }""", dialog)


@pytest.mark.parametrize("page", CHAPTERS[:1] + CHAPTERS[-1:], ids=str)
def test_navigation_buttons_open_the_chapter_list_and_contents_on_a_phone(site, browser, page):
    context = browser.new_context(viewport=VIEWPORTS["phone"], device_scale_factor=1, has_touch=True)
    try:
        tab = context.new_page()
        tab.goto(urljoin(site, page.path), wait_until="load")
        hamburger = tab.locator(".primary-toggle:visible")
        assert hamburger.count() == 1, f"{page}: {hamburger.count()} visible hamburger buttons at phone width"
        hamburger.tap()
        tab.wait_for_timeout(300)
        state = _open_dialog(tab, "pst-primary-sidebar-modal")
        assert state["open"], f"{page}: tapping the hamburger at 390 px does not open the chapter list"
        assert state["links"] >= len(CHAPTERS), f"{page}: the opened chapter list has {state['links']} links"
        tab.keyboard.press("Escape")
        tab.wait_for_timeout(200)
        contents = tab.locator(".secondary-toggle:visible")
        assert contents.count() == 1, f"{page}: {contents.count()} visible contents buttons at phone width"
        contents.tap()
        tab.wait_for_timeout(300)
        state = _open_dialog(tab, "pst-secondary-sidebar-modal")
        assert state["open"] and state["links"] >= 2, \
            f"{page}: tapping the contents button at 390 px does not open the page contents: {state}"
    finally:
        context.close()


def test_hamburger_hides_and_shows_the_chapter_list_on_a_desktop(site, browser):
    context = browser.new_context(viewport=VIEWPORTS["desktop"], device_scale_factor=1)
    try:
        tab = context.new_page()
        tab.goto(urljoin(site, CHAPTERS[0].path), wait_until="load")
        width = "() => document.querySelector('.bd-sidebar-primary').getBoundingClientRect().width"
        assert tab.evaluate(width) > 100, "the chapter list is not shown at desktop width"
        tab.locator(".primary-toggle:visible").click()
        tab.wait_for_timeout(200)
        assert tab.evaluate(width) == 0, "the hamburger does not hide the chapter list at desktop width"
        tab.locator(".primary-toggle:visible").click()
        tab.wait_for_timeout(200)
        assert tab.evaluate(width) > 100, "the hamburger does not bring the chapter list back"
    finally:
        context.close()


def _reader(v: Visit) -> dict:
    return v.dom["reader"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_tables_are_padded_and_numbers_right_aligned(visit, page, width):
    bad = []
    for t in _reader(visit(page, width))["tables"]:
        if t["tight"]:
            bad.append(f"{t['where']}: {t['tight']} cells padded under 3 px, e.g. {t['tightExample']!r} "
                       f"(table starting {t['first']!r})")
        if t["leftNumbers"]:
            bad.append(f"{t['where']}: {t['leftNumbers']} numbers not right-aligned, e.g. {t['leftExample']!r} "
                       f"(table starting {t['first']!r})")
    assert not bad, f"{page} at {width} width:\n" + "\n".join(bad)


# A lead reads in a glance on a phone: about four lines (a line's fraction for rounding and maths).
LEAD_MAX_LINES = 4.5


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_lead_is_short_and_in_body_weight(visit, page):
    lead = _reader(visit(page, "phone"))["lead"]
    assert lead, f"{page}: no lead paragraph under the title"
    assert lead["bold"] <= 0.5, f"{page}: the lead is set in bold ({lead['bold']:.0%} of it): {lead['text']!r}"
    assert lead["lines"] <= LEAD_MAX_LINES, (f"{page}: the lead takes {lead['lines']:.1f} lines at 390 px, more "
                                             f"than about four; move the rest into the text: {lead['text']!r}")


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_paragraph_of_running_text_is_set_in_bold(visit, page):
    bold = [f"{b['where']}: {b['text']!r}" for b in _reader(visit(page))["boldParagraphs"]]
    assert not bold, f"{page}: paragraphs set in bold (bold is for a few words of emphasis):\n" + "\n".join(bold)


@pytest.mark.parametrize("page", [*PAGES[1:2], *CHAPTERS], ids=str)
def test_every_table_has_a_numbered_caption(visit, page):
    bad = [f"{t['where']}: table starting {t['first']!r}" for t in _reader(visit(page))["tables"]
           if not (t["number"] or "").startswith("Table")]
    assert not bad, (f"{page}: tables without a numbered caption (a table-caption directive right after "
                     "the cell, or glued-table on a page that pastes one, see _ext/book_tables.py and "
                     "_ext/book_glue.py):\n" + "\n".join(bad))


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_no_bold_pasted_values_or_raw_markup(visit, page):
    reader = _reader(visit(page))
    bold = [f"{b['where']}: {b['text']!r}" for b in reader["boldPasted"]]
    assert not bold, f"{page}: pasted values in bold inside running text:\n" + "\n".join(bold[:10])
    raw = [f"{r['where']}: ...{r['text']}..." for r in reader["rawMarkup"]]
    assert not raw, f"{page}: raw MyST markup in the text:\n" + "\n".join(raw[:10])


@pytest.mark.parametrize("page", CHAPTERS, ids=str)
def test_parameter_cells_are_folded_away(visit, page):
    shown = _reader(visit(page))["shownSetup"]
    assert not shown, f"{page}: the parameters cell is shown open, not behind its toggle: {shown}"


@pytest.mark.parametrize("width", WIDTHS)
def test_landing_page_answers_on_its_first_screen(visit, width):
    found = _reader(visit(PAGES[1], width))["found"]
    assert found, f"{PAGES[1]}: no 'What the book found' box (class book-found)"
    answers = found["answers"]
    assert len(answers) >= 2, f"{PAGES[1]}: {len(answers)} answers in the box, expected one per paper"
    late = [a["text"] for a in answers if not a["onFirstScreen"]]
    assert not late, (f"{PAGES[1]} at {width} width: the answer to the title question is not wholly on the first "
                      "screen for:\n" + "\n".join(late))
    assert found["countsTable"] and found["chart"] and found["chartLoaded"], \
        f"{PAGES[1]} at {width} width: the verdict counts or the verdict chart are missing from the box"


# The answer box is an abstract: a paper's abstract does the job in 150 to 250 words, and a phone
# reader should meet the book's first section within one and a half screens.
MAX_ANSWER_WORDS = 260
MAX_ANSWER_SCREENS = 1.5


def test_landing_page_answer_box_is_an_abstract(visit):
    found = _reader(visit(PAGES[1], "phone"))["found"]
    assert found, f"{PAGES[1]}: no 'What the book found' box (class book-found)"
    screen = VIEWPORTS["phone"]["height"]
    assert found["words"] <= MAX_ANSWER_WORDS, f"{PAGES[1]}: the answer box holds {found['words']} words"
    assert found["height"] <= MAX_ANSWER_SCREENS * screen, (
        f"{PAGES[1]}: the answer box is {found['height']:.0f} px tall at 390 px, "
        f"{found['height'] / screen:.2f} phone screens")


@pytest.mark.parametrize("width", WIDTHS)
def test_landing_page_tables_do_not_scroll_sideways(visit, width):
    bad = [f"{t['where']}: table starting {t['first']!r} is {t['by']} px wider than its box"
           for t in _reader(visit(PAGES[1], width))["scrolling"]]
    assert not bad, f"{PAGES[1]} at {width} width: tables a reader must scroll sideways:\n" + "\n".join(bad)


def small_figure_text(figures: list[dict], *, sizes_required: bool) -> list[str]:
    """Figures whose smallest text is drawn under MIN_TEXT_PX, and (where sizes are required)
    figures whose text size is unknown."""
    from lowrank.book.figures import MIN_TEXT_PX, shown_text_px

    bad = []
    for f in figures:
        name = f"{f['figure'] or 'unnumbered figure'} ({f['src']})"
        if not f["known"]:
            if sizes_required:
                bad.append(f"{name}: text size unknown (no lowrank figure metadata: re-execute the chapter)")
            continue
        px = shown_text_px(f["textPx"], f["width1x"], f["shownWidth"])
        if not px >= MIN_TEXT_PX:  # NaN too: a size attribute that is missing or unreadable
            bad.append(f"{name}, {f['variant']} variant drawn {f['shownWidth']:.0f} px wide: smallest text "
                       f"{px:.1f} px, under {MIN_TEXT_PX:g}")
    return bad


# Pages whose figures must carry the book's figure measures: the chapters, the landing page, which
# pastes chapter 08's chart, and the appendix, whose static PNGs (the probe report's figures, the
# benchmarks' plot) carry theirs in the file (lowrank.core.figure_measures.save_png).
def _measures_required(page: Page) -> bool:
    return page.is_chapter or page == PAGES[1] or page.path.startswith("appendix/")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_figure_text_is_legible(visit, page, width):
    figures = visit(page, width).dom["figures"]
    bad = small_figure_text(figures, sizes_required=_measures_required(page))
    assert not bad, f"{page} at {width} width: figure text too small to read:\n" + "\n".join(bad)


def cramped_figures(figures: list[dict], *, required: bool) -> list[str]:
    """Figures whose plotting area takes under MIN_PLOT_FRAC of the width of the variant shown, or
    whose texts are drawn over each other; where the measures are required, figures without them."""
    from lowrank.book.figures import MIN_PLOT_FRAC

    bad = []
    for f in figures:
        name = f"{f['figure'] or 'unnumbered figure'} ({f['src']}, {f.get('variant', '?')} variant)"
        if f.get("plotFrac") is None or f.get("overlaps") is None:
            if required:
                bad.append(f"{name}: no plotting-area or overlap measure (re-execute its chapter)")
            continue
        if not f["plotFrac"] >= MIN_PLOT_FRAC:
            bad.append(f"{name}: the plotting area takes {f['plotFrac']:.0%} of the width, under "
                       f"{MIN_PLOT_FRAC:.0%} (labels, legend or margins take the rest)")
        if f["overlaps"]:
            pairs = "; ".join(" / ".join(repr(t[:30]) for t in pair) for pair in f["overlaps"])
            bad.append(f"{name}: texts drawn over each other: {pairs}")
    return bad


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page", PAGES, ids=str)
def test_charts_give_their_data_the_width_and_keep_texts_apart(visit, page, width):
    required = page == PAGES[1] or page.path.startswith("appendix/")
    bad = cramped_figures(visit(page, width).dom["figures"], required=required)
    assert not bad, f"{page} at {width} width:\n" + "\n".join(bad)


def test_cramped_figure_check_can_fail():
    ok = {"figure": "Fig. 1", "src": "a.png", "variant": "narrow", "plotFrac": 0.9, "overlaps": []}
    assert not cramped_figures([ok], required=True)
    assert "takes 30% of the width" in cramped_figures([{**ok, "plotFrac": 0.3}], required=False)[0]
    assert "drawn over each other" in cramped_figures([{**ok, "overlaps": [["1", "2"]]}], required=False)[0]
    assert cramped_figures([{**ok, "plotFrac": None}], required=True)
    assert not cramped_figures([{**ok, "plotFrac": None}], required=False)


def test_figure_text_check_fails_on_small_text(browser, tmp_path):
    """The check above, on a page made here: a figure with 4 pt text served without a narrow variant
    fails at 390 px; the same figure with its narrow variant (which raises small text) passes, and so
    does the figure drawn with the book's sizes."""
    import matplotlib.pyplot as plt

    from lowrank.book.figures import figure_png
    from lowrank.book.plotting import subplots

    def page_for(fontsize: float | None, narrow: bool = True) -> str:
        fig, axes = subplots(1, 2, width=7.5, height=3.0)
        for ax in axes[0]:
            ax.plot([1, 2, 3], [1, 4, 9])
            ax.set(xlabel="x", ylabel="y")
        if fontsize:
            axes[0, 0].text(1.5, 5, "note", fontsize=fontsize)
        data, meta = figure_png(fig)
        plt.close(fig)
        info = meta["lowrank"]
        (tmp_path / "wide.png").write_bytes(base64.b64decode(data))
        (tmp_path / "narrow.png").write_bytes(base64.b64decode(info["narrow"]))
        variant = (f'data-narrow="narrow.png" data-narrow-width="{info["narrow_width"]}" '
                   f'data-narrow-text-px="{info["narrow_text_px"]}"') if narrow else ""
        source = '<source media="(max-width: 599.98px)" srcset="narrow.png">' if narrow else ""
        return (f'<article><figure><picture data-width="{info["width"]}" data-text-px="{info["text_px"]}" '
                f'{variant}>{source}<img src="wide.png" style="width: {meta["width"]}px; max-width: 100%; '
                f'height: auto"></picture><figcaption><span class="caption-number">Fig. 1 </span></figcaption>'
                f'</figure></article>')

    def measure(fontsize, narrow=True):
        (tmp_path / "page.html").write_text(page_for(fontsize, narrow), encoding="utf8")
        context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
        try:
            tab = context.new_page()
            tab.goto((tmp_path / "page.html").as_uri(), wait_until="load")
            return tab.evaluate(FIGURE_PROBE)
        finally:
            context.close()

    book = measure(None)
    assert book and book[0]["variant"] == "narrow", book
    assert not small_figure_text(book, sizes_required=True)
    assert not small_figure_text(measure(4), sizes_required=True)  # the narrow variant raises small text
    tiny = measure(4, narrow=False)
    small = small_figure_text(tiny, sizes_required=True)
    assert small and "under 9" in small[0], f"{tiny}"
    assert small_figure_text([{"figure": "Fig. 2", "src": "x.png", "known": False}], sizes_required=True)
