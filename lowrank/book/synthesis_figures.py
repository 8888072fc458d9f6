"""Chapter 08's verdict chart: for each paper's proof checks and empirical claims, and for the
book's own findings, how many claims got each verdict.

The chart is drawn twice: for the desktop column with its labels left of the bars, and for a phone
(:func:`verdict_chart` attaches that drawing as the figure's narrow variant,
``lowrank.book.figures.NARROW_ATTR``) with each label above its bar, so that the bars take the
figure's whole width. A count that does not fit inside its segment goes under the bar, moved right
of the count before it, so no two counts ever overlap.
"""
from __future__ import annotations

import textwrap
from collections.abc import Iterable

import numpy as np
from matplotlib.transforms import ScaledTranslation

from ..experiments.synthesis import NOT_JUDGED, PROOF_CHECK, Row, is_claim
from ..experiments.verdicts import (CONDITIONAL, CONTRADICTED, CORRECTED, INCONCLUSIVE, NEGLIGIBLE, NOT_TESTED,
                                    REPRODUCED, VERDICTS, WEAKER)
from . import figures

__all__ = ["verdict_groups", "plot_verdicts_by_paper", "verdict_chart", "SHADES", "HATCHES"]

# light to dark from contradicted to reproduced, with hatches so the bars stay apart in grey scale
SHADES = {REPRODUCED: "#5aae61", CORRECTED: "#1b7837", WEAKER: "#a6dba0", CONDITIONAL: "#fee08b",
          NEGLIGIBLE: "#92c5de", INCONCLUSIVE: "#d9d9d9", CONTRADICTED: "#c2a5cf", NOT_TESTED: "#ffffff",
          NOT_JUDGED: "#ffffff"}
HATCHES = {REPRODUCED: "", CORRECTED: "", WEAKER: "//", CONDITIONAL: "..", NEGLIGIBLE: "||", INCONCLUSIVE: "",
           CONTRADICTED: "xx", NOT_TESTED: "\\\\", NOT_JUDGED: "--"}
WIDE_LABEL_CHARS = 28    # a label left of its bar wraps at this width (two lines at most for the papers' groups)
NARROW_LABEL_CHARS = 50  # a label above its bar: one line of the phone figure at its text size
NARROW_PT = 11.0         # the phone figure's text: shown at about 10.5 CSS px, above figures.MIN_TEXT_PX
NARROW_BAR_IN = 0.62     # inches per bar on a phone: the bar and a one-line label above it
ROW_IN = 0.3             # inches more per bar for a row of counts under it, when some do not fit inside
LABEL_PAD = 0.2          # the white box around a count, in units of its font size
GAP_PX = 1.5             # pixels kept clear on each side of a count's box


def verdict_groups(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """The bars of the verdict chart: each paper's proof checks, then its empirical claims (with the
    untested ones), then the book's own findings; empty groups left out."""
    rows = [r for r in rows if is_claim(r) and r.paper]
    out: dict[str, list[Row]] = {}
    for paper in dict.fromkeys(r.paper for r in rows if not r.own):
        mine = [r for r in rows if r.paper == paper]
        out[f"{paper}: proof checks"] = [r for r in mine if r.kind == PROOF_CHECK]
        out[f"{paper}: empirical claims"] = [r for r in mine if r.kind != PROOF_CHECK]
    out["this book's own findings"] = [r for r in rows if r.own]
    return {k: v for k, v in out.items() if v}


def _counts_inside(ax, labels: list[tuple[float, float, float, str]], fontsize, below: float) -> bool:
    """Each count centred in its segment (x from left, width, bar y). One that does not fit goes
    ``below`` the bar's centre (data units), right of the previous one there, so that no two counts
    overlap: the row is laid out in points from its first count, which a later layout of the figure
    does not change. Call once the figure's layout is final (legend placed). Returns whether any
    count went below its bar."""
    fig = ax.get_figure()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    to_data = ax.transData.inverted()
    points = 72 / fig.dpi
    rows: dict[float, tuple[float, float]] = {}  # bar y -> (the row's anchor in data, its next free point)
    box = dict(boxstyle=f"round,pad={LABEL_PAD}", facecolor="white", edgecolor="none")
    spilled = False
    for left, width, y, text in labels:
        t = ax.text(left + width / 2, y, text, ha="center", va="center", fontsize=fontsize, bbox=box)
        extent = figures.drawn_extent(t, renderer)
        x0, x1 = (to_data.transform((x, 0))[0] for x in (extent.x0 - GAP_PX, extent.x1 + GAP_PX))
        if x1 - x0 <= width:
            continue
        t.remove()
        spilled = True
        size_pt = (extent.width + 2 * GAP_PX) * points
        # where its box would start, centred on its segment, but not left of the axes
        natural = max(left + width / 2 - (x1 - x0) / 2, ax.get_xlim()[0])
        anchor, free = rows.setdefault(y, (natural, 0.0))
        at = max(free, (ax.transData.transform((natural, 0))[0] - ax.transData.transform((anchor, 0))[0]) * points)
        ax.annotate(text, xy=(anchor, y + below), xytext=(at + size_pt / 2, 0), textcoords="offset points",
                    ha="center", va="top", fontsize=fontsize, bbox=box, annotation_clip=False)
        rows[y] = (anchor, at + size_pt)
    return spilled


def plot_verdicts_by_paper(rows: Iterable[Row], ax, *, narrow: bool = False, room_below: bool = False) -> bool:
    """Horizontal stacked bars: for each paper's proof checks and empirical claims, and for the book's own
    findings, how many got each verdict (proof checks are never added to empirical results).

    ``narrow``: the phone layout, each group's label above its bar and the legend in one column.
    ``room_below``: thinner bars (desktop) or a figure drawn taller (phone) so that counts too wide
    for their segment sit in a row under the bar. Returns whether any count went under its bar."""
    groups = verdict_groups(rows)
    papers = list(groups)
    if not papers:
        ax.text(0.5, 0.5, "no claim collected yet", ha="center", va="center", transform=ax.transAxes)
        ax.set(xticks=[], yticks=[])
        return False
    size = NARROW_PT if narrow else "small"
    height = 0.42 if narrow else (0.5 if room_below else 0.8)
    left = np.zeros(len(papers))
    counts_at = []
    for v in (*VERDICTS, NOT_JUDGED):
        counts = np.array([sum(r.verdict == v for r in groups[p]) for p in papers], float)
        if not counts.any():
            continue
        ax.barh(range(len(papers)), counts, left=left, height=height, color=SHADES[v], hatch=HATCHES[v],
                edgecolor="black", linewidth=0.6, label=v)
        counts_at += [(x, c, i, f"{int(c)}") for i, (c, x) in enumerate(zip(counts, left)) if c]
        left += counts
    ax.set_xlim(0, max(left.max(), 1) * 1.02)
    ax.set_ylim(len(papers) - 0.5 + (0.2 if narrow and room_below else 0.0), -0.5 - (0.25 if narrow else 0.0))
    if narrow:
        ax.set_yticks([])
        for i, name in enumerate(papers):
            ax.text(0, i - height / 2 - 0.06, textwrap.fill(name, NARROW_LABEL_CHARS), ha="left", va="bottom",
                    fontsize=NARROW_PT, transform=ax.get_yaxis_transform())
        ax.tick_params(axis="x", labelsize=NARROW_PT)
        ax.xaxis.label.set_size(NARROW_PT)
    else:
        ax.set_yticks(range(len(papers)), [textwrap.fill(p, WIDE_LABEL_CHARS) for p in papers])
    ax.set_xlabel("number of claims")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.grid(axis="y", visible=False)
    fig = ax.get_figure()
    if narrow:
        # under the x axis' ticks and label, which are sized in points: an offset in inches holds
        fig.canvas.draw()
        below = (ax.bbox.y0 - ax.xaxis.get_tightbbox(fig.canvas.get_renderer()).y0) / fig.dpi + 0.08
        ax.legend(title="verdict", fontsize=NARROW_PT, title_fontsize=NARROW_PT, loc="upper left", ncols=1,
                  bbox_to_anchor=(0.0, 0.0), bbox_transform=ax.transAxes + ScaledTranslation(0, -below,
                                                                                            fig.dpi_scale_trans))
    elif fig.get_layout_engine() is not None:
        # under the whole figure, not the axes: a legend wider than the bars would widen the figure
        handles, names = ax.get_legend_handles_labels()
        fig.legend(handles, names, title="verdict", fontsize="small", loc="outside lower center", ncols=2)
    else:
        ax.legend(title="verdict", fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    fig.canvas.draw()  # the layout settles with the legend in place; the counts are measured in it
    spilled = _counts_inside(ax, counts_at, size, below=height / 2 + 0.04)
    return spilled


def verdict_chart(rows: Iterable[Row], *, width: float = 7.5, height: float = 4.4):
    """The verdict chart as a figure for the desktop column, carrying its phone drawing
    (``figures.NARROW_ATTR``): labels above the bars, which take the whole width. Either is drawn
    again with room under its bars when a count does not fit inside its segment."""
    import matplotlib.pyplot as plt

    from .plotting import subplots

    rows = list(rows)

    def wide(room: bool):
        fig, axes = subplots(1, 1, width=width, height=height)
        return fig, plot_verdicts_by_paper(rows, axes[0, 0], room_below=room)

    def narrow_drawing(room: bool):
        names = list(verdict_groups(rows)) or [""]
        lines = max(textwrap.fill(name, NARROW_LABEL_CHARS).count("\n") for name in names)
        per_bar = NARROW_BAR_IN + lines * NARROW_PT * 1.3 / 72 + (ROW_IN if room else 0.0)
        legend = len({r.verdict for r in rows if is_claim(r)}) + 1
        small, ax = subplots(1, 1, width=figures.NARROW_WIDTH,
                             height=per_bar * len(names) + 0.6 + legend * NARROW_PT * 1.6 / 72)
        return small, plot_verdicts_by_paper(rows, ax[0, 0], narrow=True, room_below=room)

    def redrawn(draw):
        fig, spilled = draw(False)
        if spilled:
            plt.close(fig)
            fig, _ = draw(True)
        return fig

    fig = redrawn(wide)
    setattr(fig, figures.NARROW_ATTR, lambda: redrawn(narrow_drawing))
    return fig
