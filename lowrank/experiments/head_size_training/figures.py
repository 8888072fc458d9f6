"""Chapter 04's figures and the reading tables of its budget store (:mod:`.budget`), for the page.

Each plot function draws on axes it is given and returns nothing; each display function returns
a DataFrame with readable columns. Functions that draw several series take ``styles``, a callable
giving n line styles (the book passes its grey-safe lines). With a partial budget store they draw
what is stored and say what is missing, so the page renders at every stage of the runs.
"""
from __future__ import annotations

import math

import pandas as pd
from matplotlib.ticker import MaxNLocator

from ...layers.attention import standard_head_dim
from . import budget
from .rules import MARGIN
from .summaries import curve_gap, mean_curves, summarise

__all__ = ["plot_learning_curves", "plot_heads", "plot_matched", "plot_sizes", "plot_comparisons",
           "plot_recovery", "ROW_TITLES", "plot_budget_gaps", "plot_one_budget", "plot_lr_check", "plot_factorial", "budget_display",
           "factorial_display", "lr_check_display", "interval_text"]

# The symmetric-log axis of the recovery figure: linear within 0.05 nats of 0, where the gaps close.
RECOVERY_TICKS = [-0.2, -0.1, -0.05, 0, 0.05, 0.1, 0.2, 0.5, 1]


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


def plot_learning_curves(axes, heads: pd.DataFrame, *, d: int, head_dim: int, styles, markersize: float) -> None:
    """Seed-mean validation loss against the optimiser step of the heads grid ``heads``: one panel
    per family (standard heads at width ``d``, then the fixed head size ``head_dim``), one line per
    head count."""
    val = mean_curves(heads, ["family", "h"])
    for ax, family in zip(axes, ["standard", "fixed"]):
        sub = val[val.family == family]
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


def plot_heads(ax, heads: pd.DataFrame, *, head_dim: int, styles) -> None:
    """Seed-mean validation perplexity (error bars: standard error) against the number of heads
    (log axis), standard heads against the fixed head size ``head_dim``."""
    s = summarise(heads, ["family", "h"])
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


def plot_matched(ax, matched: pd.DataFrame, *, d: int, head_dim: int, baseline_heads: int, styles) -> None:
    """Seed-mean validation perplexity against the parameter count: the fixed head size ``head_dim``
    at width ``d`` for each head count against standard baselines of ``baseline_heads`` heads at
    each width, every point labelled with what varies."""
    m = summarise(matched, ["family", "d", "h"])
    for style, family in zip(styles(2), ["standard", "fixed"]):
        sub = m[m.family == family].sort_values("n_params")
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


def plot_sizes(ax, sizes: pd.DataFrame, *, d: int, n_heads: int, styles) -> None:
    """Seed-mean validation perplexity against the head size (log axis) at ``n_heads`` heads and
    width ``d``, every point labelled with its parameter count."""
    z = summarise(sizes, ["d_h"])
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
    """Forest plot of :func:`.tables.comparison_table`'s rows: each paired difference of validation loss
    with its 95 % interval (none for one seed), the first comparison on top, 0 dashed."""
    cmp = comparisons
    y = list(range(len(cmp)))
    err = [(cmp["difference (nats)"] - cmp.lo).fillna(0), (cmp.hi - cmp["difference (nats)"]).fillna(0)]
    ax.errorbar(cmp["difference (nats)"], y, xerr=err, fmt="o", capsize=4, color="black")
    ax.axvline(0, color="grey", linewidth=1, linestyle="--")
    # One line each on a phone too: a label wrapped there would crowd the interval above it.
    _row_labels(ax, cmp.comparison, above=0.18, fontsize="x-small")
    ax.set_ylim(len(cmp) - 0.6, -0.75)
    ax.set_xlabel("difference in validation loss (nats / token)")


def plot_recovery(ax, long: pd.DataFrame, recovery: pd.DataFrame, *, h_max: int, h_best: int,
                  recovery_steps: int, styles) -> None:
    """Training loss of the fixed-head model at ``h_max`` heads minus the standard model at
    ``h_best`` and at ``h_max`` heads, step by step (seed means of paired differences) in the
    long-scale heads grid ``long``, and the same pair trained for ``recovery_steps`` steps
    (``recovery``, when it holds runs); symmetric-log axis."""
    lines = styles(3)
    for style, h in zip(lines, [h_best, h_max]):
        g = curve_gap(long, {"family": "fixed", "h": h_max}, {"family": "standard", "h": h}, split="train")
        ax.plot(g.step, g["diff"], label=f"fixed h = {h_max} minus standard h = {h}", markersize=0, **style)
    if len(recovery):  # the budget check: the same pair trained for more steps
        g = curve_gap(recovery, {"family": "fixed", "h": h_max}, {"family": "standard", "h": h_max}, split="train")
        ax.plot(g.step, g["diff"], label=f"the same, {recovery_steps:,} steps", markersize=0, **lines[2])
    ax.axhline(0, color="grey", linewidth=1, linestyle="--")
    ax.set_yscale("symlog", linthresh=0.05)
    ax.set_yticks(RECOVERY_TICKS, [f"{t:g}" for t in RECOVERY_TICKS])
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("training loss difference (nats / token)")
    _legend_under(ax, ncols=1)


# What each row of budget.ROWS compares, as a panel title (a minus b; positive: the claim holds).
ROW_TITLES = {"gap": "h = 32: standard $-$ fixed",
              "match": "standard $d$ = 112 $-$ fixed $h$ = 32",
              "stdheads": "standard: $h$ = 32 $-$ $h$ = 4",
              "fixedheads": "fixed $d_p$ = 16: $h$ = 4 $-$ $h$ = 32",
              "capacity": "$h$ = 4: $d_p$ = 16 $-$ $d_p$ = 64",
              "pastn": "$h$ = 4: $d_p$ = 64 $-$ $d_p$ = 128",
              "fewheads1": "head size 32: $h$ = 1 $-$ $h$ = 2",
              "fewheads2": "head size 32: $h$ = 2 $-$ $h$ = 4",
              "fewheads4": "head size 32: $h$ = 4 $-$ $h$ = 8"}
_SPLIT_STYLE = {"validation": dict(marker="o", color="black", offset=0.94),
                "test": dict(marker="s", color="grey", offset=1.06)}


def interval_text(d: float, lo: float, hi: float, n: int) -> str:
    if n == 0 or (isinstance(d, float) and math.isnan(d)):
        return "not stored yet"
    if n < 2 or math.isnan(lo):
        return f"{d:+.3f} (one seed)"
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def plot_budget_gaps(axes, comps: pd.DataFrame) -> None:
    """One panel per row of :data:`budget.ROWS`: the paired gap (model a minus b, nats) against
    training tokens a run on a log axis, validation and test side by side, with 95 % intervals."""
    for ax, (row, _, _) in zip(axes, budget.ROWS):
        c = comps[comps.row == row]
        for split, st in _SPLIT_STYLE.items():
            s = c[(c.split == split) & (c.n > 0)]
            x = s.tokens * st["offset"]
            err = [(s["diff"] - s.lo).fillna(0), (s.hi - s["diff"]).fillna(0)]
            ax.errorbar(x, s["diff"], yerr=err, fmt=st["marker"] + "-", color=st["color"], capsize=3,
                        markersize=4, label=split)
        ax.axhline(0, color="grey", linewidth=1, linestyle="--")
        ax.axhspan(-MARGIN, MARGIN, color="0.9", zorder=0, label=f"margin $\\pm${MARGIN:g} nats")
        ax.set_xscale("log")
        steps = sorted({x for v in budget.ROW_STEPS.values() for x in v})
        tokens = [t * budget.BASE["batch_size"] * budget.BASE["seq_len"] for t in steps]
        ax.set_xticks(tokens, [f"{t / 1e6:.1f}M" for t in tokens])
        ax.set_xlim(tokens[0] / 1.4, tokens[-1] * 1.4)  # the whole design, stored or not
        ax.minorticks_off()
        ax.set_title(ROW_TITLES[row], fontsize="small")
        if not len(c[c.n > 0]):
            ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center",
                    fontsize="small", color="grey")
        spec = ax.get_subplotspec()
        if spec is None or spec.is_last_row():
            ax.set_xlabel("training tokens a run")


def plot_one_budget(ax, comps: pd.DataFrame, rows, *, margin: float) -> None:
    """The rows judged at one budget as a forest plot: each row's paired gap (a minus b, nats) with
    its 95 % interval, validation and test, the shaded band of +-``margin`` and 0 dashed."""
    ax.axvspan(-margin, margin, color="0.9", zorder=0, label=f"margin $\\pm${margin:g} nats")
    ax.axvline(0, color="grey", linewidth=1, linestyle="--")
    labels = []
    for i, row in enumerate(rows):
        c = comps[(comps.row == row) & (comps.steps == budget.ROW_STEPS[row][-1])]
        for split, st in _SPLIT_STYLE.items():
            r = c[c.split == split]
            y = i + (-0.15 if split == "validation" else 0.15)
            if len(r) and r["n"].iloc[0] > 1:
                d, lo, hi = (float(r[k].iloc[0]) for k in ("diff", "lo", "hi"))
                ax.errorbar([d], [y], xerr=[[d - lo], [hi - d]], fmt=st["marker"], color=st["color"], capsize=3,
                            markersize=4, label=split if i == 0 else None)
        labels.append(ROW_TITLES[row] + ("" if len(c) and c["n"].max() > 1 else " (not stored yet)"))
    _row_labels(ax, labels, above=0.32)
    ax.set_ylim(len(rows) - 0.45, -0.85)
    ax.set_xlabel("loss of a $-$ b (nats), paired by seed")


def plot_lr_check(ax, check: pd.DataFrame, lr: float | None = None) -> None:
    """Final validation loss against the learning rate (log axis), one line per model, one seed;
    the chosen rate ``lr`` (None until the check is complete) as a dotted vertical line."""
    if check is None or not len(check):
        ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center", color="grey")
    else:
        for (model, s), marker in zip(check.sort_values("lr").groupby("model"), "os^v"):
            ax.plot(s.lr, s.val_loss, marker=marker, color="black" if "fixed" in model else "grey", label=model)
        if lr is not None:
            ax.axvline(lr, color="grey", linestyle=":", linewidth=1, label=f"chosen rate, {lr:g}")
        _legend_under(ax, ncols=2)
    ax.set_xscale("log")
    ax.set_xticks(list(budget.LR_CHECK_RATES), [f"{r:g}" for r in budget.LR_CHECK_RATES])
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


def budget_display(comps: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison and budget: both splits' paired gaps with intervals, the change
    from the previous budget (validation) and how many of the two models' runs are stored."""
    rows = []
    for r in comps[comps.split == "validation"].itertuples():
        t = comps[(comps.row == r.row) & (comps.steps == r.steps) & (comps.split == "test")].iloc[0]
        rows.append({"comparison (a minus b)": f"{r.a} minus {r.b}", "steps": f"{r.steps:,}",
                     "tokens a run": f"{r.tokens / 1e6:.1f} M",
                     "validation (nats, 95 % interval)": interval_text(r.diff, r.lo, r.hi, r.n),
                     "test (nats, 95 % interval)": interval_text(t["diff"], t.lo, t.hi, int(t.n)),
                     "change from the previous budget (validation)":
                         "first budget" if r.steps == budget.ROW_STEPS[r.row][0] else
                         interval_text(r.change_diff, r.change_lo, r.change_hi, int(r.change_n)),
                     "runs stored": f"{r.runs} of {r.planned}"})
    return pd.DataFrame(rows)


def factorial_display(effects: pd.DataFrame) -> pd.DataFrame:
    """The factorial's cells and effects, both splits, as text with intervals."""
    v = effects[effects.split == "validation"].set_index("effect")
    t = effects[effects.split == "test"].set_index("effect")
    return pd.DataFrame({
        "standard minus fixed at h = 32 (nats)": list(v.index),
        "validation (95 % interval)": [interval_text(r["diff"], r.lo, r.hi, int(r.n)) for _, r in v.iterrows()],
        "test (95 % interval)": [interval_text(r["diff"], r.lo, r.hi, int(r.n)) for _, r in t.iterrows()],
        "seeds": [int(n) for n in v.n]})


def lr_check_display(check: pd.DataFrame, table: pd.DataFrame | None) -> pd.DataFrame:
    """The learning-rate check: final validation and test loss of each run (one seed), with each
    model's regret at every rate once the check is complete."""
    if check is None or not len(check):
        return pd.DataFrame({"learning-rate check": ["no run stored yet"]})
    out = check.sort_values(["model", "lr"])[["model", "lr", "val_loss", "test_loss"]].copy()
    if table is not None:
        reg = {(f, h, lr): r for f, h, lr, r in zip(table.family, table.h, table.lr, table.regret)}
        chosen = float(table.loc[table.chosen, "lr"].iloc[0])
        out["regret (nats)"] = [reg[(m.split()[0], int(m.split()[-1]), lr)] for m, lr in zip(out.model, out.lr)]
        out["chosen"] = ["yes" if lr == chosen else "" for lr in out.lr]
    return out.rename(columns={"model": "model (one seed)", "lr": "peak learning rate",
                               "val_loss": "validation loss (nats)", "test_loss": "test loss (nats)"})
