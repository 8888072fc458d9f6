"""The fair design's figure and tables: validation loss against the learning rate for every model of
the rate grid, each model's chosen rate, and the rows compared with each model at its own rate."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from . import fair
from .figures import interval_text

__all__ = ["GRID_PANELS", "plot_lr_grid", "lr_grid_display", "judged_display"]

# The rate grid's models in two panels: those of the practitioner's rows, and Fig. 4's baselines.
GRID_PANELS = (("head sizes at $h$ = 4; $h$ = 32; $d$ = 112", fair.LR_GRID_MODELS[:7]),
               ("Fig. 4: head size 32 at $h$ = 1 to 8", fair.LR_GRID_MODELS[7:]))
_MARKERS = "os^vDP*"


def plot_lr_grid(axes, grid: pd.DataFrame, rates: Mapping[str, fair.RateChoice]) -> None:
    """One panel per :data:`GRID_PANELS`: each model's validation loss (mean over the grid's seeds)
    against the peak learning rate (log axis), its chosen rate filled; a model whose runs are not all
    stored is drawn with what is stored and marked '(partial)' in the legend."""
    for ax, (title, models) in zip(axes, GRID_PANELS):
        drawn = 0
        for model, marker in zip(models, _MARKERS):
            r = rates[model]
            if not r.losses:
                continue
            x, y = zip(*r.losses)
            label = _math(model) + ("" if r.rate is not None else " (partial)")
            line, = ax.plot(x, y, marker=marker, markersize=5, markerfacecolor="white", label=label)
            if r.rate is not None:
                ax.plot([r.rate], [dict(r.losses)[r.rate]], marker=marker, markersize=7, color=line.get_color())
            drawn += 1
        if not drawn:
            ax.text(0.5, 0.5, "no run stored yet", transform=ax.transAxes, ha="center", va="center", color="grey")
        ax.set_xscale("log")
        ticks = sorted({x for m in models for x, _ in rates[m].losses} | set(fair.LR_GRID_RATES))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.set_xlim(ticks[0] / 1.5, ticks[-1] * 1.5)
        ax.minorticks_off()
        ax.set_title(title, fontsize="small")
        ax.set_xlabel("peak learning rate")
        ax.set_ylabel("validation loss (nats)")
        if drawn:
            # under its own panel: inside, seven entries would cover the curves
            ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2, frameon=False)


def _math(model: str) -> str:
    """A model's name with its symbols in mathtext, as the book's figures label them."""
    for sym in ("d_p", "h", "d"):
        model = model.replace(f"{sym} = ", f"${sym}$ = ")
    return model


def lr_grid_display(rates: Mapping[str, fair.RateChoice]) -> pd.DataFrame:
    """One row per model of the rate grid: validation loss at each rate tried (mean over the grid's
    seeds), the runs stored, and the chosen rate ('not yet' until every run it needs is stored)."""
    rows = []
    for m in fair.LR_GRID_MODELS:
        r = rates[m]
        losses = dict(r.losses)
        rows.append({"model": m,
                     **{f"rate {x:g}": f"{losses[x]:.3f}" if x in losses else "-" for x in
                        sorted(set(fair.LR_GRID_RATES) | {x for x, _ in r.losses})},
                     "runs stored": f"{r.stored} of {r.planned}",
                     "chosen rate": "not yet" if r.rate is None else
                     f"{r.rate:g}" + (" (end of its grid)" if r.at_edge else "")})
    return pd.DataFrame(rows).fillna("-")


def judged_display(comps: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison and budget, each model at its own rate: the rates, both splits' paired
    gaps with intervals, the change from the first budget (validation) and the runs stored."""
    rows = []
    for r in comps[comps.split == "validation"].itertuples():
        t = comps[(comps.row == r.row) & (comps.steps == r.steps) & (comps.split == "test")].iloc[0]
        first = r.steps == min(comps[comps.row == r.row].steps)
        rates = "not chosen yet" if pd.isna(r.lr_a) or pd.isna(r.lr_b) else f"{r.lr_a:g} and {r.lr_b:g}"
        rows.append({"comparison (a minus b)": f"{r.a} minus {r.b}", "rates": rates, "steps": f"{r.steps:,}",
                     "validation (nats)": interval_text(r.diff, r.lo, r.hi, r.n),
                     "test (nats)": interval_text(t["diff"], t.lo, t.hi, int(t.n)),
                     "change (validation)": "first budget" if first else
                     interval_text(r.change_diff, r.change_lo, r.change_hi, int(r.change_n)),
                     "runs stored": f"{r.runs} of {r.planned}"})
    return pd.DataFrame(rows)
