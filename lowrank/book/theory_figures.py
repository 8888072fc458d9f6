"""Figures of the theory chapters (01 attention and rank, 02 representation theorem, 03 multi-head
bottleneck), drawn from the tables of each chapter's ``run(P)``.

Each function takes the chapter's ``tables`` dict (its ``"params"`` entry holds the validated
parameters) and returns a matplotlib figure; the notebook glues it and closes it.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from matplotlib.figure import Figure

from ..layers.attention import standard_head_dim
from .plotting import grey_safe_lines, legend_below, subplots

__all__ = ["rank_vs_head_size", "temperature", "construction_example", "threshold", "sparse_vs_dense", "causal",
           "head_count", "theorem2_restarts", "separation"]

Tables = Mapping[str, Any]


def _tolerance_line(ax, y: float) -> None:
    """The horizontal line of the tolerance a fit must reach."""
    ax.axhline(y, color="black", linestyle="--", linewidth=0.8)


def _legend_under(ax, ncols: int = 2) -> None:
    legend_below(ax, fontsize="small", ncols=ncols)


# --- chapter 01 -----------------------------------------------------------------------------

def _per_tolerance(tables: Tables):
    """(line style, tolerance label) for each tolerance of chapter 01, the default first."""
    return zip(grey_safe_lines(len(tables["params"]["rtols"])), tables["tolerances"])


def rank_vs_head_size(tables: Tables) -> Figure:
    """Numerical rank of the logits and of the attention matrix against head size, k = 1."""
    n, head_dims = tables["params"]["n"], tables["params"]["head_dims"]
    bh, default_tol = tables["by_head_dim"], tables["default_tol"]
    fig, axes = subplots(1, 1, width=7.5, height=4.4)
    ax = axes[0, 0]
    logit = bh[(bh.matrix == "logits") & (bh.tolerance == default_tol)]
    ax.errorbar(logit.head_dim, logit["mean"], yerr=logit.sd, label=f"logits $S$ ({default_tol})",
                color="black", marker="o", linestyle="-", capsize=3)
    for style, tol in _per_tolerance(tables):
        g = bh[(bh.matrix == "probs") & (bh.tolerance == tol)]
        ax.errorbar(g.head_dim, g["mean"], yerr=g.sd, label=f"attention $A$ ({tol})", capsize=3, **style)
    ax.plot(head_dims, np.minimum(head_dims, n), color="grey", linewidth=0.8, linestyle=":", label="$\\min(d_h, n)$")
    ax.set(xscale="log", xlabel="head size $d_h$", ylabel="numerical rank\n(mean ± sd over heads)",
           title=f"Random heads, n = {n}, standard temperature")
    ax.set_xticks(head_dims, [str(h) for h in head_dims])
    _legend_under(ax)
    return fig


def temperature(tables: Tables) -> Figure:
    """Left: numerical rank of A against the logit multiplier, per tolerance. Right: effective rank."""
    n, head_dims = tables["params"]["n"], tables["params"]["head_dims"]
    bs, ref_dh = tables["by_scale"], tables["ref_dh"]
    fig, axes = subplots(1, 2, width=7.5, height=4.2)
    ax = axes[0, 0]
    for style, tol in _per_tolerance(tables):
        g = bs[bs.tolerance == tol]
        ax.errorbar(g.scale, g["mean"], yerr=g.sd, label=tol, capsize=3, **style)
    ax.axhline(n, color="grey", linewidth=0.8, linestyle=":")
    ax.axhline((1 - 1 / np.e) * n, color="grey", linewidth=0.8, linestyle="--")
    ax.text(1.0, (1 - 1 / np.e) * n - 1, "$(1-1/e)\\,n$", va="top", ha="center", fontsize="small", color="grey")
    ax.set(xscale="log", xlabel="logit multiplier $k$", ylabel="numerical rank of $A$",
           title=f"$d_h$ = {ref_dh}, $n$ = {n}")
    legend_below(ax, title="tolerance", fontsize="small", ncols=2)
    ax = axes[0, 1]
    eff = tables["effective"]
    for style, dh in zip(grey_safe_lines(len(head_dims)), head_dims):
        g = eff[eff.head_dim == dh]
        ax.plot(g.scale, g.value, label=f"{dh}", **style)
    ax.set(xscale="log", xlabel="logit multiplier $k$", ylabel="effective rank of $A$",
           title="effective rank (no tolerance)")
    legend_below(ax, title="$d_h$", fontsize="small", ncols=4)
    return fig


# --- chapter 02 -----------------------------------------------------------------------------

def construction_example(tables: Tables) -> Figure:
    """The target, the attention of the head of size n - 1 built for it, and their difference."""
    target, attention = tables["example_P"], tables["example_A"]
    fig, axes = subplots(1, 3, width=7.5, height=2.6)
    panels = [(target, "target $P$"), (attention, f"head of size {target.shape[0] - 1}"),
              ((attention - target).abs(), "|difference|")]
    for ax, (mat, title) in zip(axes[0], panels):
        im = ax.imshow(mat.numpy(), cmap="viridis")
        ax.set(title=title, xlabel="key $j$", ylabel="query $i$")
        fig.colorbar(im, ax=ax, shrink=0.75)
    return fig


def threshold(tables: Tables) -> Figure:
    """Worst fitted max-row TV and the certified bound against head size, one panel per n."""
    p, bd = tables["params"], tables["bounds"]
    threshold_ns, concentrations = p["threshold_ns"], p["concentrations"]
    fig, axes = subplots(1, len(threshold_ns), width=7.5, height=3.0, sharey=True)
    styles = grey_safe_lines(len(concentrations))
    for ax, n in zip(axes[0], threshold_ns):
        for style, c in zip(styles, concentrations):
            b = bd[(bd.n == n) & (bd.concentration == c)]
            worst = b.groupby("rank")["fitted_tv"].max().clip(lower=1e-12)
            ax.plot(worst.index, worst.values, color=style["color"], linestyle=style["linestyle"],
                    marker=style["marker"], markersize=4, label=f"fit, Dirichlet({c:g})")
            low = b[b["rank"] < n - 1].groupby("rank")["tv_bound"].min()
            ax.plot(low.index, low.values, color=style["color"], linestyle=":", marker="v", markersize=4,
                    label=f"bound, Dirichlet({c:g})")
        ax.axvline(n - 1, color="grey", linestyle=":", linewidth=1)
        _tolerance_line(ax, p["vanish_tol"])
        ax.set(yscale="log", title=f"n = {n}", xlabel="head size $r$")
    axes[0][0].set_ylabel("max-row TV")
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize="small")
    return fig


def sparse_vs_dense(tables: Tables) -> Figure:
    """Left: smallest head size reaching the tolerance against n, per target family (x: not reached
    within the ranks fitted). Right: worst error against head size at the largest n."""
    p, sparse, reach = tables["params"], tables["sparse"], tables["reach"]
    sparse_ns, sparse_kinds, sparse_ranks = p["sparse_ns"], p["sparse_kinds"], p["sparse_ranks"]
    fig, axes = subplots(1, 2, width=7.5, height=3.8)
    styles = grey_safe_lines(len(sparse_kinds))
    best_s = sparse.groupby(["n", "kind", "target", "rank"], as_index=False)["tv_max"].min()
    n_big = max(sparse_ns)
    for style, kind in zip(styles, sparse_kinds):
        r = reach[reach.kind == kind]
        reached = r.dropna(subset=["vanishing_rank"])
        axes[0][0].plot(reached["n"], reached["vanishing_rank"], label=kind, **style)
        missed = r[r["vanishing_rank"].isna()]
        axes[0][0].scatter(missed["n"], [max(sparse_ranks) + 1] * len(missed), marker="x", color=style["color"])
        b = best_s[(best_s.n == n_big) & (best_s.kind == kind)].groupby("rank")["tv_max"].max()
        axes[0][1].plot(b.index, b.values, label=kind, **style)
    axes[0][0].axhline(max(sparse_ranks) + 1, color="grey", linewidth=0.6)
    axes[0][0].set(xscale="log", xlabel="sequence length $n$", ylabel=f"smallest $r$ with TV < {p['sparse_tol']:g}")
    axes[0][0].set_xticks(sparse_ns, [str(n) for n in sparse_ns])
    axes[0][0].minorticks_off()
    _tolerance_line(axes[0][1], p["sparse_tol"])
    axes[0][1].set(yscale="log", xlabel="head size $r$", ylabel="worst target's max-row TV", title=f"$n$ = {n_big}")
    _legend_under(axes[0][1])
    return fig


def causal(tables: Tables) -> Figure:
    """Worst fitted max-row TV of causal heads against head size minus floor(n/2), one line per n."""
    p, cz = tables["params"], tables["causal"]
    causal_ns = p["causal_ns"]
    fig, axes = subplots(1, 1, width=6.0, height=4.2)
    ax = axes[0][0]
    for style, n in zip(grey_safe_lines(len(causal_ns)), causal_ns):
        b = cz[cz.n == n].groupby("rank")["fitted_tv"].max().clip(lower=1e-12)
        ax.plot(b.index - n // 2, b.values, label=f"$n$ = {n}", **style)
    ax.axvline(0, color="grey", linestyle=":", linewidth=1)
    _tolerance_line(ax, p["vanish_tol"])
    ax.set(yscale="log", xlabel=r"head size minus $\lfloor n/2 \rfloor$", ylabel="worst target's max-row TV")
    _legend_under(ax)
    return fig


# --- chapter 03 -----------------------------------------------------------------------------

def head_count(tables: Tables) -> Figure:
    """Worst head's max-row TV against the number of heads, standard and fixed head size, with the
    paper's boundary h = d/n and the exact one h = d/(n - 1)."""
    p, per_layer = tables["params"], tables["per_layer"]
    heads, d_model, n = p["heads"], p["d_model"], p["n"]
    fig, axes = subplots(1, 1, width=6.5, height=4.2)
    ax = axes[0][0]
    pos = {h: i for i, h in enumerate(heads)}
    for style, layer in zip(grey_safe_lines(2), ["standard", "fixed"]):
        t = per_layer[per_layer.layer == layer]
        label = "standard, head size $d/h$" if layer == "standard" else f"fixed, $d_p = n$ = {n}"
        ax.plot([pos[h] for h in t["n_heads"]], t["worst_head_error"].clip(lower=1e-12), label=label, **style)
    marks = ((d_model / n, ":", "$h = d/n$ ", "right"), (d_model / (n - 1), "--", " $h = d/(n-1)$", "left"))
    for h_mark, ls, text, ha in marks:
        x = float(np.interp(h_mark, heads, range(len(heads))))
        ax.axvline(x, color="grey", linestyle=ls, linewidth=1)
        ax.annotate(text, (x, 1.02), xycoords=("data", "axes fraction"), ha=ha, fontsize="small")
    _tolerance_line(ax, p["vanish_tol"])
    ax.set(yscale="log", xlabel="number of heads $h$ (head size $d/h$ below)", ylabel="worst head's max-row TV")
    ax.set_xticks(range(len(heads)), [f"{h}\n{standard_head_dim(d_model, h)}" for h in heads])
    _legend_under(ax)
    return fig


def theorem2_restarts(tables: Tables) -> Figure:
    """Relative error of every restart of the standard and the fixed-head-size fit of g_V."""
    p, t2 = tables["params"], tables["t2_restarts"]
    fig, axes = subplots(1, 1, width=5.5, height=3.0)
    ax = axes[0][0]
    for i, (style, layer) in enumerate(zip(grey_safe_lines(2), ["standard", "fixed"])):
        e = t2[t2.layer == layer]["fit_error"].clip(lower=1e-12)
        ax.scatter(np.full(len(e), i) + np.linspace(-0.15, 0.15, len(e)), e, color=style["color"],
                   marker=style["marker"])
    ax.set_xticks([0, 1], [f"standard\n(head size {standard_head_dim(p['t2_d'], p['t2_heads'])})",
                           f"fixed\n($d_p$ = {p['t2_head_dim']})"])
    ax.set(yscale="log", ylabel="relative error", xlim=(-0.6, 1.6))
    return fig


def separation(tables: Tables) -> Figure:
    """The separating input and the outputs of the fitted standard layer and of g_V on it."""
    sep = tables["separation"]
    fX, gX = tables["sep_outputs"]
    fig, axes = subplots(1, 3, width=7.5, height=2.4)
    vmax = max(float(fX.abs().max()), float(gX.abs().max()), float(sep.X.abs().max()))
    for ax, (mat, title) in zip(axes[0], [(sep.X, "separating input $X$"), (fX, "fitted $f_W(X)$"), (gX, "$g_V(X)$")]):
        im = ax.imshow(mat.numpy(), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set(title=title, xlabel="coordinate", ylabel="token")
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.8)
    return fig
