"""Chapter 04's figures, drawn from the plot-ready inputs of the chapter's ``figure_data(tables, H)``
(:mod:`lowrank.experiments.head_size_training.plots`), one keyword dict per figure.

Each function draws on axes it is given and returns nothing. Functions that draw several series take
``styles``, a callable giving n line styles (by default the book's grey-safe lines). With a partial
budget store they draw what is stored and say what is missing, so the page renders at every stage of
the runs.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.ticker import MaxNLocator

from ..layers.attention import standard_head_dim
from .plotting import grey_safe_lines

__all__ = ["plot_learning_curves", "plot_heads", "plot_matched", "plot_sizes", "plot_comparisons", "plot_recovery",
           "plot_budget_gaps", "plot_one_budget", "plot_lr_check", "plot_factorial", "plot_lr_grid"]

# The symmetric-log axis of the recovery figure: linear within 0.05 nats of 0, where the gaps close.
RECOVERY_TICKS = [-0.2, -0.1, -0.05, 0, 0.05, 0.1, 0.2, 0.5, 1]
_SPLIT_STYLE = {"validation": dict(marker="o", color="black", offset=0.94),
                "test": dict(marker="s", color="grey", offset=1.06)}
_MARKERS = "os^vDP*"


def _legend_under(ax, **kwargs) -> None:
    """The axes' legend under the figure's plot, centred: beside the axes it would take the plotting
    area's width, and inside it could cover a point or its label."""
    ax.figure.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize="small", **kwargs)


def _row_labels(ax, labels, *, above: float, fontsize: str = "small") -> None:
    """Forest-plot rows labelled above their intervals (row i at y = i, first on top), so that the
    plotting area keeps the figure's whole width instead of sharing it with long tick labels; at
    most six x ticks, whose labels a phone's width keeps apart."""
    for i, text in enumerate(labels):
        ax.text(0.01, i - above, text, transform=ax.get_yaxis_transform(), fontsize=fontsize, va="bottom")
    ax.set_yticks([])
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))


def plot_learning_curves(axes, curves: pd.DataFrame, *, d: int, head_dim: int, markersize: float,
                         styles=grey_safe_lines) -> None:
    """Seed-mean validation loss against the optimiser step (``curves``: family, h, step, loss): one
    panel per family (standard heads at width ``d``, then the fixed head size ``head_dim``), one
    line per head count."""
    for ax, family in zip(axes, ["standard", "fixed"]):
        sub = curves[curves.family == family]
        counts = sorted(sub.h.unique())
        for style, h in zip(styles(len(counts)), counts):
            c = sub[sub.h == h]
            dh = standard_head_dim(d, h) if family == "standard" else head_dim
            ax.plot(c.step, c.loss, label=f"h = {h}, $d_h$ = {dh}", markersize=markersize, **style)
        ax.set_title(f"{family} heads" + (" ($d_h = d/h$)" if family == "standard" else f" ($d_p$ = {head_dim})"),
                     fontsize="medium")
        ax.set_xlabel("optimiser step")
        ax.legend(fontsize="small", loc="upper right")
    axes[0].set_ylabel("validation loss (nats / token)")


def plot_heads(ax, summary: pd.DataFrame, *, head_dim: int, styles=grey_safe_lines) -> None:
    """Seed-mean validation perplexity (error bars: standard error) against the number of heads
    (log axis), standard heads against the fixed head size ``head_dim``; ``summary`` has family, h,
    mean and sem."""
    s = summary
    for style, family in zip(styles(2), ["standard", "fixed"]):
        sub = s[s.family == family]
        ax.errorbar(sub.h, sub["mean"], yerr=sub["sem"].fillna(0), capsize=3,
                    label="standard ($d_h = d/h$)" if family == "standard" else f"fixed ($d_p$ = {head_dim})", **style)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(s.h.unique()), [str(h) for h in sorted(s.h.unique())])
    ax.minorticks_off()
    ax.set_xlabel("number of heads $h$")
    ax.set_ylabel("validation perplexity")
    _legend_under(ax, ncols=2)


def plot_matched(ax, summary: pd.DataFrame, *, d: int, head_dim: int, baseline_heads: int,
                 styles=grey_safe_lines) -> None:
    """Seed-mean validation perplexity against the parameter count (``summary``: family, d, h,
    n_params, mean, sem): the fixed head size ``head_dim`` at width ``d`` for each head count against
    standard baselines of ``baseline_heads`` heads at each width, every point labelled with what varies."""
    for style, family in zip(styles(2), ["standard", "fixed"]):
        sub = summary[summary.family == family].sort_values("n_params")
        label = (f"standard, h = {baseline_heads}, d varies" if family == "standard"
                 else f"fixed $d_p$ = {head_dim}, d = {d}, h varies")
        ax.errorbar(sub.n_params / 1e3, sub["mean"], yerr=sub["sem"].fillna(0), capsize=3, label=label, **style)
        for _, r in sub.iterrows():
            ax.annotate(f"d = {r.d}" if family == "standard" else f"h = {r.h}", (r.n_params / 1e3, r["mean"]),
                        textcoords="offset points", xytext=(5, 5) if family == "standard" else (5, -12),
                        fontsize="x-small")
    ax.margins(x=0.12)  # room for the labels of the outermost points inside the axes
    ax.set_xlabel("parameters (thousands)")
    ax.set_ylabel("validation perplexity")
    _legend_under(ax, ncols=2)


def plot_sizes(ax, summary: pd.DataFrame, *, d: int, n_heads: int, styles=grey_safe_lines) -> None:
    """Seed-mean validation perplexity against the head size (log axis) at ``n_heads`` heads and
    width ``d`` (``summary``: d_h, n_params, mean, sem), every point labelled with its parameter count."""
    z = summary
    ax.errorbar(z.d_h, z["mean"], yerr=z["sem"].fillna(0), capsize=3, **styles(1)[0])
    for _, r in z.iterrows():
        ax.annotate(f"{r.n_params / 1e3:.0f}k params", (r.d_h, r["mean"]), textcoords="offset points",
                    xytext=(4, 4), fontsize="x-small")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(z.d_h), [str(v) for v in z.d_h])
    ax.minorticks_off()
    ax.margins(x=0.15)  # room for the parameter counts beside the outermost points
    ax.set_title(f"h = {n_heads}, d = {d}", fontsize="medium")
    ax.set_xlabel("head size $d_p$")
    ax.set_ylabel("validation perplexity")


def plot_comparisons(ax, comparisons: pd.DataFrame) -> None:
    """Forest plot of the chapter's comparison table (comparison, ``difference (nats)``, lo, hi):
    each paired difference of validation loss with its 95 % interval (none for one seed), the
    first comparison on top, 0 dashed."""
    cmp = comparisons
    y = list(range(len(cmp)))
    err = [(cmp["difference (nats)"] - cmp.lo).fillna(0), (cmp.hi - cmp["difference (nats)"]).fillna(0)]
    ax.errorbar(cmp["difference (nats)"], y, xerr=err, fmt="o", capsize=4, color="black")
    ax.axvline(0, color="grey", linewidth=1, linestyle="--")
    # One line each on a phone too: a label wrapped there would crowd the interval above it.
    _row_labels(ax, cmp.comparison, above=0.18, fontsize="x-small")
    ax.set_ylim(len(cmp) - 0.6, -0.75)
    ax.set_xlabel("difference in validation loss (nats / token)")


def plot_recovery(ax, gaps: Sequence[tuple[int, pd.DataFrame]], longer: pd.DataFrame | None, *, h_max: int,
                  recovery_steps: int, styles=grey_safe_lines) -> None:
    """Training loss of the fixed-head model at ``h_max`` heads minus the standard model at h heads,
    step by step (``gaps``: (h, frame of step and diff) pairs), and the pair at ``h_max`` heads trained
    for ``recovery_steps`` steps (``longer``, None without such runs); symmetric-log axis."""
    lines = styles(3)
    for style, (h, g) in zip(lines, gaps):
        ax.plot(g.step, g["diff"], label=f"fixed h = {h_max} minus standard h = {h}", markersize=0, **style)
    if longer is not None:
        ax.plot(longer.step, longer["diff"], label=f"the same, {recovery_steps:,} steps", markersize=0, **lines[2])
    ax.axhline(0, color="grey", linewidth=1, linestyle="--")
    ax.set_yscale("symlog", linthresh=0.05)
    ax.set_yticks(RECOVERY_TICKS, [f"{t:g}" for t in RECOVERY_TICKS])
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("training loss difference (nats / token)")
    _legend_under(ax, ncols=1)


def plot_budget_gaps(axes, comparisons: pd.DataFrame, *, rows: Sequence[tuple[str, str]], margin: float,
                     tokens: Sequence[float]) -> None:
    """One panel per (row, title) of ``rows``: the row's paired gap (model a minus b, nats) against
    training tokens a run on a log axis, validation and test side by side, with 95 % intervals, the
    band of +-``margin`` shaded; the x axis spans ``tokens``, every budget of the design."""
    for ax, (row, title) in zip(axes, rows):
        c = comparisons[comparisons.row == row]
        for split, st in _SPLIT_STYLE.items():
            s = c[(c.split == split) & (c.n > 0)]
            x = s.tokens * st["offset"]
            err = [(s["diff"] - s.lo).fillna(0), (s.hi - s["diff"]).fillna(0)]
            ax.errorbar(x, s["diff"], yerr=err, fmt=st["marker"] + "-", color=st["color"], capsize=3,
                        markersize=4, label=split)
        ax.axhline(0, color="grey", linewidth=1, linestyle="--")
        ax.axhspan(-margin, margin, color="0.9", zorder=0, label=f"margin $\\pm${margin:g} nats")
        ax.set_xscale("log")
        ax.set_xticks(tokens, [f"{t / 1e6:.1f}M" for t in tokens])
        ax.set_xlim(tokens[0] / 1.4, tokens[-1] * 1.4)  # the whole design, stored or not
        ax.minorticks_off()
        ax.set_title(title, fontsize="small")
        if not len(c[c.n > 0]):
            ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center",
                    fontsize="small", color="grey")
        spec = ax.get_subplotspec()
        if spec is None or spec.is_last_row():
            ax.set_xlabel("training tokens a run")


def plot_one_budget(ax, rows: Sequence[tuple[str, pd.DataFrame]], *, margin: float) -> None:
    """The rows judged at one budget as a forest plot (``rows``: (title, the row's comparisons at
    that budget) pairs): each row's paired gap (a minus b, nats) with its 95 % interval, validation
    and test, the shaded band of +-``margin`` and 0 dashed."""
    ax.axvspan(-margin, margin, color="0.9", zorder=0, label=f"margin $\\pm${margin:g} nats")
    ax.axvline(0, color="grey", linewidth=1, linestyle="--")
    labels = []
    for i, (title, c) in enumerate(rows):
        for split, st in _SPLIT_STYLE.items():
            r = c[c.split == split]
            y = i + (-0.15 if split == "validation" else 0.15)
            if len(r) and r["n"].iloc[0] > 1:
                d, lo, hi = (float(r[k].iloc[0]) for k in ("diff", "lo", "hi"))
                ax.errorbar([d], [y], xerr=[[d - lo], [hi - d]], fmt=st["marker"], color=st["color"], capsize=3,
                            markersize=4, label=split if i == 0 else None)
        labels.append(title + ("" if len(c) and c["n"].max() > 1 else " (not stored yet)"))
    _row_labels(ax, labels, above=0.32)
    ax.set_ylim(len(rows) - 0.45, -0.85)
    ax.set_xlabel("loss of a $-$ b (nats), paired by seed")


def plot_lr_check(ax, check: pd.DataFrame | None, lr: float | None, *, rates: Sequence[float]) -> None:
    """Final validation loss against the learning rate (log axis, ticks at ``rates``), one line per
    model, one seed; the chosen rate ``lr`` (None until the check is complete) as a dotted vertical line."""
    if check is None or not len(check):
        ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center", color="grey")
    else:
        for (model, s), marker in zip(check.sort_values("lr").groupby("model"), "os^v"):
            ax.plot(s.lr, s.val_loss, marker=marker, color="black" if "fixed" in model else "grey", label=model)
        if lr is not None:
            ax.axvline(lr, color="grey", linestyle=":", linewidth=1, label=f"chosen rate, {lr:g}")
        _legend_under(ax, ncols=2)
    ax.set_xscale("log")
    ax.set_xticks(list(rates), [f"{r:g}" for r in rates])
    ax.minorticks_off()
    ax.set_xlabel("peak learning rate")
    ax.set_ylabel("validation loss (nats)")


def plot_factorial(ax, effects: pd.DataFrame) -> None:
    """Standard minus fixed at h = 32 in each cell of the factorial and each factor's effect, both
    splits, with 95 % intervals (horizontal bars; right of 0: the fixed head size is better)."""
    names = list(dict.fromkeys(effects.effect))
    y = {n: i for i, n in enumerate(names)}
    for split, st, dy in (("validation", _SPLIT_STYLE["validation"], -0.12), ("test", _SPLIT_STYLE["test"], 0.12)):
        s = effects[(effects.split == split) & (effects.n > 0)]
        err = [(s["diff"] - s.lo).fillna(0), (s.hi - s["diff"]).fillna(0)]
        ax.errorbar(s["diff"], [y[n] + dy for n in s.effect], xerr=err, fmt=st["marker"], color=st["color"],
                    capsize=3, markersize=4, label=split)
    ax.axvline(0, color="grey", linewidth=1, linestyle="--")
    _row_labels(ax, names, above=0.27)
    ax.set_ylim(len(names) - 0.55, -0.8)
    ax.set_xlabel("difference in loss (nats / token)")


def plot_lr_grid(axes, panels: Sequence[tuple[str, Sequence[tuple[str, float | None, Sequence]]]], *,
                 grid_rates: Sequence[float]) -> None:
    """One panel per (title, models) of ``panels``, each model a (name, chosen rate or None,
    (rate, mean validation loss) pairs stored) triple: validation loss against the peak learning
    rate (log axis, ticks at ``grid_rates`` and every rate tried), the chosen rate filled; a model
    with no rate chosen yet is drawn with what is stored and marked '(partial)' in the legend."""
    for ax, (title, models) in zip(axes, panels):
        drawn = 0
        for (model, rate, losses), marker in zip(models, _MARKERS):
            if not losses:
                continue
            x, y = zip(*losses)
            label = _math(model) + ("" if rate is not None else " (partial)")
            line, = ax.plot(x, y, marker=marker, markersize=5, markerfacecolor="white", label=label)
            if rate is not None:
                ax.plot([rate], [dict(losses)[rate]], marker=marker, markersize=7, color=line.get_color())
            drawn += 1
        if not drawn:
            ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center", color="grey")
        else:
            _cap_losses(ax, models)
        ax.set_xscale("log")
        ticks = sorted({x for _, _, losses in models for x, _ in losses} | set(grid_rates))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xlim(ticks[0] / 1.5, ticks[-1] * 1.5)
        ax.minorticks_off()
        ax.set_title(title, fontsize="small")
        ax.set_xlabel("peak learning rate")
        ax.set_ylabel("validation loss (nats)")
        if drawn:
            # under its own panel: inside, seven entries would cover the curves
            ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2, frameon=False)


# A rate that diverges would stretch the loss axis until the rates near each model's best, which
# differ by hundredths of a nat, look alike; the axis stops this far above the panel's lowest loss.
LOSS_SPAN = 0.5


def _cap_losses(ax, models) -> None:
    """Stop the loss axis LOSS_SPAN above the lowest loss; each loss beyond it is an arrow on the
    top edge, labelled with its value."""
    losses = [(x, y) for _, _, pairs in models for x, y in pairs]
    low, high = min(y for _, y in losses), max(y for _, y in losses)
    if high <= low + LOSS_SPAN:
        return
    top = low + LOSS_SPAN
    ax.set_ylim(low - 0.05 * LOSS_SPAN, top)
    for x, y in losses:
        if y > top:
            ax.plot([x], [top], marker="^", color="black", markersize=6, clip_on=False, zorder=5)
            ax.annotate(f"{y:.2f}", (x, top), xytext=(5, -2), textcoords="offset points", ha="left", va="top",
                        fontsize="x-small")


def _math(model: str) -> str:
    """A model's name with its symbols in mathtext, as the book's figures label them."""
    for sym in ("d_p", "h", "d"):
        model = model.replace(f"{sym} = ", f"${sym}$ = ")
    return model
