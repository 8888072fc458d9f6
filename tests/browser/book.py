"""What the book should contain, read from its sources (``_toc.yml``, the notebooks, the .bib files),
and the built HTML read as files: the pages every browser test runs over."""
from __future__ import annotations

import ast
import functools
import html.parser
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
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


def screenshot_path(page: Page, width: str = "desktop") -> Path:
    rel = Path(page.path).with_suffix(".png")
    return SCREENSHOTS / rel if width == "desktop" else SCREENSHOTS / width / rel


def page_ids(path: Path) -> set[str]:
    return parsed(path).ids
