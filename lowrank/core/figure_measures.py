"""Measures of a drawn matplotlib figure that say whether it reads on a phone.

- :func:`smallest_text_px`: the smallest visible text, in pixels of a rendering at ``dpi``;
- :func:`plot_fraction`: the share of the saved width the axes cover;
- :func:`text_overlaps`: texts drawn over each other.

:func:`save_png` writes a figure with these measures in the PNG itself (a ``tEXt`` chunk under
:data:`PNG_KEY`), so that a page showing a PNG written outside a notebook (a probe report, the
benchmarks' plot) can still be checked for legibility; :func:`png_measures` reads them back.
The book's notebook figures carry the same measures in their output metadata instead.
"""
from __future__ import annotations

import io
import json
import os
import struct

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.text import Text

from .files import atomic_write

__all__ = ["PNG_KEY", "MAX_OVERLAPS_KEPT", "smallest_text_px", "plot_fraction", "drawn_extent", "text_overlaps",
           "png_width", "save_png", "png_measures", "phone_fonts"]

PNG_KEY = "lowrank"  # the PNG text chunk that carries a saved figure's measures
MAX_OVERLAPS_KEPT = 5  # overlapping text pairs recorded per variant: enough to name the problem


def phone_fonts(pt: float = 10) -> dict:
    """rc settings that draw every text of a figure at ``pt`` points: at 10 pt a 4.2 in figure reads
    at 9 px or more in a 350 px phone column."""
    return {k: pt for k in ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
                            "legend.fontsize")}


def smallest_text_px(fig: Figure, dpi: float | None = None) -> float:
    """The size of the smallest visible, non-empty text of ``fig``, in pixels of a rendering at
    ``dpi`` (default: the figure's own, its 1x rendering)."""
    fig.canvas.draw()  # tick labels exist only once drawn
    sizes = [t.get_fontsize() for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and _drawn(t)]
    if not sizes:
        return float("inf")
    return min(sizes) * (dpi or fig.dpi) / 72.0


def plot_fraction(fig: Figure) -> float:
    """The share of the saved figure's width (tight bounding box and its padding, as
    :func:`save_png` and the book's inline figures save it) that its axes cover, their horizontal extents merged."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = sorted((b.x0, b.x1) for b in (ax.get_window_extent(renderer) for ax in fig.axes
                                          if ax.get_visible()) if b.width > 0)
    if not boxes:
        return 0.0
    covered, (start, end) = 0.0, boxes[0]
    for x0, x1 in boxes[1:]:
        if x0 > end:
            covered, start, end = covered + end - start, x0, x1
        else:
            end = max(end, x1)
    covered += end - start
    pad = plt.rcParams["savefig.pad_inches"] if plt.rcParams["savefig.pad_inches"] != "layout" else 0.0
    width = fig.get_tightbbox(renderer).width * fig.dpi + 2 * float(pad) * fig.dpi
    return covered / width


def drawn_extent(text: Text, renderer):
    """The extent of ``text`` with its box, if it has one: the text's extent grown by the box's pad
    (a box patch's own extent is not reliable for annotations, whose patch lives in offset space)."""
    extent = text.get_window_extent(renderer)
    patch = text.get_bbox_patch()
    if patch is None:
        return extent
    pad = getattr(patch.get_boxstyle(), "pad", 0.0) * text.get_fontsize() * text.get_figure().dpi / 72
    return extent.expanded(1.0, 1.0).padded(pad)


def _undrawn_ticks(fig: Figure) -> set[int]:
    """ids of the tick labels an axis keeps but does not draw: those of ticks outside its view
    (compared in the axis' scale, so that a log axis' ticks are judged by position, not value)."""
    import numpy as np

    out = set()
    for ax in fig.axes:
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            scale = axis.get_transform()
            lo, hi = sorted(scale.transform(np.asarray(lim, float)))
            slack = 1e-9 * (hi - lo)
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                at = scale.transform(np.asarray([tick.get_loc()], float))[0]
                if not lo - slack <= at <= hi + slack:
                    out |= {id(tick.label1), id(tick.label2)}
    return out


def text_overlaps(fig: Figure) -> list[tuple[str, str]]:
    """Pairs of visible texts of ``fig`` drawn over each other (their boxes, or their extents, meet
    by more than a pixel each way): tick labels that collide, counts crammed into a bar, a label on a
    legend. A legend's own texts and its title are one block and not compared with each other."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [lg for ax in fig.axes for lg in [ax.get_legend()] if lg is not None] + list(fig.legends)
    skip = {id(t) for lg in legends for t in (*lg.get_texts(), lg.get_title())} | _undrawn_ticks(fig)
    items = []
    for t in fig.findobj(Text):
        if not (t.get_visible() and t.get_text().strip() and _drawn(t)) or id(t) in skip:
            continue
        items.append((t.get_text(), drawn_extent(t, renderer)))
    for lg in legends:
        if lg.get_visible():
            items.append((f"legend {lg.get_title().get_text()!r}".strip(), lg.get_window_extent(renderer)))
    out = []
    for i, (a, box_a) in enumerate(items):
        for b, box_b in items[i + 1:]:
            w = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            h = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if w > 1 and h > 1:
                out.append((a, b))
    return out


def _drawn(text: Text) -> bool:
    # Tick labels outside the view limits are kept by matplotlib but not drawn.
    axes = text.axes
    if axes is None or text.get_figure() is None:
        return True
    window = text.get_window_extent()
    figbox = text.get_figure().bbox
    return window.width > 0 and window.x1 >= figbox.x0 - 1 and window.x0 <= figbox.x1 + 1


def png_width(png: bytes) -> int:
    """The pixel width of a PNG, from its header."""
    return struct.unpack(">I", png[16:20])[0]


def save_png(fig: Figure, path: str | os.PathLike, *, dpi: float = 150) -> dict:
    """Save ``fig`` as a PNG at ``dpi`` (tight bounding box) with its measures inside, in pixels of
    that PNG: ``width``, ``text_px`` (smallest text), ``plot_frac`` and ``overlaps``. Returns them."""
    info = {"text_px": round(smallest_text_px(fig, dpi), 2), "plot_frac": round(float(plot_fraction(fig)), 3),
            "overlaps": [list(pair) for pair in text_overlaps(fig)][:MAX_OVERLAPS_KEPT]}
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    info["width"] = png_width(buf.getvalue())
    buf = io.BytesIO()
    # No software chunk: the same figure gives the same bytes.
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None, PNG_KEY: json.dumps(info)})
    atomic_write(path, lambda tmp: tmp.write_bytes(buf.getvalue()))
    return info


def png_measures(path: str | os.PathLike) -> dict | None:
    """The measures :func:`save_png` put in a PNG, or None for a PNG without them."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            text = im.info.get(PNG_KEY)
    except OSError:
        return None
    return json.loads(text) if text else None
