"""Chapter 07's figures, drawn from the plot-ready inputs of the chapter's ``figure_data(tables, H, P)``
(:mod:`lowrank.experiments.trained_attention.plots`), one keyword dict per figure.

Each function draws on the axes it is given (the page makes them, with the book's sizes) and returns
nothing. ``styles(k)`` gives k line styles that stay apart in grey scale (by default the book's
grey-safe lines).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator

from ..measure.rank import DEFAULT_TOL, rank_label
from .plotting import grey_safe_lines

__all__ = ["plot_ranks_vs_n", "plot_patterns", "plot_layers", "plot_retrieval", "plot_saturation", "plot_truncation",
           "plot_truncation_layers", "plot_classifiers", "plot_latent"]


def _ticks(axis, values: Sequence[float]) -> None:
    """Ticks at ``values`` only, labelled as plain numbers (no minor ticks on a log axis)."""
    (axis.axes.set_xticks if axis.axis_name == "x" else axis.axes.set_yticks)(values, [str(v) for v in values])
    axis.set_minor_locator(NullLocator())


def plot_ranks_vs_n(axes, series: Mapping[str, Mapping[str, pd.DataFrame]], *, labels: Sequence[str],
                    ns: Sequence[int], head_dim: int, barrier: Sequence[float], styles=grey_safe_lines) -> None:
    """Every rank measure of the logits S (left, ``series["logits"]``) and the attention A (right,
    ``series["probs"]``) against n, each a frame of mean, lo and hi per n (bars: lo to hi), keyed by its
    label; a label's style is its place in ``labels``, so a measure looks alike in both panels. Beside
    them d_h (left) and the barrier at each of ``ns`` (right)."""
    for ax, matrix, title in [(axes[0, 0], "logits", "logits $S$"), (axes[0, 1], "probs", "attention $A$")]:
        for style, label in zip(styles(len(labels)), labels):
            if label not in series[matrix]:
                continue
            s = series[matrix][label]
            ax.errorbar(s.index, s["mean"], yerr=[(s["mean"] - s.lo).clip(lower=0), (s.hi - s["mean"]).clip(lower=0)],
                        capsize=3, label=label, **style)
        ax.plot(ns, ns, color="grey", linewidth=0.8, linestyle=":", label="$n$")
        if matrix == "logits":
            ax.axhline(head_dim, color="black", linewidth=0.8, linestyle="--", label=f"$d_h$ = {head_dim} (left)")
        else:
            ax.plot(ns, barrier, color="black", linewidth=0.8, linestyle="-.", label="barrier $n(1-(1-1/n)^n)$ (right)")
        ax.set(xscale="log", yscale="log", xlabel="sequence length $n$ (tokens)", title=title)
        _ticks(ax.xaxis, ns)
    axes[0, 0].set_ylabel("rank (mean; bars: 25th-75th percentile)")
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    axes[0, 0].figure.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=2, fontsize="x-small")


def plot_patterns(axes, points: pd.DataFrame, *, layers: int, n_max: int, barrier: float,
                  styles=grey_safe_lines) -> None:
    """Each head's hardmax rank / n at the longest n ``n_max`` (``points``: layer, neighbour, to_first,
    rank_frac) against where its queries look: the neighbouring tokens (left) or [CLS] (right), one
    marker per layer, the ``barrier`` dashed."""
    for ax, col, xlabel in [(axes[0, 0], "neighbour", "share of queries whose\nargmax key is $i-1$, $i$ or $i+1$"),
                            (axes[0, 1], "to_first", "share of queries whose\nargmax key is [CLS]")]:
        for style, layer in zip(styles(layers), range(layers)):
            d = points[points.layer == layer]
            ax.plot(d[col], d.rank_frac, linestyle="none", marker=style["marker"], color=style["color"],
                    markersize=4, alpha=0.8, label=f"layer {layer}")
        ax.axhline(barrier, color="black", linewidth=0.8, linestyle="--")
        ax.set(xlabel=xlabel, xlim=(-0.03, 1.03))
    axes[0, 0].set(ylabel=f"hardmax rank of $A$ / $n$ (n = {n_max})")
    # Under the panels: beside them the legend would take the plotting area's width.
    axes[0, 0].figure.legend(*axes[0, 1].get_legend_handles_labels(), loc="outside lower center", ncols=layers,
                             fontsize="x-small")


def plot_layers(ax, series: Sequence[tuple[str, pd.DataFrame, pd.Series]], *, barrier: float, layers: int,
                title: str, styles=grey_safe_lines) -> None:
    """Rank of A / n of every head by layer, one (label, heads' layer and frac, mean per layer) entry
    of ``series`` per measure, side by side, with the ``barrier`` dashed."""
    centre = (len(series) - 1) / 2
    for k, (style, (label, heads, means)) in enumerate(zip(styles(len(series)), series)):
        ax.plot(heads.layer + (k - centre) * 0.18, heads.frac, linestyle="none", marker=style["marker"],
                color=style["color"], alpha=0.75, markersize=4, label=label)
        ax.plot(means.index + (k - centre) * 0.18, means, color=style["color"], linestyle=style["linestyle"],
                linewidth=1)
    ax.axhline(barrier, color="black", linewidth=0.8, linestyle="--", label="barrier $1-(1-1/n)^n$")
    ax.set(xlabel="layer", ylabel="rank of $A$ / $n$", ylim=(0, 1.05), title=title)
    ax.set_xticks(range(layers))
    # A figure legend under the axes: one anchored at a share of the axes' height can cover the x label.
    ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="x-small")


def plot_retrieval(axes, summary: pd.DataFrame, capped: pd.DataFrame, *, tasks: Sequence[str], ns: Sequence[int],
                   styles=grey_safe_lines) -> None:
    """Test accuracy (left) and hardmax rank / n (right) against d_h, one row per task of ``tasks``,
    one line per n of ``ns``: ``summary`` (task, n, measure test_acc or hard_frac, head_dim, mean,
    std) as mean and sd, the ``capped`` runs' own values as crosses."""
    hard = rank_label("hardmax rank", "", "A")
    for row, task in enumerate(tasks):
        sub, cut = summary[summary.task == task], capped[capped.task == task]
        for style, n in zip(styles(len(ns)), ns):
            cap = cut[cut.n == n]
            for col, value in enumerate(["test_acc", "hard_frac"]):
                m = sub[(sub.n == n) & (sub.measure == value)]
                axes[row, col].errorbar(m.head_dim, m["mean"], yerr=m["std"].fillna(0), capsize=2, label=f"n = {n}",
                                        **style)
                axes[row, col].plot(cap.head_dim, cap[value], linestyle="none", marker="x", color=style["color"])
        # Two lines: on one, a label is longer than its panel is high and runs into the next.
        axes[row, 0].set(ylabel=f"{task} task:\ntest accuracy")
        axes[row, 1].set(ylabel=f"{task} task:\n{hard} / n")
    for ax in axes[1]:
        ax.set(xscale="log", xlabel="query/key size $d_h$")
        _ticks(ax.xaxis, [1, 2, 4, 8, 16])
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=len(ns),
                             fontsize="x-small")


def plot_saturation(axes, panels: Sequence[tuple[str, pd.DataFrame, Mapping[str, tuple]]], *, ns: Sequence[int],
                    head_dims: Sequence[int], n_grid: np.ndarray, styles=grey_safe_lines) -> None:
    """One panel per (task, intervals, bands) of ``panels``: the grid intervals of d*_acc (a_lo to
    a_hi) and d*_rank (r_lo to r_hi) against n, each growth law's band (lo, hi over ``n_grid``, keyed
    by the law's label) and the line d_h = ln n."""
    top = max(head_dims) * 1.3  # where an open-topped interval is drawn to
    for ax, (task, pts, bands) in zip(axes[0], panels):
        for k, (style, q, label) in enumerate(zip(styles(2), "ar", ["$d^*_{acc}$", "$d^*_{rank}$"])):
            x = pts.n * (1.0 + 0.05 * (2 * k - 1))
            lo, hi = pts[f"{q}_lo"].clip(lower=0.5), pts[f"{q}_hi"].clip(upper=top)
            ax.vlines(x, lo, hi, color=style["color"], linewidth=3 - k, label=f"{label}: grid interval")
        for (law, (blo, bhi)), ls in zip(bands.items(), ["--", "-.", ":"]):
            ax.fill_between(n_grid, np.clip(blo, 0.5, top), np.clip(bhi, 0.5, top), alpha=0.12, color="grey")
            ax.plot(n_grid, np.clip(bhi, 0.5, top), color="grey", linestyle=ls, linewidth=0.9, label=f"{law} fits")
        ax.plot(n_grid, np.log(n_grid), color="black", linewidth=0.6, linestyle=(0, (1, 3)), label="$d_h = \\ln n$")
        ax.set(xscale="log", yscale="log", xlabel="sequence length $n$", title=f"{task} task",
               xlim=(min(ns) / 1.3, max(ns) * 1.3), ylim=(0.5, top))
        _ticks(ax.xaxis, ns)
    axes[0, 0].set(ylabel="saturating $d_h$ (grid interval)")
    _ticks(axes[0, 0].yaxis, [1, 2, 4, 8, 16])
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=3,
                             fontsize="x-small")


def _agreement_axes(ax_overlap, ax_similarity, overlap_level: float, similarity_level: float) -> None:
    """Titles, labels and the rule's levels on the panels of measures (a) and (b)."""
    ax_overlap.axhline(overlap_level, color="black", linewidth=0.8, linestyle="--")
    ax_similarity.axhline(similarity_level, color="black", linewidth=0.8, linestyle="--")
    ax_overlap.set(title="(a) neighbours", ylabel="share of the top 10 kept")
    ax_similarity.set(title="(b) similarities", ylabel="Pearson r with the full model")


def plot_truncation(axes, curves: pd.DataFrame, *, ns: Sequence[int], folds: int, overlap_level: float,
                    similarity_level: float, styles=grey_safe_lines) -> None:
    """Measures (a) overlap, (b) sim_corr and (c) acc (± acc_se, over ``folds`` folds) of ``curves``
    against the rank r every head is cut to, one line per n of ``ns``; the rule's levels of (a) and (b)."""
    for style, n in zip(styles(len(ns)), ns):
        d = curves[curves.n == n]
        axes[0, 0].plot(d.r, d.overlap, label=f"n = {n}", **style)
        axes[0, 1].plot(d.r, d.sim_corr, label=f"n = {n}", **style)
        axes[0, 2].errorbar(d.r, d.acc, yerr=d.acc_se, capsize=2, label=f"n = {n}", **style)
    _agreement_axes(axes[0, 0], axes[0, 1], overlap_level, similarity_level)
    axes[0, 2].set(title="(c) topic probe", ylabel=f"accuracy ({folds}-fold CV, ± s.e.)")
    for ax in axes[0]:
        ax.set(xscale="log", xlabel="logit rank $r$\nof every head")
        _ticks(ax.xaxis, [1, 2, 4, 8, 16, 32])
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=4,
                             fontsize="x-small")


def plot_truncation_layers(axes, cuts: pd.DataFrame, *, ranks: Sequence[int], overlap_level: float,
                           similarity_level: float, styles=grey_safe_lines) -> None:
    """Measures (a) overlap and (b) sim_corr of ``cuts`` when one layer's heads are cut to rank r, one
    line per layer, ticks at ``ranks``; the rule's levels of (a) and (b)."""
    count = max(1, cuts.layer.nunique())
    for style, layer in zip(styles(count), sorted(cuts.layer.unique())):
        d = cuts[cuts.layer == layer].sort_values("r")
        axes[0, 0].plot(d.r, d.overlap, label=f"layer {layer}", **style)
        axes[0, 1].plot(d.r, d.sim_corr, label=f"layer {layer}", **style)
    _agreement_axes(axes[0, 0], axes[0, 1], overlap_level, similarity_level)
    for ax in axes[0]:
        ax.set(xscale="log", xlabel="logit rank $r$ of one layer's heads")
        _ticks(ax.xaxis, ranks)
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=count,
                             fontsize="x-small")


def plot_classifiers(axes, rows: Sequence[tuple[str, pd.DataFrame, pd.DataFrame]], *, head_dims: Sequence[int],
                     styles=grey_safe_lines) -> None:
    """One row per (classifier, accuracy, blocks) of ``rows``: test accuracy (left; head_dim, mean, sd)
    and every block's hardmax rank / n (right; block, head_dim, mean, std) against d_h; a row whose
    accuracy frame is empty says that no run is stored."""
    hard = rank_label("hardmax rank", "", "A")
    for row, (name, accuracy, blocks) in enumerate(rows):
        if not len(accuracy):
            for ax in axes[row]:
                ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center",
                        color="grey")
        else:
            axes[row, 0].errorbar(accuracy.head_dim, accuracy["mean"], yerr=accuracy["std"].fillna(0), capsize=2,
                                  **styles(1)[0])
            for style, (block, q) in zip(styles(blocks.block.nunique()), blocks.groupby("block")):
                axes[row, 1].errorbar(q.head_dim, q["mean"], yerr=q["std"].fillna(0), capsize=2, label=f"block {block}",
                                      **style)
        axes[row, 0].set(ylabel=f"{name}:\ntest accuracy")
        axes[row, 1].set(ylabel=f"{name}:\n{hard} / n")
        for ax in axes[row]:
            ax.set_xscale("log", base=2)
            _ticks(ax.xaxis, list(head_dims))
    for ax in axes[-1]:
        ax.set_xlabel("head size $d_h$")
    # One legend of the blocks under the panels (a block has one style in both rows): inside a
    # panel it would cover the curves of the deeper blocks.
    legend = {}
    for ax in axes[:, 1]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, h)
    if legend:
        axes[0, 0].figure.legend(legend.values(), legend.keys(), loc="outside lower center", ncols=len(legend),
                                 fontsize="small")


def plot_latent(axes, summary: pd.DataFrame, seeds: pd.DataFrame, *, styles=grey_safe_lines) -> None:
    """The MLA language models against kv_latent (``summary``: kv_latent, bound, logit_max, head_mean,
    frac, frac_sd): left, the numerical rank of the logits S (largest over heads and windows, and the
    mean over heads of each head's largest) with the layer's bound; right, the hardmax rank of A / n,
    mean and sd over seeds, with each seed's line (``seeds``: kv_latent by seed). The caller puts the
    left panel's legend under it."""
    axes = np.asarray(axes).ravel()
    lat = summary.kv_latent.to_numpy()
    tol = rank_label("numerical rank", DEFAULT_TOL, "S")
    a, b, c = styles(3)
    axes[0].plot(lat, summary.bound, **{**a, "marker": None}, label="bound $\\min(d_h, \\mathrm{kv}) + r$")
    axes[0].plot(lat, summary.logit_max, **{**b, "linestyle": "none"}, label="largest over heads")
    axes[0].plot(lat, summary.head_mean.to_numpy(), **c, label="mean over heads")
    axes[0].set(ylabel=f"{tol.split(' of ')[0]}\nof $S$")
    for seed in seeds.columns:
        axes[1].plot(seeds.index, seeds[seed], color="0.75", linewidth=0.8)
    axes[1].errorbar(lat, summary.frac, yerr=summary.frac_sd.fillna(0), capsize=2, **a)
    axes[1].set(ylabel=f"{rank_label('hardmax rank', '', 'A')} / n")
    for ax in axes:
        ax.set_xscale("log", base=2)
        _ticks(ax.xaxis, [int(v) for v in lat])
        ax.set_xlabel("latent size kv_latent")
