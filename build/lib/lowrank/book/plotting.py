"""One figure style for the whole book: seaborn, colour-blind palette, sharp at page width."""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import seaborn as sns

PALETTE = "colorblind"
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")


def use_style() -> None:
    """Apply the book style; call once at the top of a chapter."""
    sns.set_theme(context="notebook", style="whitegrid", palette=PALETTE)
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
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("png2x")
    except ImportError:  # outside IPython
        pass


def subplots(nrows: int = 1, ncols: int = 1, *, width: float = 7.0, height: float = 3.6, **kw):
    """plt.subplots sized for the page: `width` inches wide in all, `height` per row."""
    return plt.subplots(nrows, ncols, figsize=(width, height * nrows), squeeze=False, **kw)


def grey_safe_lines(n: int) -> list[dict]:
    """Colour + marker + line style per series, so curves stay apart in grey scale."""
    colours = sns.color_palette(PALETTE, n)
    return [dict(color=colours[i], marker=MARKERS[i % len(MARKERS)],
                 linestyle=LINESTYLES[i % len(LINESTYLES)]) for i in range(n)]
