"""Figures that read on a phone: a narrow variant of every figure, and the size of its smallest text.

A figure drawn for the ~700 px desktop column is shown at about half its size on a phone (390 px
wide), where its tick labels and legends fall below legibility. When a chapter's figure is displayed
(or glued), :func:`figure_png` renders it twice:

- the figure as drawn, a retina PNG as matplotlib's inline backend makes it;
- a narrow copy, :data:`NARROW_WIDTH` inches wide, with the panels of a multi-panel figure stacked
  one above the other and legends that sat beside an axes moved under it.

A figure that lays itself out for a phone better than a stacked copy can (the verdict chart, whose
long category labels would leave its bars a sliver) carries a function that draws its narrow
variant under the attribute :data:`NARROW_ATTR`; :func:`figure_png` calls it instead.

Both go into the output's ``image/png`` metadata (``lowrank``), with the 1x pixel width of each PNG,
the size of its smallest text in 1x pixels, the share of its width the plotting area takes, and the
texts drawn over each other (:func:`text_overlaps`). ``_ext/book_figures.py`` turns that into a
``<picture>`` whose narrow source small screens load, and the browser test checks, from those sizes
and the width the browser drew the image at, that no figure text falls below :data:`MIN_TEXT_PX`.
"""
from __future__ import annotations

import base64
import io
import pickle
import struct
import warnings

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import ScaledTranslation

from ..core.figure_measures import (MAX_OVERLAPS_KEPT, drawn_extent, plot_fraction, smallest_text_px,
                                    text_overlaps)
from ..core.figure_measures import png_width as _png_width

__all__ = ["NARROW_WIDTH", "MIN_TEXT_PX", "MIN_PLOT_FRAC", "PHONE_COLUMN_PX", "META_KEY", "NARROW_ATTR",
           "smallest_text_px", "plot_fraction", "drawn_extent", "text_overlaps", "narrow_copy", "narrow_variant",
           "render_png", "figure_png", "shown_text_px", "install"]

NARROW_WIDTH = 4.2          # inches: about 460 px at 1x, a phone column shows it at about 0.75
MIN_TEXT_PX = 9.0           # CSS px: the smallest figure text a reader can make out on a phone
# The narrow variant's smallest font: shown about 342 px wide, 4.2 in draw at about 1.13 px a point,
# so 9 pt keeps 9 px with room for a legend that widens the drawing a little.
NARROW_MIN_PT = 9.0
# y labels longer than this wrap in the narrow variant: about a third of a 4.2 in figure at 9 pt
NARROW_LABEL_CHARS = 24
PHONE_COLUMN_PX = 350       # CSS px: the article column of a 390 px screen, less the page margins
META_KEY = "lowrank"        # the output metadata entry (under "image/png") that carries both variants
NARROW_ATTR = "lowrank_narrow"  # a figure attribute: a function of no arguments drawing its narrow variant
# The plotting area (the axes, side by side or stacked) takes at least this share of a figure's width:
# a chart whose labels, legend or margins take more leaves its data too small to read.
MIN_PLOT_FRAC = 0.5
PANEL_HEIGHT = 3.2          # inches: the least height of one stacked panel (room for a long y label)


def render_png(fig: Figure) -> bytes:
    """``fig`` as a retina PNG (twice its dpi, tight bounding box), as the inline backend draws it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=2 * fig.dpi, bbox_inches="tight",
                facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    return buf.getvalue()


def _grid(fig: Figure):
    """(nrows, ncols, [(axes, row, col)]) of the figure's subplot grid, or None when it has none a
    stacked layout can rebuild (panels spanning several cells, several grids)."""
    cells, grids = [], set()
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None:  # colorbars and insets follow their parent axes
            continue
        if spec.rowspan.stop - spec.rowspan.start != 1 or spec.colspan.stop - spec.colspan.start != 1:
            return None
        grids.add(id(spec.get_gridspec()))
        cells.append((ax, spec.rowspan.start, spec.colspan.start))
    if len(grids) != 1:
        return None
    nrows, ncols = cells[0][0].get_subplotspec().get_gridspec().get_geometry()
    return nrows, ncols, cells


def _legend_below(ax) -> float:
    # A legend anchored right of its axes would take most of a narrow figure's width. Below the
    # x axis instead: the offset is the height of the axis' tick labels and label, which are sized
    # in points and so do not move when the layout resizes the axes.
    legend = ax.get_legend()
    if legend is None:
        return 0.0
    anchor = legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted())
    if anchor.x0 <= 0.99:
        return 0.0
    fig = ax.get_figure()
    renderer = fig.canvas.get_renderer()
    below = max(0.0, ax.bbox.y0 - ax.xaxis.get_tightbbox(renderer).y0) / fig.dpi + 0.08
    legend.set_loc("upper center")
    legend.set_bbox_to_anchor((0.5, 0.0), transform=ax.transAxes + ScaledTranslation(0, -below, fig.dpi_scale_trans))
    return legend.get_window_extent(renderer).height / fig.dpi + 0.1  # the height the figure needs more


def _at_least(fig: Figure, points: float) -> None:
    """Raise every text of ``fig`` smaller than ``points`` to it: tick labels, legends, labels, notes."""
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = axis.get_ticklabels()
            if labels and labels[0].get_fontsize() < points:
                ax.tick_params(axis=name, labelsize=points)
    for text in fig.findobj(Text):
        if text.get_text() and text.get_fontsize() < points:
            text.set_fontsize(points)


def _wrap_tick_labels(fig: Figure, chars: int) -> None:
    """Wrap long category labels on the y axes (a forest plot's comparisons), which would otherwise
    widen the narrow drawing and shrink all of its text."""
    import textwrap

    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        if any(len(label) > chars for label in labels):
            ax.set_yticks(ax.get_yticks(), [textwrap.fill(label, chars) for label in labels])


def _drawn_handles(fig: Figure, first=None) -> dict:
    """Each legend label's artist as the axes drew it (those of ``first`` before the others'): a
    legend keeps only a proxy of an errorbar series, without its marker, so a legend rebuilt from
    its own handles would lose what tells the series apart in grey."""
    out = {}
    for ax in ([first] if first is not None else []) + fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            out.setdefault(label, handle)
    return out


def _one_column_below(fig: Figure) -> float:
    """An axes legend set below its axes in columns is rebuilt in one column (columns side by side
    would widen the narrow drawing); returns the height in inches the figure needs more."""
    extra = 0.0
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        anchor = legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted())
        if anchor.y0 >= 0:
            continue
        texts = legend.get_texts()
        size = max([t.get_fontsize() for t in texts] + [NARROW_MIN_PT])
        labels = [t.get_text() for t in texts]
        drawn = _drawn_handles(fig, ax)
        handles = [drawn.get(label, h) for h, label in zip(legend.legend_handles, labels)]
        legend.remove()
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(anchor.x0, anchor.y0), ncols=1, fontsize=size)
        extra += len(labels) * size * 1.5 / 72
    return extra


def _figure_legends_below(fig: Figure) -> None:
    """A figure-level legend goes under the panels in one column: side by side or to the right it
    would widen the narrow drawing and shrink all of its text."""
    if fig.get_layout_engine() is None:
        return  # "outside" placement needs the constrained layout the book's figures use
    for legend in list(fig.legends):
        texts = legend.get_texts()
        labels = [t.get_text() for t in texts]
        size = max([t.get_fontsize() for t in texts] + [NARROW_MIN_PT])
        drawn = _drawn_handles(fig)
        handles = [drawn.get(label, h) for h, label in zip(legend.legend_handles, labels)]
        legend.remove()
        fig.legend(handles, labels, loc="outside lower center", ncols=1, fontsize=size)


def narrow_copy(fig: Figure) -> Figure | None:
    """A copy of ``fig`` laid out for a phone: NARROW_WIDTH inches wide, panels stacked in one
    column, side legends moved below. None when the figure cannot be copied (an artist that does not
    pickle) or its layout cannot be rebuilt."""
    try:
        copy = pickle.loads(pickle.dumps(fig))
    except Exception:
        return None
    grid = _grid(copy)
    if grid is None:
        plt.close(copy)
        return None
    nrows, ncols, cells = grid
    width, height = copy.get_size_inches()
    panel_height = max(PANEL_HEIGHT, height / nrows)
    if ncols > 1:
        stacked = copy.add_gridspec(nrows * ncols, 1)
        for ax, row, col in cells:
            ax.set_subplotspec(stacked[row * ncols + col, 0])
            # Shared axes hide the inner panels' tick labels; stacked, every panel needs its own.
            ax.yaxis.set_tick_params(labelleft=True)
            ax.xaxis.set_tick_params(labelbottom=True)
        copy.set_size_inches(NARROW_WIDTH, panel_height * nrows * ncols)
    else:
        copy.set_size_inches(NARROW_WIDTH, max(height, panel_height * nrows))
    _at_least(copy, NARROW_MIN_PT)
    _wrap_tick_labels(copy, NARROW_LABEL_CHARS)
    _figure_legends_below(copy)
    legend_room = _one_column_below(copy)
    engine = copy.get_layout_engine()
    if engine is not None and hasattr(engine, "set") and ncols > 1:
        engine.set(hspace=0.06)  # room between a panel's legend below it and the next title
    with warnings.catch_warnings():
        # This draw only measures the x axes; a side legend may not fit the narrow width yet, and
        # the layout it warns about is redone once the legends sit below.
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        copy.canvas.draw()
    extra = 0.0
    for ax, _, _ in cells:
        extra += _legend_below(ax)
        # A title wider than a narrow panel wraps instead of running over the y label.
        ax.title.set_wrap(True)
    suptitle = copy.get_suptitle()
    for text in copy.findobj(Text):
        if suptitle and text.axes is None and text.get_text() == suptitle:
            text.set_wrap(True)
    width, height = copy.get_size_inches()
    copy.set_size_inches(width, height + extra + legend_room)
    return copy


def narrow_variant(fig: Figure) -> Figure | None:
    """The figure's own narrow drawing (:data:`NARROW_ATTR`), else :func:`narrow_copy`."""
    draw = getattr(fig, NARROW_ATTR, None)
    return draw() if callable(draw) else narrow_copy(fig)


def figure_png(fig: Figure):
    """The inline ``image/png`` of ``fig``: (base64 PNG, metadata) with the 1x width and height, as
    IPython's retina formatter gives, plus META_KEY: the narrow variant and each variant's 1x width,
    smallest text in 1x pixels, plotting-area share of its width and texts drawn over each other."""
    if not fig.axes:
        return None
    wide = render_png(fig)
    w, h = _png_width(wide) // 2, struct.unpack(">I", wide[20:24])[0] // 2
    info = {"width": w, "text_px": round(smallest_text_px(fig), 2), "plot_frac": round(float(plot_fraction(fig)), 3),
            "overlaps": [list(pair) for pair in text_overlaps(fig)][:MAX_OVERLAPS_KEPT]}
    narrow = narrow_variant(fig)
    if narrow is not None:
        try:
            png = render_png(narrow)
            info["narrow"] = base64.b64encode(png).decode("ascii")
            info["narrow_width"] = _png_width(png) // 2
            info["narrow_text_px"] = round(smallest_text_px(narrow), 2)
            info["narrow_plot_frac"] = round(float(plot_fraction(narrow)), 3)
            info["narrow_overlaps"] = [list(pair) for pair in text_overlaps(narrow)][:MAX_OVERLAPS_KEPT]
        finally:
            plt.close(narrow)
    return base64.b64encode(wide).decode("ascii"), {"width": w, "height": h, META_KEY: info}


def shown_text_px(text_px: float, width_1x: float, shown_width: float) -> float:
    """The smallest text's size on screen when an image of 1x width ``width_1x`` is drawn
    ``shown_width`` CSS px wide."""
    return text_px * shown_width / width_1x


def install() -> bool:
    """Make IPython display figures through :func:`figure_png`. False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)
    return True
