"""The rendered book served on 127.0.0.1, one headless Chromium, and every page loaded once per width
for the whole session (the three test files share the loads and the screenshots)."""
from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from .book import CHROMIUM, CHROMIUM_ARGS, HTML, IN_CI, Page
from .visit import Visit, load


def _unavailable(reason: str):
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the browser test must run here)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def html_root() -> Path:
    if not (HTML / "index.html").is_file():
        _unavailable(f"no rendered book in {HTML}: run `make test`, or `python tools/render_book.py` first")
    return HTML


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site(html_root):
    handler = functools.partial(_QuietHandler, directory=str(html_root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
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


@pytest.fixture(scope="session")
def visit(site, browser):
    """visit(page, width) -> Visit: each page loaded, probed and screenshot once per width.

    Desktop screenshots go to ``_build/screenshots/<page>.png``, phone ones to
    ``_build/screenshots/phone/<page>.png``.
    """
    seen: dict[tuple[str, str], Visit] = {}

    def visit_once(page: Page, width: str = "desktop") -> Visit:
        if (page.path, width) not in seen:
            seen[page.path, width] = load(browser, site, page, width)
        return seen[page.path, width]

    return visit_once
