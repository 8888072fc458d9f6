"""Chapter 07's figures and tables, drawn from the tables of :func:`.runs.run`.

Each plot function draws on the axes it is given (the page makes them, with the book's sizes) and
returns nothing; ``lines(k)`` gives k line styles that stay apart in grey scale (the book's
``grey_safe_lines``). Each table function returns a styled DataFrame with readable columns.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator

from ...measure.rank import DEFAULT_TOL, FLOAT32_TOL, rank_label
from .minilm import barrier_fraction, coarse_tolerance, per_head_fractions, tolerance_names
from .reduction import TASK_NAMES, grid_intervals, law_bands, plateau_table
from .latent import latent_summary
from .rules import NEIGHBOUR_MARGIN, SIMILARITY_LEVEL

__all__ = ["LAW_LABELS", "windows_table", "plot_ranks_vs_n", "plot_patterns", "plot_layers",
           "retrieval_status_table", "plot_retrieval", "plot_saturation", "truncation_display",
           "plot_truncation", "plot_truncation_layers", "check_summary", "plot_classifiers", "classifier_status_table",
           "plot_latent", "latent_table"]

Lines = Callable[[int], list[dict]]
# The growth laws of :data:`.rules.LAWS` as the figures write them.
LAW_LABELS = {"a + b ln n": "$a + b\\ln n$", "c n^alpha": "$c\\,n^\\alpha$", "c (ln n)^beta": "$c\\,(\\ln n)^\\beta$"}


def _ticks(axis, values: Sequence[float]) -> None:
    """Ticks at ``values`` only, labelled as plain numbers (no minor ticks on a log axis)."""
    (axis.axes.set_xticks if axis.axis_name == "x" else axis.axes.set_yticks)(values, [str(v) for v in values])
    axis.set_minor_locator(NullLocator())


def windows_table(tables: Mapping[str, Any]):
    """Windows of real text ranked per sequence length and corpus."""
    mini = tables["mini"]
    return (mini.groupby(["n", "corpus"]).seq.nunique().unstack("corpus").add_suffix(" windows").reset_index()
            .rename(columns={"n": "sequence length n (tokens)"}).style.hide(axis="index"))


def plot_ranks_vs_n(axes, tables: Mapping[str, Any], *, rtols: Sequence[float], lines: Lines) -> None:
    """Every rank measure of MiniLM's logits S (left) and attention A (right) against n, mean over
    windows with 25th-75th percentile bars, beside d_h (left) and the barrier (right)."""
    mini, dh = tables["mini"], tables["model"]["head_dim"]
    series = [("numerical_rank", t) for t in tolerance_names(rtols)] + [("effective_rank", ""), ("hardmax_rank", "")]
    ns = np.array(sorted(mini.n.unique()))
    for ax, matrix, title in [(axes[0, 0], "logits", "logits $S$"), (axes[0, 1], "probs", "attention $A$")]:
        for style, (meas, tol) in zip(lines(len(series)), series):
            if matrix == "logits" and meas == "hardmax_rank":
                continue
            g = mini[(mini.matrix == matrix) & (mini.measure == meas) & (mini.tolerance == tol)].groupby("n").value
            m, lo, hi = g.mean(), g.quantile(0.25), g.quantile(0.75)
            ax.errorbar(m.index, m, yerr=[(m - lo).clip(lower=0), (hi - m).clip(lower=0)], capsize=3,
                        label=rank_label(meas.replace("_", " "), tol), **style)
        ax.plot(ns, ns, color="grey", linewidth=0.8, linestyle=":", label="$n$")
        if matrix == "logits":
            ax.axhline(dh, color="black", linewidth=0.8, linestyle="--", label=f"$d_h$ = {dh} (left)")
        else:
            ax.plot(ns, [n * barrier_fraction(n) for n in ns], color="black", linewidth=0.8, linestyle="-.",
                    label="barrier $n(1-(1-1/n)^n)$ (right)")
        ax.set(xscale="log", yscale="log", xlabel="sequence length $n$ (tokens)", title=title)
        _ticks(ax.xaxis, ns)
    axes[0, 0].set_ylabel("rank (mean; bars: 25th-75th percentile)")
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    axes[0, 0].figure.legend(handles.values(), handles.keys(), loc="outside lower center", ncol=2, fontsize="x-small")


def plot_patterns(axes, tables: Mapping[str, Any], *, lines: Lines) -> None:
    """Each MiniLM head's hardmax rank / n at the longest n against where its queries look: the
    neighbouring tokens (left) or [CLS] (right), one marker per layer, the barrier dashed."""
    pat, layers = tables["patterns"], tables["model"]["layers"]
    n_max = int(tables["mini"].n.max())
    barrier = barrier_fraction(n_max)
    for ax, col, xlabel in [(axes[0, 0], "neighbour", "share of queries whose\nargmax key is $i-1$, $i$ or $i+1$"),
                            (axes[0, 1], "to_first", "share of queries whose\nargmax key is [CLS]")]:
        for style, layer in zip(lines(layers), range(layers)):
            d = pat[pat.layer == layer]
            ax.plot(d[col], d.rank_frac, linestyle="none", marker=style["marker"], color=style["color"],
                    markersize=4, alpha=0.8, label=f"layer {layer}")
        ax.axhline(barrier, color="black", linewidth=0.8, linestyle="--")
        ax.set(xlabel=xlabel, xlim=(-0.03, 1.03))
    axes[0, 0].set(ylabel=f"hardmax rank of $A$ / $n$ (n = {n_max})")
    # Under the panels: beside them the legend would take the plotting area's width.
    axes[0, 0].figure.legend(*axes[0, 1].get_legend_handles_labels(), loc="outside lower center", ncols=layers,
                             fontsize="x-small")


def plot_layers(ax, tables: Mapping[str, Any], *, rtols: Sequence[float], lines: Lines) -> None:
    """Rank of A / n of every MiniLM head at the longest n by layer, four measures side by side,
    with each measure's mean over the layer's heads."""
    mini = tables["mini"]
    n_max = int(mini.n.max())
    per_head = per_head_fractions(mini[mini.matrix == "probs"], n_max)
    show = [("numerical_rank", FLOAT32_TOL), ("numerical_rank", coarse_tolerance(rtols)), ("effective_rank", ""),
            ("hardmax_rank", "")]
    for k, (style, (meas, tol)) in enumerate(zip(lines(len(show)), show)):
        d = per_head[(per_head.measure == meas) & (per_head.tolerance == tol)]
        x = d.layer + (k - 1.5) * 0.18
        ax.plot(x, d.frac, linestyle="none", marker=style["marker"], color=style["color"], alpha=0.75,
                markersize=4, label=rank_label(meas.replace("_", " "), tol))
        m = d.groupby("layer").frac.mean()
        ax.plot(m.index + (k - 1.5) * 0.18, m, color=style["color"], linestyle=style["linestyle"], linewidth=1)
    ax.axhline(barrier_fraction(n_max), color="black", linewidth=0.8, linestyle="--", label="barrier $1-(1-1/n)^n$")
    ax.set(xlabel="layer", ylabel="rank of $A$ / $n$", ylim=(0, 1.05), title=f"all-MiniLM-L6-v2 heads, n = {n_max}")
    ax.set_xticks(range(tables["model"]["layers"]))
    # A figure legend under the axes: one anchored at a share of the axes' height can cover the x label.
    ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize="x-small")


def retrieval_status_table(tables: Mapping[str, Any]):
    """Per task and n: runs in the grid, stored, at their plateau, capped, seeds complete, judged."""
    status = plateau_table(tables["retrieval"], tables["retrieval_grid"]).replace({"task": TASK_NAMES})
    return (status[["task", "n", "grid", "stored", "plateau", "capped", "complete_seeds", "judged"]]
            .rename(columns={"grid": "runs in the grid", "stored": "runs stored", "plateau": "at their plateau",
                             "capped": "stopped by the cap", "complete_seeds": "seeds complete", "judged": "judged"})
            .style.hide(axis="index"))


def plot_retrieval(axes, tables: Mapping[str, Any], *, ns: Sequence[int], lines: Lines) -> None:
    """Test accuracy (left) and hardmax rank / n (right) against d_h, one row per task, one line per
    n: mean and sd over the plateau runs' seeds, capped runs as crosses."""
    ret = tables["retrieval"]
    ret = ret.assign(hard_frac=ret.hardmax_rank / ret.n)
    hard = rank_label("hardmax rank", "", "A")
    for row, task in enumerate(["single", "pair"]):
        sub = ret[ret.task == task]
        for style, n in zip(lines(len(ns)), ns):
            ok, cap = sub[(sub.n == n) & sub.plateau.astype(bool)], sub[(sub.n == n) & ~sub.plateau.astype(bool)]
            for col, value in enumerate(["test_acc", "hard_frac"]):
                m = ok.groupby("head_dim")[value].agg(["mean", "std"])
                axes[row, col].errorbar(m.index, m["mean"], yerr=m["std"].fillna(0), capsize=2, label=f"n = {n}",
                                        **style)
                axes[row, col].plot(cap.head_dim, cap[value], linestyle="none", marker="x", color=style["color"])
        # Two lines: on one, a label is longer than its panel is high and runs into the next.
        axes[row, 0].set(ylabel=f"{TASK_NAMES[task]} task:\ntest accuracy")
        axes[row, 1].set(ylabel=f"{TASK_NAMES[task]} task:\n{hard} / n")
    for ax in axes[1]:
        ax.set(xscale="log", xlabel="query/key size $d_h$")
        _ticks(ax.xaxis, [1, 2, 4, 8, 16])
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=len(ns),
                             fontsize="x-small")


def plot_saturation(axes, tables: Mapping[str, Any], *, ns: Sequence[int], head_dims: Sequence[int],
                    lines: Lines) -> None:
    """The grid intervals of d*_acc and d*_rank against n, one panel per task, with the band of each
    growth law that fits the one-key task's d*_acc (three lengths at least) and the line d_h = ln n."""
    ret, grid = tables["retrieval"], tables["retrieval_grid"]
    top = max(head_dims) * 1.3  # where an open-topped interval is drawn to
    ns_f = np.geomspace(min(ns), max(ns), 40)
    for ax, task in zip(axes[0], ["single", "pair"]):
        pts = grid_intervals(ret, grid, task)
        for k, (style, q, label) in enumerate(zip(lines(2), "ar", ["$d^*_{acc}$", "$d^*_{rank}$"])):
            x = pts.n * (1.0 + 0.05 * (2 * k - 1))
            lo, hi = pts[f"{q}_lo"].clip(lower=0.5), pts[f"{q}_hi"].clip(upper=top)
            ax.vlines(x, lo, hi, color=style["color"], linewidth=3 - k, label=f"{label}: grid interval")
        bands = law_bands(pts, ns_f).items() if task == "single" and len(pts) >= 3 else []
        for (law, (blo, bhi)), ls in zip(bands, ["--", "-.", ":"]):
            ax.fill_between(ns_f, np.clip(blo, 0.5, top), np.clip(bhi, 0.5, top), alpha=0.12, color="grey")
            ax.plot(ns_f, np.clip(bhi, 0.5, top), color="grey", linestyle=ls, linewidth=0.9,
                    label=f"{LAW_LABELS[law]} fits")
        ax.plot(ns_f, np.log(ns_f), color="black", linewidth=0.6, linestyle=(0, (1, 3)), label="$d_h = \\ln n$")
        ax.set(xscale="log", yscale="log", xlabel="sequence length $n$", title=f"{TASK_NAMES[task]} task",
               xlim=(min(ns) / 1.3, max(ns) * 1.3), ylim=(0.5, top))
        _ticks(ax.xaxis, ns)
    axes[0, 0].set(ylabel="saturating $d_h$ (grid interval)")
    _ticks(axes[0, 0].yaxis, [1, 2, 4, 8, 16])
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=3,
                             fontsize="x-small")


def truncation_display(tables: Mapping[str, Any]):
    """Per n and rank r: the three measures of the cut model against the full one."""
    tr = tables["truncation"]
    return (tr[["n", "r", "overlap", "overlap_lb", "sim_corr", "cos_mean", "acc", "acc_se", "full_acc"]]
            .rename(columns={"n": "n (tokens)", "r": "logit rank r", "overlap": "(a) top-10 overlap",
                             "overlap_lb": "its 95 % lower bound", "sim_corr": "(b) similarity correlation",
                             "cos_mean": "cosine to full (mean)", "acc": "(c) probe accuracy",
                             "acc_se": "s.e. over folds", "full_acc": "full model's probe accuracy"})
            .style.hide(axis="index").format(precision=3))


def _agreement_axes(ax_overlap, ax_similarity) -> None:
    """Titles, labels and the rule's levels on the panels of measures (a) and (b)."""
    ax_overlap.axhline(1 - NEIGHBOUR_MARGIN, color="black", linewidth=0.8, linestyle="--")
    ax_similarity.axhline(SIMILARITY_LEVEL, color="black", linewidth=0.8, linestyle="--")
    ax_overlap.set(title="(a) neighbours", ylabel="share of the top 10 kept")
    ax_similarity.set(title="(b) similarities", ylabel="Pearson r with the full model")


def plot_truncation(axes, tables: Mapping[str, Any], *, ns: Sequence[int], folds: int, lines: Lines) -> None:
    """Measures (a), (b) and (c) against the rank r every head is cut to, one line per n."""
    tr = tables["truncation"]
    for style, n in zip(lines(len(ns)), ns):
        d = tr[tr.n == n]
        axes[0, 0].plot(d.r, d.overlap, label=f"n = {n}", **style)
        axes[0, 1].plot(d.r, d.sim_corr, label=f"n = {n}", **style)
        axes[0, 2].errorbar(d.r, d.acc, yerr=d.acc_se, capsize=2, label=f"n = {n}", **style)
    _agreement_axes(axes[0, 0], axes[0, 1])
    axes[0, 2].set(title="(c) topic probe", ylabel=f"accuracy ({folds}-fold CV, ± s.e.)")
    for ax in axes[0]:
        ax.set(xscale="log", xlabel="logit rank $r$\nof every head")
        _ticks(ax.xaxis, [1, 2, 4, 8, 16, 32])
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=4,
                             fontsize="x-small")


def plot_truncation_layers(axes, tables: Mapping[str, Any], *, ranks: Sequence[int], lines: Lines) -> None:
    """Measures (a) and (b) when one layer's heads are cut to rank r, one line per layer."""
    lay = tables["truncation_layers"]
    for style, layer in zip(lines(max(1, lay.layer.nunique())), sorted(lay.layer.unique())):
        d = lay[lay.layer == layer].sort_values("r")
        axes[0, 0].plot(d.r, d.overlap, label=f"layer {layer}", **style)
        axes[0, 1].plot(d.r, d.sim_corr, label=f"layer {layer}", **style)
    _agreement_axes(axes[0, 0], axes[0, 1])
    for ax in axes[0]:
        ax.set(xscale="log", xlabel="logit rank $r$ of one layer's heads")
        _ticks(ax.xaxis, ranks)
    axes[0, 0].figure.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center",
                             ncols=max(1, lay.layer.nunique()), fontsize="x-small")


def check_summary(H: Mapping[str, Any], P: Mapping[str, Any]) -> str:
    """The chapter's headline numbers, rounded so that they are stable, as the page's check cell prints them."""
    coarse = coarse_tolerance(P["rtols"])
    return "\n".join([
        f"all-MiniLM-L6-v2 ({H['ch07_mini_layers']} layers x {H['ch07_mini_heads']} heads, d_h = {H['ch07_mini_dh']}), "
        f"n in {list(P['minilm_seq_lens'])}",
        f"  {rank_label('numerical rank', DEFAULT_TOL, 'S')}, n > d_h: min {H['ch07_logit_min']}, "
        f"max {H['ch07_logit_max']}",
        f"  {rank_label('numerical rank', FLOAT32_TOL, 'S')}, n > d_h: min {H['ch07_logit_f32_min']}, "
        f"max {H['ch07_logit_f32_max']}",
        f"  {rank_label('numerical rank', coarse, 'S')}, n > d_h: min {H['ch07_logit_coarse_min']}",
        f"  share of A with {rank_label('numerical rank', DEFAULT_TOL)} = n: {H['ch07_full_default']:.2f}",
        f"  share of A with {rank_label('numerical rank', FLOAT32_TOL)} = n: {H['ch07_full_f32']:.2f}",
        f"  at n = {H['ch07_n_max']}, mean rank of A / n: {rank_label('numerical rank', coarse)} "
        f"{H['ch07_coarse_frac_nmax']:.2f}, effective rank {H['ch07_eff_frac_nmax']:.2f}, hardmax rank "
        f"{H['ch07_hard_frac_nmax']:.2f} (barrier {H['ch07_barrier']:.3f}); {H['ch07_heads_above']} of "
        f"{H['ch07_heads']} heads above the barrier",
        f"retrieval: {H['ch07_ret_runs']} of {H['ch07_ret_grid_runs']} runs stored, {H['ch07_ret_plateau']} at "
        f"their plateau",
        f"  one-key: {H['ch07_red_single_text']}",
        f"  two-key: {H['ch07_red_pair_text']}",
        f"  {rank_label('numerical rank', DEFAULT_TOL, 'S')} <= min(d_h, n) in {H['ch07_ret_bounded']} of "
        f"{H['ch07_ret_cases']} runs",
        f"truncation: {H['ch07_trr_text']}; cosine at r = 1 {H['ch07_tr_cos_r1']:.3f}; "
        f"|1 - cos| at r = {H['ch07_tr_dh']} below 1e-5: {H['ch07_tr_full_dev'] < 1e-5}",
        f"verdicts: mechanism {H['ch07_verdict_mechanism']!r}; barrier {H['ch07_verdict_barrier_word']!r}; "
        f"model reduction {H['ch07_verdict_reduction_word']!r}; truncation "
        f"{H['ch07_verdict_truncation_word']!r}",
        f"MLA language models, kv_latent in [{H['ch07_mla_latents']}]: {H['ch07_mla_heads']} heads, logit bound "
        f"verdict {H['ch07_verdict_mla_bound']!r}",
    ])


_CLASSIFIER_NAMES = {"vit": "vision transformer", "text": "BBC News classifier"}


def plot_classifiers(axes, tables: Mapping[str, Any], *, head_dims: Sequence[int], lines: Lines) -> None:
    """One row per classifier: test accuracy (left) and every block's hardmax rank / n (right)
    against d_h, mean and sd over the plateau runs' seeds; a row without runs says so."""
    runs = tables["classifiers"]
    hard = rank_label("hardmax rank", "", "A")
    for row, kind in enumerate(("vit", "text")):
        sub = runs[(runs.kind == kind) & runs.plateau] if len(runs) else runs
        if not len(sub):
            for ax in axes[row]:
                ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center",
                        color="grey")
        else:
            m = sub.groupby("head_dim")["test_acc"].agg(["mean", "std"])
            axes[row, 0].errorbar(m.index, m["mean"], yerr=m["std"].fillna(0), capsize=2, **lines(1)[0])
            depth = int(sub["layers"].max())
            for style, layer in zip(lines(depth), range(depth)):
                per = sub.assign(v=sub["layer_frac"].map(lambda xs, i=layer: xs[i] if i < len(xs) else np.nan))
                q = per.groupby("head_dim")["v"].agg(["mean", "std"])
                axes[row, 1].errorbar(q.index, q["mean"], yerr=q["std"].fillna(0), capsize=2, label=f"block {layer + 1}",
                                      **style)
        axes[row, 0].set(ylabel=f"{_CLASSIFIER_NAMES[kind]}:\ntest accuracy")
        axes[row, 1].set(ylabel=f"{_CLASSIFIER_NAMES[kind]}:\n{hard} / n")
        for ax in axes[row]:
            ax.set_xscale("log", base=2)
            _ticks(ax.xaxis, list(head_dims))
    for ax in axes[-1]:
        ax.set_xlabel("head size $d_h$")
    # One legend of the blocks under the panels (a block has one style in both rows): inside a
    # panel it would cover the curves of the deeper blocks.
    blocks = {}
    for ax in axes[:, 1]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            blocks.setdefault(label, h)
    if blocks:
        axes[0, 0].figure.legend(blocks.values(), blocks.keys(), loc="outside lower center", ncols=len(blocks),
                                 fontsize="small")


def classifier_status_table(tables: Mapping[str, Any]):
    """Per classifier: its data, runs stored and at their plateau, and at every head size the
    seed-mean test accuracy and first-block hardmax rank / n."""
    runs, grid = tables["classifiers"], tables["classifier_grid"]
    rows = []
    for kind in ("vit", "text"):
        g = grid[grid.kind == kind]
        sub = runs[runs.kind == kind] if len(runs) else runs
        data = g["dataset" if kind == "vit" else "corpus"].iloc[0] if len(g) else ""
        row = {"classifier": _CLASSIFIER_NAMES[kind], "data": data, "runs stored": f"{len(sub)} of {len(g)}",
               "at their plateau": int(sub.plateau.sum()) if len(sub) else 0}
        for d in sorted(g.head_dim.unique()):
            at = sub[(sub.head_dim == d) & sub.plateau] if len(sub) else sub
            row[f"d_h = {d}"] = (f"{at.test_acc.mean():.3f} / {at.rank_frac.mean():.2f}" if len(at) else "-")
        rows.append(row)
    return pd.DataFrame(rows).style.hide(axis="index")


def plot_latent(axes, tables: Mapping[str, Any], *, lines: Lines) -> None:
    """The MLA language models against kv_latent: left, the numerical rank of the logits S (largest
    over heads and windows, and the mean over heads of each head's largest) with the layer's bound;
    right, the hardmax rank of A / n, mean and sd over seeds, with each seed's line. The caller puts
    the left panel's legend under it."""
    axes = np.asarray(axes).ravel()
    runs, heads = tables["mla_runs"], tables["mla_heads"]
    s = latent_summary(runs, heads)
    lat = s.kv_latent.to_numpy()
    tol = rank_label("numerical rank", DEFAULT_TOL, "S")
    per_head = heads.groupby(["kv_latent", "seed", "layer", "head"])["logit_rank"].max().groupby("kv_latent").mean()
    a, b, c = lines(3)
    axes[0].plot(lat, s.bound, **{**a, "marker": None}, label="bound $\\min(d_h, \\mathrm{kv}) + r$")
    axes[0].plot(lat, s.logit_max, **{**b, "linestyle": "none"}, label="largest over heads")
    axes[0].plot(lat, per_head.loc[lat].to_numpy(), **c, label="mean over heads")
    axes[0].set(ylabel=f"{tol.split(' of ')[0]}\nof $S$")
    frac = heads.assign(f=heads.hardmax_rank / heads.n).groupby(["kv_latent", "seed"])["f"].mean().unstack("seed")
    for seed in frac.columns:
        axes[1].plot(frac.index, frac[seed], color="0.75", linewidth=0.8)
    axes[1].errorbar(lat, s.frac, yerr=s.frac_sd.fillna(0), capsize=2, **a)
    axes[1].set(ylabel=f"{rank_label('hardmax rank', '', 'A')} / n")
    for ax in axes:
        ax.set_xscale("log", base=2)
        _ticks(ax.xaxis, [int(v) for v in lat])
        ax.set_xlabel("latent size kv_latent")


def latent_table(tables: Mapping[str, Any]):
    """Per kv_latent: the logit bound, the largest numerical rank of S, the share of heads at the
    bound, hardmax rank of A / n (mean and sd over seeds) and validation loss and accuracy."""
    s = latent_summary(tables["mla_runs"], tables["mla_heads"])
    out = pd.DataFrame({
        "kv_latent": s.kv_latent, "bound on rank S": s.bound,
        f"largest {rank_label('numerical rank', DEFAULT_TOL, 'S')}": s.logit_max,
        "heads at the bound": s.at_bound.map(lambda v: f"{v:.0%}"),
        "hardmax rank of A / n": [f"{m:.3f} ± {sd:.3f}" for m, sd in zip(s.frac, s.frac_sd)],
        "validation loss (nats)": s.val_loss.map(lambda v: f"{v:.3f}"),
        "validation accuracy": s.val_acc.map(lambda v: f"{v:.3f}"),
    })
    return out.style.hide(axis="index")
