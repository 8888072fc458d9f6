"""Chapter 06's figures, each drawn from the tables of the chapter's ``run(P)`` (``t``), returned
as a matplotlib figure for the notebook to glue."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .bands import band_lines, log2_x
from .plotting import grey_safe_lines, subplots

__all__ = ["curves", "laws", "softmax"]

LAW_STYLES = {"a + b ln n": ":", "c n^alpha": "--", "c (ln n)^beta": "-"}
LEGEND_BESIDE = dict(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")


def curves(t: Mapping[str, Any]):
    """Mean hardmax rank over the bound per n against d_h (left) and against d_h / (ln n)^2 (right)."""
    fig, axes = subplots(1, 2, height=3.4, width=7.5)
    band_lines(axes[0, 0], t["band"], "n", markevery=4)
    band_lines(axes[0, 1], t["band"], "n", x_of=lambda d, n: d / np.log(n) ** 2, markevery=4)
    for ax in axes[0]:
        for f in t["P"]["fractions"]:
            ax.axhline(f, color="0.5", linewidth=0.7, linestyle=":")
        ax.set_xscale("log", base=2)
    axes[0, 0].set_ylabel(r"hardmax rank of $A$ / $n(1-(1-1/n)^n)$")
    axes[0, 0].set_xlabel("head size $d_h$")
    axes[0, 1].set_xlabel(r"$d_h / (\ln n)^2$")
    axes[0, 1].legend(**LEGEND_BESIDE, title="$n$")
    return fig


def laws(t: Mapping[str, Any]):
    """Saturation points of the fraction criteria (95 % intervals) against n, with each fitted law
    drawn from the table ``law_curves`` (criterion, law, n, head_dim)."""
    pts, law_curves = t["points"], t["law_curves"]
    crits = [c for c in dict.fromkeys(pts["criterion"]) if not c.startswith("increment")]
    fig, axes = subplots(1, 1, height=3.8, width=7.5)
    ax = axes[0, 0]
    for st, crit in zip(grey_safe_lines(len(crits)), crits):
        sub = pts[(pts.criterion == crit) & pts.estimable]
        ax.errorbar(sub["n"], sub["head_dim"], yerr=[sub["head_dim"] - sub["lo"], sub["hi"] - sub["head_dim"]],
                    color=st["color"], marker=st["marker"], linestyle="none", capsize=3, label=crit)
        for law, line in law_curves[law_curves.criterion == crit].groupby("law", sort=False):
            ax.plot(line["n"], line["head_dim"], color=st["color"], linestyle=LAW_STYLES[law], marker="none",
                    linewidth=1)
    for law, ls in LAW_STYLES.items():
        ax.plot([], [], color="0.3", linestyle=ls, marker="none", label=law)
    ax.set(xscale="log", yscale="log", xlabel="sequence length $n$", ylabel=r"saturation head size $d_h^\ast$")
    ax.set_xscale("log", base=2)
    ax.legend(**LEGEND_BESIDE)
    return fig


def softmax(t: Mapping[str, Any]):
    """Numerical rank / n of standard-temperature softmax against d_h, one panel per tolerance."""
    tols = t["tols"]
    fig, axes = subplots(1, len(tols), height=3.3, width=7.5)
    for ax, tol in zip(axes[0], tols):
        bands = t["soft_bands"]
        band_lines(ax, bands[bands.tolerance == tol], "n", label=lambda n: f"$n$ = {n}")
        log2_x(ax, "head size $d_h$", ylim=(0, 1.05), title=tol)
    axes[0, 0].set_ylabel("numerical rank of $A$ / $n$")
    axes[0, -1].legend(loc="lower right", fontsize="small")
    return fig
