"""Print the book to PDF with the headless Chromium the browser test uses (``make pdf``), offline.

``tools/render_book.py _build/pdf --builder singlehtml`` renders the whole book, from the committed
notebook outputs, into one HTML page; this script serves that folder on 127.0.0.1, opens the page
in Chromium through Playwright (Debian's /usr/bin/chromium, or $CHROMIUM; Playwright never
downloads a browser), waits until every image has loaded and MathJax has typeset every formula, and
prints it with ``page.pdf`` (A4, page numbers in the footer). Figures keep the numbers and captions
of the HTML book; a request to any other host is blocked, so the PDF is built offline or not at all.

usage: python tools/print_pdf.py HTML_DIR OUT.pdf      (make pdf: _build/pdf/_build/singlehtml -> _build/pdf/book.pdf)
"""
from __future__ import annotations

import functools
import http.server
import os
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--mute-audio"]

# The reading column only: no navigation, search, buttons or dropdown toggles on paper; collapsed
# boxes (the re-run box, hidden code) are printed open.
PRINT_CSS = """
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer, .bd-footer-article,
.header-article, .prev-next-area, .bd-header-article, .search-button, .theme-switch-button,
.headerlink, .skip-link, #pst-back-to-top, .sidebar-toggle, .dropdown-toggle { display: none !important; }
.bd-main, .bd-content, .bd-article-container, .bd-page-width { max-width: 100% !important; width: 100% !important; }
.bd-container, .bd-container__inner { display: block !important; max-width: 100% !important; }
.bd-content, .bd-article-container, .bd-article { margin: 0 !important; padding-left: 0 !important; padding-right: 0 !important; }
html, body { overflow-x: hidden !important; }
details, details > * { display: block !important; }
section[id^="document-"] { break-before: page; }
figure, img, table, .admonition { break-inside: avoid; }
"""

WAIT_FOR_PAGE = """async () => {
  await document.fonts.ready;
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  const pending = Array.from(document.images).filter((img) => !img.complete);
  await Promise.all(pending.map((img) => new Promise((done) => { img.onload = img.onerror = done; })));
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) {
    await mj.startup.promise;
    if (mj.typesetPromise) { await mj.typesetPromise(); }
  }
  const untypeset = Array.from(document.querySelectorAll('.math')).filter((el) => !el.querySelector('mjx-container')).length;
  const broken = Array.from(document.images).filter((img) => !(img.complete && img.naturalWidth > 0)).map((img) => img.src);
  const figures = document.querySelectorAll('figure .caption-number').length;
  return { untypeset, broken, figures, formulas: document.querySelectorAll('mjx-container').length };
}"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def print_pdf(html_dir: Path, out: Path) -> dict:
    from playwright.sync_api import sync_playwright

    page_file = "intro.html" if (html_dir / "intro.html").is_file() else "index.html"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(html_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_address[1]}"
    blocked: list[str] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1000, "height": 1400})

            def route(r):
                if urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:")):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            context.route("**/*", route)
            tab = context.new_page()
            tab.set_default_timeout(600_000)
            tab.goto(f"http://{host}/{page_file}", wait_until="load")
            tab.add_style_tag(content=PRINT_CSS)
            tab.emulate_media(media="print")
            state = tab.evaluate(WAIT_FOR_PAGE)
            out.parent.mkdir(parents=True, exist_ok=True)
            tab.pdf(path=str(out), format="A4", print_background=True, prefer_css_page_size=False,
                    margin={"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"},
                    display_header_footer=True, header_template="<span></span>",
                    footer_template='<div style="font-size:8px;width:100%;text-align:center;">'
                                    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    state["blocked"] = blocked
    return state


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    html_dir, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    if not Path(CHROMIUM).is_file():
        print(f"print_pdf: Chromium not found at {CHROMIUM}: run tools/ensure_chromium.sh", file=sys.stderr)
        return 1
    state = print_pdf(html_dir, out)
    problems = []
    if state["untypeset"]:
        problems.append(f"{state['untypeset']} formulas were not typeset by MathJax")
    if state["broken"]:
        problems.append(f"images did not load: {state['broken'][:5]}")
    if state["blocked"]:
        problems.append(f"requests to other hosts were blocked: {sorted(set(state['blocked']))[:5]}")
    print(f"print_pdf: {out} ({out.stat().st_size / 1e6:.1f} MB): {state['formulas']} formulas typeset, "
          f"{state['figures']} numbered figures")
    for problem in problems:
        print(f"print_pdf: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
