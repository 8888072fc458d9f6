"""Sphinx extension: the rendered book loads nothing from the network.

MathJax 3 is served from the build itself. Its files come from the PyPI package
``django-static-mathjax`` (import name ``mathjax``), which ships the official MathJax 3.2.2
distribution unchanged and is pinned in ``requirements/lock.txt``; nothing is fetched at build
time. ``mathjax_path`` in ``_config.yml`` names the entry point relative to ``_static/``
(``mathjax/tex-chtml.js``); the build fails if it points anywhere else, for instance at a CDN.
Only the parts the book can load are copied: the TeX-to-CommonHTML bundle, the TeX extensions it
autoloads (``\\boldsymbol``, ``\\cancel``, ...), its web fonts, and the menu's accessibility and
speech components, which load on demand.

sphinx-thebe, which Jupyter Book 1 always loads, writes the address of a remote thebe bundle into
every page even with ``launch_buttons.thebe: false``; the book has no live kernel (it is re-run
with ``lowrank run`` or papermill), so those scripts are dropped.
"""
from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError, ExtensionError
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

STATIC_FOLDER = "mathjax"  # under _static/ in the HTML output
ENTRY_POINTS = ("tex-chtml.js",)
MATHJAX_PARTS = (
    *ENTRY_POINTS,
    "input/tex/extensions",
    "output/chtml/fonts/woff-v2",
    "ui",
    "a11y",
    "sre",
)


def mathjax_es5() -> Path:
    """The es5/ folder of the installed MathJax 3 distribution."""
    try:
        import mathjax
    except ImportError as exc:
        raise ExtensionError(
            "MathJax is served from the build and comes from the PyPI package django-static-mathjax "
            "(import name 'mathjax'), which is not installed: run `make setup`, or "
            "`pip install django-static-mathjax` at the version pinned in requirements/lock.txt"
        ) from exc
    es5 = Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"
    missing = [part for part in MATHJAX_PARTS if not (es5 / part).exists()]
    if missing:
        raise ExtensionError(f"the MathJax package at {es5} lacks {', '.join(missing)}: reinstall it")
    return es5


def check_mathjax_path(app: Sphinx, config: Config) -> None:
    path = config.mathjax_path
    allowed = [f"{STATIC_FOLDER}/{name}" for name in ENTRY_POINTS]
    if PurePosixPath(path).as_posix() not in allowed:
        raise ConfigError(
            f"mathjax_path is {path!r}; the book serves MathJax from its own _static folder, so it "
            f"must be one of {allowed} (set it under sphinx.config in _config.yml)"
        )
    mathjax_es5()  # fail before reading any page when the package is missing


def _same_file(src: Path, dest: Path) -> bool:
    if not dest.is_file():
        return False
    a, b = src.stat(), dest.stat()
    return a.st_size == b.st_size and int(a.st_mtime) == int(b.st_mtime)


def copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    es5 = mathjax_es5()
    dest_root = Path(app.outdir) / "_static" / STATIC_FOLDER
    copied = 0
    for part in MATHJAX_PARTS:
        src = es5 / part
        files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
        for file in files:
            dest = dest_root / file.relative_to(es5)
            if _same_file(file, dest):
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, dest)
            copied += 1
    LOGGER.info(f"MathJax 3 served from {dest_root} ({copied} files updated)")


def drop_remote_thebe(app: Sphinx) -> None:
    """Disconnect sphinx-thebe's page hooks (a remote script URL and a binder config per page)."""
    try:
        import sphinx_thebe
    except ImportError:
        return
    hooks = {sphinx_thebe.init_thebe_core, sphinx_thebe.update_thebe_context}
    for listeners in app.events.listeners.values():
        for listener in list(listeners):
            if listener.handler in hooks:
                app.disconnect(listener.id)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", check_mathjax_path)
    app.connect("builder-inited", drop_remote_thebe)
    app.connect("build-finished", copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
