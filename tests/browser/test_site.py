"""Every page loads offline, cleanly and whole: requests, images, maths, links, proof boxes, chapter shape
and re-run box, bibliography and execution report."""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from .book import (CHAPTERS, HTML, PAGES, PROOF_DIRECTIVE, ROOT, bib_entries, notebook_parameters, page_ids, parsed,
                   screenshot_path, source_text)

pytestmark = pytest.mark.browser

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
        ids = here_ids if target == HTML / v.final_path else page_ids(target)
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
