"""Mean bands: one line per group with its band (mean +- 1.96 standard errors) shaded beneath.

The one way the book draws a table of ``mean_band`` rows (columns: a group column, an x column,
mean, lo, hi), in the grey-safe styles of :mod:`lowrank.book.plotting`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from .plotting import grey_safe_lines

__all__ = ["band_lines", "bound_line", "log2_x"]


def band_lines(ax, band: pd.DataFrame, by: str, groups: Sequence[Any] | None = None, *, x: str = "head_dim",
               label: Callable[[Any], str] = str, x_of: Callable[[pd.Series, Any], Any] | None = None,
               reference: Callable[[Any], float] | None = None, **line) -> None:
    """Each group's mean as a line, its [lo, hi] band shaded in the same colour.

    groups: the groups of column ``by`` in drawing order (default: sorted); label(group): its legend
    text; x_of(x, group): where its points go when not at column ``x``; reference(group): a dotted
    line at that height in the group's colour (a per-group bound). ``line``: more plot keywords.
    """
    groups = sorted(band[by].unique()) if groups is None else list(groups)
    for style, group in zip(grey_safe_lines(len(groups)), groups):
        sub = band[band[by] == group]
        xs = sub[x] if x_of is None else x_of(sub[x], group)
        ax.plot(xs, sub["mean"], label=label(group), **line, **style)
        ax.fill_between(xs, sub["lo"], sub["hi"], color=style["color"], alpha=0.25)
        if reference is not None:
            ax.axhline(reference(group), color=style["color"], linewidth=0.8, linestyle=":")


def bound_line(ax, value: float, label: str = "bound") -> None:
    """One dotted horizontal line for a bound shared by every group."""
    ax.axhline(value, color="0.3", linestyle=":", label=label)


def log2_x(ax, xlabel: str, ylabel: str | None = None, **kw) -> None:
    """A base-2 logarithmic x axis and the axes' labels (``kw``: more axes settings)."""
    ax.set_xscale("log", base=2)
    ax.set(xlabel=xlabel, **({} if ylabel is None else {"ylabel": ylabel}), **kw)
