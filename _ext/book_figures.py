"""Sphinx extension: each chapter figure served narrow to a phone, with its text size on the page.

A chapter figure's ``image/png`` output carries, in its metadata, a narrow variant (panels stacked,
legends below) and the size of the smallest text of each variant (``lowrank.book.figures``, which
the book style installs as the inline figure formatter). myst-nb keeps only the PNG's width and
height, so here every pasted or displayed image whose file is one of those PNGs (myst-nb names
the file by the SHA-256 of its bytes) is wrapped in a ``<picture>``:

- a ``<source>`` for screens narrower than :data:`NARROW_SCREEN` px with the narrow PNG, written
  next to the book's other images;
- ``data-`` attributes with each variant's width at 1x (``data-width``, ``data-narrow-width``) and smallest text in 1x pixels, from which the
  browser test computes the text size as drawn, and the share of its width its plotting area takes
  (``data-plot-frac``, ``data-narrow-plot-frac``) and the texts drawn over each other, as JSON
  (``data-overlaps``, ``data-narrow-overlaps``); figures drawn before these were measured lack them.

A PNG written outside a notebook (the probe report's figures, the benchmarks' plot) carries its
measures in the file itself (``lowrank.core.figure_measures.save_png``); such an image gets the same
``data-`` attributes, without a narrow source: those figures are drawn to read on a phone as they are.

Nothing changes for an image without either (a notebook executed before the formatter existed, or a
figure drawn outside the book style).
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

from lowrank.book.figures import META_KEY
from lowrank.core.figure_measures import png_measures

NARROW_SCREEN = 600  # CSS px: below this the article column is narrower than the narrow variant
PNG_MIMES = ("image/png", "application/papermill.record/image/png")
_INDEX = "book_figures_index"


class picture(nodes.General, nodes.Element):
    """An image with a narrow source for small screens and its figure-text sizes."""


def _text(value) -> str:
    return value if isinstance(value, str) else "".join(value)


def figure_index(notebooks) -> dict[str, dict]:
    """SHA-256 of each figure PNG in ``notebooks`` -> its META_KEY metadata."""
    index = {}
    for path in notebooks:
        try:
            nb = json.loads(Path(path).read_text(encoding="utf8"))
        except (OSError, ValueError):
            continue  # not ours to judge: Sphinx reports unreadable sources itself
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                info = out.get("metadata", {}).get("image/png", {}).get(META_KEY)
                data = out.get("data", {})
                png = next((data[m] for m in PNG_MIMES if m in data), None)
                if info and png:
                    index[hashlib.sha256(base64.b64decode(_text(png))).hexdigest()] = info
    return index


def _index(app: Sphinx) -> dict[str, dict]:
    index = getattr(app, _INDEX, None)
    if index is None:
        env = app.env
        notebooks = [env.doc2path(d) for d in sorted(env.found_docs)]
        index = figure_index(p for p in notebooks if str(p).endswith(".ipynb"))
        setattr(app, _INDEX, index)
    return index


def wrap_figures(doctree: nodes.document, index: dict[str, dict], images_dir: Path,
                 srcdir: Path | None = None) -> int:
    """Wrap each image found in ``index``, or whose PNG under ``srcdir`` carries its measures, in a
    picture node; write narrow PNGs into ``images_dir``. Returns the number wrapped."""
    wrapped = 0
    for image in list(doctree.findall(nodes.image)):
        uri = image.get("uri", "")
        stem = Path(uri).stem
        info = index.get(stem)
        if info is None and srcdir is not None and uri.endswith(".png") and "://" not in uri:
            info = png_measures(srcdir / uri)
        if info is None or isinstance(image.parent, picture):
            continue
        attrs = {"width_1x": info["width"], "text_px": info["text_px"], "plot_frac": info.get("plot_frac"),
                 "overlaps": info.get("overlaps")}
        if "narrow" in info:
            name = f"{stem}-narrow.png"
            images_dir.mkdir(parents=True, exist_ok=True)
            target = images_dir / name
            if not target.exists():
                target.write_bytes(base64.b64decode(info["narrow"]))
            attrs.update(narrow=name, narrow_width_1x=info["narrow_width"], narrow_text_px=info["narrow_text_px"],
                         narrow_plot_frac=info.get("narrow_plot_frac"), narrow_overlaps=info.get("narrow_overlaps"))
        holder = picture("", **attrs)
        image.replace_self(holder)
        holder += image
        wrapped += 1
    return wrapped


def _attr(value) -> str:
    """A JSON value as an HTML attribute value."""
    return html.escape(json.dumps(value), quote=True)


def picture_open_tag(node: picture, imgpath: str) -> str:
    """The ``<picture ...><source ...>`` HTML that opens a picture node."""
    attrs = [f'data-width="{node["width_1x"]}"', f'data-text-px="{node["text_px"]}"']
    if node.get("plot_frac") is not None:
        attrs.append(f'data-plot-frac="{node["plot_frac"]}"')
    if node.get("overlaps") is not None:
        attrs.append(f'data-overlaps="{_attr(node["overlaps"])}"')
    source = ""
    if node.get("narrow"):
        attrs += [f'data-narrow="{node["narrow"]}"', f'data-narrow-width="{node["narrow_width_1x"]}"',
                  f'data-narrow-text-px="{node["narrow_text_px"]}"']
        if node.get("narrow_plot_frac") is not None:
            attrs.append(f'data-narrow-plot-frac="{node["narrow_plot_frac"]}"')
        if node.get("narrow_overlaps") is not None:
            attrs.append(f'data-narrow-overlaps="{_attr(node["narrow_overlaps"])}"')
        source = (f'<source media="(max-width: {NARROW_SCREEN - 0.02}px)" '
                  f'srcset="{imgpath}/{node["narrow"]}">')
    return f'<picture class="book-figure" {" ".join(attrs)}>{source}'


def visit_picture_html(self, node: picture) -> None:
    # By now the HTML builder has put a link to the full-size file around each scaled image
    # (picture > a > img), but a browser picks a <source> only for an <img> that is the picture's
    # own child: the link goes outside, a > picture > source + img.
    image = node.next_node(nodes.image)
    link = image.parent if isinstance(image.parent, nodes.reference) else None
    if link is not None:
        self.visit_reference(link)
    self.body.append(picture_open_tag(node, self.builder.imgpath))
    self.visit_image(image)
    self.depart_image(image)
    self.body.append("</picture>")
    if link is not None:
        self.depart_reference(link)
    raise nodes.SkipNode


def depart_picture_html(self, node: picture) -> None:
    pass  # visit_picture_html writes the whole element


def _pass(self, node) -> None:
    pass


def on_doctree_resolved(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    wrap_figures(doctree, _index(app), Path(app.outdir) / "_images", Path(app.srcdir))


def setup(app: Sphinx) -> dict:
    app.add_node(picture, html=(visit_picture_html, depart_picture_html),
                 latex=(_pass, _pass), text=(_pass, _pass))
    app.connect("doctree-resolved", on_doctree_resolved)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
