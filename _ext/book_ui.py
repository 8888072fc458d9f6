"""Sphinx extension: the rendered page as a reader meets it, whatever the notebooks contain.

Safety nets applied to every page at build time, so that a chapter cannot undo them by accident:

- **Figures keep their shape.** matplotlib's inline backend in retina mode (``png2x``, set by
  ``lowrank.book.plotting.use_style``) stores the figure's 1x size as ``width``/``height``
  metadata on each PNG output, and myst-nb copies both onto the ``<img>`` as a fixed pixel
  ``style``. The theme then caps the width at the column (``max-width: 100%``) but keeps the
  height, so every figure wider than the column was squeezed sideways. Here the height is dropped
  wherever a width is given (the width stays: the largest size the figure is shown at), and
  ``book_ui.css`` sets ``height: auto`` on every image. An image without alt text gets its
  figure's caption (or a neutral "Figure") instead of its hash file name.
- **Figures read on a phone.** ``book_figures`` (set up from here) serves each chapter figure's
  narrow variant, panels stacked, to screens under 600 px.
- **Test machinery out of sight.** A code cell whose source contains ``# NBVAL_CHECK_OUTPUT`` is
  removed from the page even when it is not tagged ``remove-cell`` (nbval still executes and checks
  it; only the rendering drops it); other ``# NBVAL_...`` marker lines are removed from the code
  shown. Output blocks from stderr are dropped (``nb_output_stderr: remove`` in ``_config.yml``
  does the same; this catches glued or nested outputs too).
- **Setup out of the way.** Parameter, import and table-formatting cells show their code behind a
  one-line toggle (``lowrank.book.cells`` decides which; ``tools/tidy_notebooks.py`` writes the
  same decision into the notebooks as tags), and a cell tagged ``provenance`` (revisions, dates,
  costs) folds, output and all, into one box.
- **Navigation on every screen.** ``book_nav.js`` makes the visible hamburger and contents buttons
  open the chapter list and the page contents (the installed theme pair binds hidden copies).
- **Nothing wider than the column.** ``book_ui.css`` wraps long code lines, lets wide display
  maths, tables and text outputs scroll inside their own box, and keeps the page itself from
  scrolling sideways on a phone.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config

from lowrank.book.cells import PROMPTS, PROVENANCE, quiet_role

STATIC = Path(__file__).resolve().parent / "static"
CSS_FILE = "book_ui.css"
JS_FILE = "book_nav.js"
SCROLL_JS_FILE = "book_scroll.js"  # marks boxes that scroll sideways, so that they show it
CHECK_MARKER = "# NBVAL_CHECK_OUTPUT"
NBVAL_LINE = re.compile(r"^[ \t]*#[ \t]*NBVAL_[A-Z_]+[ \t]*\n?", re.MULTILINE)
HASH_NAME = re.compile(r"(^|/)[0-9a-f]{32,}\.\w+$")


def _cell_source(cell: nodes.Element) -> str:
    for child in cell.findall(nodes.container):
        if child.get("nb_element") == "cell_code_source":
            return child.astext()
    return ""


def hide_test_machinery(doctree: nodes.document) -> int:
    """Remove NBVAL check cells and stderr outputs; strip NBVAL marker lines. Returns cells removed."""
    removed = 0
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code" or cell.parent is None:
            continue
        if CHECK_MARKER in _cell_source(cell):
            cell.parent.remove(cell)
            removed += 1
            continue
        for child in cell.findall(nodes.container):
            if child.get("nb_element") != "cell_code_source":
                continue
            for block in list(child.findall(nodes.literal_block)):
                text = block.astext()
                clean = NBVAL_LINE.sub("", text)
                if clean != text:
                    new = nodes.literal_block(clean, clean, **block.attributes)
                    block.replace_self(new)
    for block in list(doctree.findall(nodes.literal_block)):
        if "stderr" in block.get("classes", []) and block.parent is not None:
            block.parent.remove(block)
    return removed


def _tags(cell: nodes.Element) -> list[str]:
    return list((cell.get("cell_metadata") or {}).get("tags", []))


def hide_setup_cells(doctree: nodes.document) -> int:
    """Put the code of parameter, import and table cells behind a toggle. Returns cells hidden."""
    hidden = 0
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        if PROVENANCE in _tags(cell):
            cell["hide_mode"] = "all"
            cell["prompt_show"] = PROMPTS[PROVENANCE]
            cell["prompt_hide"] = "Hide the provenance"
            hidden += 1
            continue
        if cell.get("hide_mode") not in (None, "input"):
            continue
        if not any(c.get("nb_element") == "cell_code_source" for c in cell.children):
            continue
        raws = [r.astext() for r in cell.findall(nodes.raw) if "html" in r.get("format", "")]
        has_table = any("<table" in r for r in raws)
        has_display = bool(raws) or any(True for _ in cell.findall(nodes.image))
        role = quiet_role(_cell_source(cell), _tags(cell), has_table=has_table, has_display=has_display)
        if role is None:
            continue
        # A hide-input tag (tools/tidy_notebooks.py) has already hidden it; the prompt still says what
        # is hidden instead of myst-nb's generic "Show code cell source".
        cell["hide_mode"] = "input"
        cell["prompt_show"] = PROMPTS[role]
        cell["prompt_hide"] = "Hide the code"
        hidden += 1
    return hidden


def _caption_text(image: nodes.image) -> str:
    figure = image.parent
    while figure is not None and not isinstance(figure, nodes.figure):
        figure = figure.parent
    if figure is None:
        return ""
    caption = next(iter(figure.findall(nodes.caption)), None)
    return " ".join(caption.astext().split()) if caption is not None else ""


def keep_aspect_ratio(doctree: nodes.document) -> None:
    """Drop a fixed height where a width is given; give hash-named images a readable alt text."""
    for image in doctree.findall(nodes.image):
        if "height" in image and "width" in image:
            del image["height"]
        alt = image.get("alt", "")
        if not alt or HASH_NAME.search(alt) or alt == image.get("uri"):
            image["alt"] = _caption_text(image) or "Figure"


def on_doctree_read(app: Sphinx, doctree: nodes.document) -> None:
    hide_test_machinery(doctree)
    hide_setup_cells(doctree)


def on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    # After the post-transforms: glued figures ({glue:figure}) only exist from here on.
    hide_test_machinery(doctree)
    keep_aspect_ratio(doctree)


def add_static_path(app: Sphinx, config: Config) -> None:
    if str(STATIC) not in [str(p) for p in config.html_static_path]:
        config.html_static_path.append(str(STATIC))


def setup(app: Sphinx) -> dict:
    # Figures' narrow variants for phones come with the page's figures, wherever this one is used.
    app.setup_extension("book_figures")
    app.connect("config-inited", add_static_path)
    app.add_css_file(CSS_FILE)
    app.add_js_file(JS_FILE, loading_method="defer")
    app.add_js_file(SCROLL_JS_FILE, loading_method="defer")
    app.connect("doctree-read", on_doctree_read)
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
