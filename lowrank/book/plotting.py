"""One figure style for the whole book: seaborn, colour-blind palette, sharp at page width."""
from __future__ import annotations

import os

import matplotlib as mpl
import matplotlib.pyplot as plt
import seaborn as sns
from matplotlib.transforms import ScaledTranslation

from . import figures
from .outputs import FORMATS_ENV

PALETTE = "colorblind"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")
FONT_SCALE = 1.15


def use_style() -> None:
    """Apply the book style; call once at the top of a chapter."""
    # Larger type than seaborn's "notebook" context: a figure is shown shrunk to the column (and
    # further on a phone), and "small" legends must stay legible there.
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE, font_scale=FONT_SCALE)
    mpl.rcParams.update({
        "figure.figsize": (7.0, 4.0),
        "figure.dpi": 110,
        "savefig.dpi": 200,
        "savefig.bbox": "tight",
        "axes.titlesize": "medium",
        "legend.frameon": True,
        "legend.framealpha": 0.9,
        "figure.constrained_layout.use": True,
    })
    # Retina output keeps inline figures sharp in the rendered HTML: a PNG at twice the pixels, with
    # its 1x size as width/height metadata. The book keeps only the width (the largest size shown)
    # and lets the height follow, so figures keep their aspect ratio at every width
    # (_ext/book_ui.py); a figure wider than the ~700 px column is scaled down, never squeezed.
    # A `lowrank run` kernel also asks for SVG (LOWRANK_FIGURE_FORMATS), which lowrank.book.outputs
    # saves into the run folder beside each figure's PNG.
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        formats = os.environ.get(FORMATS_ENV, "png2x").split(",")
        set_matplotlib_formats(*formats)
    except ImportError:  # outside IPython
        return
    if "png2x" in formats:
        # The same retina PNG, plus a narrow variant for phones and the size of each one's
        # smallest text (lowrank.book.figures; _ext/book_figures.py serves it).
        figures.install()


def subplots(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.6, **kw):
    """plt.subplots sized for the page: `width` inches wide in all, `height` per row."""
    return plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, **kw)


def grey_safe_lines(n: int) -> list[dict]:
    """Colour + marker + line style per series, so curves stay apart in grey scale."""
    colours = sns.color_palette(PALETTE, n)
    return [dict(color=colours[i], marker=MARKERS[i % len(MARKERS)],
                 linestyle=LINESTYLES[i % len(LINESTYLES)]) for i in range(n)]


def legend_below(ax, **kwargs):
    """A legend centred under the axes, below its x tick labels and label, at any axes height: the
    offset is in inches, as those are sized in points. Beside the axes a legend would take the
    plotting area's width; at a fixed fraction of the axes' height below it, it can cover the x label."""
    fig = ax.get_figure()
    fig.canvas.draw()
    below = (ax.bbox.y0 - ax.xaxis.get_tightbbox(fig.canvas.get_renderer()).y0) / fig.dpi + 0.08
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0),
                     bbox_transform=ax.transAxes + ScaledTranslation(0, -below, fig.dpi_scale_trans), **kwargs)
