"""What each of chapter 04's figures draws, computed from the chapter's tables: one keyword dict per
figure for :mod:`lowrank.book.training_figures`, which draws it and computes nothing.

:func:`figure_data` prepares every figure of the page; the functions it calls prepare one figure each
from the tables it needs, so a partial budget store can be drawn too.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from . import budget, fair
from .rules import MARGIN
from .summaries import curve_gap, mean_curves, summarise
from .tables import comparison_table

__all__ = ["ROW_TITLES", "ONE_BUDGET_ROWS", "GRID_PANELS", "figure_data", "learning_curves", "heads_summary",
           "matched_summary", "sizes_summary", "recovery_gaps", "budget_gaps", "one_budget", "lr_check", "lr_grid"]

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
# The rows the page reads at their last budget in one forest plot: the head-size rows and Fig. 4's.
ONE_BUDGET_ROWS = ("capacity", "pastn", "fewheads1", "fewheads2", "fewheads4")
# The rate grid's models in two panels: those of the practitioner's rows, and Fig. 4's baselines.
GRID_PANELS = (("head sizes at $h$ = 4; $h$ = 32; $d$ = 112", fair.LR_GRID_MODELS[:7]),
               ("Fig. 4: head size 32 at $h$ = 1 to 8", fair.LR_GRID_MODELS[7:]))


def learning_curves(heads: pd.DataFrame, *, d: int, head_dim: int) -> dict:
    """The learning-curve figure's inputs: seed-mean validation curves per family and head count."""
    return {"curves": mean_curves(heads, ["family", "h"]), "d": d, "head_dim": head_dim}


def heads_summary(heads: pd.DataFrame, *, head_dim: int) -> dict:
    """The heads figure's inputs: seed-mean validation perplexity per family and head count."""
    return {"summary": summarise(heads, ["family", "h"]), "head_dim": head_dim}


def matched_summary(matched: pd.DataFrame, *, d: int, head_dim: int, baseline_heads: int) -> dict:
    """The parameter-matched figure's inputs: seed-mean validation perplexity per family, width and heads."""
    return {"summary": summarise(matched, ["family", "d", "h"]), "d": d, "head_dim": head_dim,
            "baseline_heads": baseline_heads}


def sizes_summary(sizes: pd.DataFrame, *, d: int, n_heads: int) -> dict:
    """The head-size figure's inputs: seed-mean validation perplexity per head size."""
    return {"summary": summarise(sizes, ["d_h"]), "d": d, "n_heads": n_heads}


def recovery_gaps(heads: pd.DataFrame, recovery: pd.DataFrame, *, h_max: int, h_best: int,
                  recovery_steps: int) -> dict:
    """The recovery figure's inputs: training loss of the fixed-head model at ``h_max`` heads minus the
    standard model at ``h_best`` and at ``h_max`` heads, step by step (seed means of paired
    differences), and the same pair at ``h_max`` in ``recovery`` (None when it holds no run)."""
    fixed = {"family": "fixed", "h": h_max}
    gaps = [(h, curve_gap(heads, fixed, {"family": "standard", "h": h}, split="train")) for h in (h_best, h_max)]
    longer = (curve_gap(recovery, fixed, {"family": "standard", "h": h_max}, split="train")
              if len(recovery) else None)
    return {"gaps": gaps, "longer": longer, "h_max": h_max, "recovery_steps": recovery_steps}


def budget_gaps(comparisons: pd.DataFrame) -> dict:
    """The budget figure's inputs: :func:`budget.comparisons`, the rows in :data:`budget.ROWS` order
    with their titles, the margin, and the tokens a run of every budget of the design (stored or not)."""
    steps = sorted({x for v in budget.ROW_STEPS.values() for x in v})
    tokens = [t * budget.BASE["batch_size"] * budget.BASE["seq_len"] for t in steps]
    return {"comparisons": comparisons, "rows": [(row, ROW_TITLES[row]) for row, _, _ in budget.ROWS],
            "margin": MARGIN, "tokens": tokens}


def one_budget(comparisons: pd.DataFrame, rows: Sequence[str] = ONE_BUDGET_ROWS) -> dict:
    """The one-budget forest plot's inputs: each of ``rows`` titled, with its comparisons at its last budget."""
    return {"rows": [(ROW_TITLES[row], comparisons[(comparisons.row == row)
                                                   & (comparisons.steps == budget.ROW_STEPS[row][-1])])
                     for row in rows],
            "margin": MARGIN}


def lr_check(check: pd.DataFrame | None, lr: float | None) -> dict:
    """The learning-rate check's inputs: its runs, the chosen rate (None until complete) and the rates tried."""
    return {"check": check, "lr": lr, "rates": budget.LR_CHECK_RATES}


def lr_grid(rates: Mapping[str, fair.RateChoice]) -> dict:
    """The rate grid's inputs: per panel of :data:`GRID_PANELS`, each model's name, chosen rate (None
    until every run it needs is stored) and (rate, mean validation loss) pairs; the rates of the grid."""
    return {"panels": [(title, [(m, rates[m].rate, rates[m].losses) for m in models]) for title, models in GRID_PANELS],
            "grid_rates": fair.LR_GRID_RATES}


def figure_data(tables: Mapping, H: Mapping) -> dict:
    """Every figure of the page from :func:`run`'s ``tables`` and :func:`headline`'s ``H``, keyed by
    its glue key without ``ch04_fig_``: the keyword arguments of its function in
    :mod:`lowrank.book.training_figures`, less the axes and the book's styles."""
    setup, L, B = tables["setup"], tables["long"], tables["budget"]
    return {
        "curves": learning_curves(tables["heads"], d=setup["d"], head_dim=setup["dp"]),
        "heads": heads_summary(tables["heads"], head_dim=setup["dp"]),
        "matched": matched_summary(tables["matched"], d=setup["d"], head_dim=setup["dp"],
                                   baseline_heads=setup["base_heads"]),
        "sizes": sizes_summary(tables["sizes"], d=setup["d"], n_heads=setup["size_heads"]),
        "paired": {"comparisons": comparison_table(H)},
        "long_curves": learning_curves(L["heads"], d=H["ch04_long_d"], head_dim=H["ch04_long_dp"]),
        "long_recovery": recovery_gaps(L["heads"], L["recovery"], h_max=H["ch04_long_gap_h"],
                                       h_best=H["ch04_long_best_std_h"], recovery_steps=H["ch04_long_rec_steps"]),
        "long_paired": {"comparisons": comparison_table(H, "long_")},
        "lr_check": lr_check(B["lr_check"], B["lr"]),
        "budget": budget_gaps(B["comparisons"]),
        "one_budget": one_budget(B["comparisons"]),
        "lr_grid": lr_grid(B["fair"]["rates"]),
        "factorial": {"effects": B["effects"]},
    }
