"""What each of chapter 07's figures draws, computed from the chapter's tables: one keyword dict per
figure for :mod:`lowrank.book.trained_figures`, which draws it and computes nothing.

:func:`figure_data` prepares every figure of the page; the functions it calls prepare one figure each
from the tables it needs, so a figure can be drawn from part of the tables too.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...measure.rank import FLOAT32_TOL, rank_label
from .latent import latent_summary
from .minilm import barrier_fraction, coarse_tolerance, per_head_fractions, tolerance_names
from .reduction import TASK_NAMES, grid_intervals, law_bands
from .rules import NEIGHBOUR_MARGIN, SIMILARITY_LEVEL
from .tables import CLASSIFIER_NAMES

__all__ = ["LAW_LABELS", "figure_data", "rank_summary", "pattern_points", "layer_fractions", "retrieval_summary",
           "saturation_intervals", "classifier_summary", "mla_summary", "truncation_curves", "layer_truncation"]

# The growth laws of :data:`.rules.LAWS` as the figures write them.
LAW_LABELS = {"a + b ln n": "$a + b\\ln n$", "c n^alpha": "$c\\,n^\\alpha$", "c (ln n)^beta": "$c\\,(\\ln n)^\\beta$"}
# The levels of the truncation rule's measures (a) and (b), drawn on their panels.
_LEVELS = {"overlap_level": 1 - NEIGHBOUR_MARGIN, "similarity_level": SIMILARITY_LEVEL}
_TASKS = ("single", "pair")


def _stack(parts: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    """The non-empty frames of ``parts`` one under the other; an empty frame of ``columns`` when none is."""
    full = [p for p in parts if len(p)]
    return pd.concat(full, ignore_index=True) if full else pd.DataFrame(columns=list(columns))


def rank_summary(mini: pd.DataFrame, *, rtols: Sequence[float], head_dim: int) -> dict:
    """The ranks-against-n figure's inputs: per matrix ("logits", "probs") and rank measure (keyed by
    its label, in ``labels`` order; no hardmax rank of the logits) the mean and 25th and 75th
    percentiles over windows per n, the lengths n, d_h and the barrier n(1 - (1 - 1/n)^n) at each n."""
    measures = [("numerical_rank", t) for t in tolerance_names(rtols)] + [("effective_rank", ""), ("hardmax_rank", "")]
    labels = [rank_label(meas.replace("_", " "), tol) for meas, tol in measures]
    ns = np.array(sorted(mini.n.unique()))
    series: dict[str, dict[str, pd.DataFrame]] = {"logits": {}, "probs": {}}
    for matrix, shown in series.items():
        for (meas, tol), label in zip(measures, labels):
            if matrix == "logits" and meas == "hardmax_rank":
                continue
            g = mini[(mini.matrix == matrix) & (mini.measure == meas) & (mini.tolerance == tol)].groupby("n").value
            shown[label] = pd.DataFrame({"mean": g.mean(), "lo": g.quantile(0.25), "hi": g.quantile(0.75)})
    return {"series": series, "labels": labels, "ns": ns, "head_dim": head_dim,
            "barrier": [n * barrier_fraction(n) for n in ns]}


def pattern_points(patterns: pd.DataFrame, *, layers: int, n_max: int, barrier: float) -> dict:
    """The patterns figure's inputs: per head its layer, its shares of queries looking at neighbours and
    at [CLS], and its hardmax rank / n at the longest n ``n_max``; the barrier / n there."""
    return {"points": patterns[["layer", "neighbour", "to_first", "rank_frac"]], "layers": layers, "n_max": n_max,
            "barrier": barrier}


def layer_fractions(mini: pd.DataFrame, *, rtols: Sequence[float], n_max: int, barrier: float, layers: int) -> dict:
    """The layers figure's inputs: for four measures of A's rank (label, every head's layer and rank / n
    at ``n_max``, the mean over each layer's heads), the barrier / n there and the title."""
    per_head = per_head_fractions(mini[mini.matrix == "probs"], n_max)
    series = []
    for meas, tol in [("numerical_rank", FLOAT32_TOL), ("numerical_rank", coarse_tolerance(rtols)),
                      ("effective_rank", ""), ("hardmax_rank", "")]:
        d = per_head[(per_head.measure == meas) & (per_head.tolerance == tol)]
        series.append((rank_label(meas.replace("_", " "), tol), d[["layer", "frac"]], d.groupby("layer").frac.mean()))
    return {"series": series, "barrier": barrier, "layers": layers, "title": f"all-MiniLM-L6-v2 heads, n = {n_max}"}


def retrieval_summary(retrieval: pd.DataFrame, *, ns: Sequence[int]) -> dict:
    """The retrieval figure's inputs: per task (its name), n, measure (test_acc; hard_frac, the hardmax
    rank / n) and d_h, mean and sd over the seeds of the runs at their plateau; the capped runs' own values."""
    ret = retrieval.assign(hard_frac=retrieval.hardmax_rank / retrieval.n)
    summary, capped = [], []
    for task in _TASKS:
        sub = ret[ret.task == task]
        for n in ns:
            ok, cap = sub[(sub.n == n) & sub.plateau.astype(bool)], sub[(sub.n == n) & ~sub.plateau.astype(bool)]
            capped.append(cap[["head_dim", "test_acc", "hard_frac"]].assign(task=TASK_NAMES[task], n=n))
            for value in ("test_acc", "hard_frac"):
                m = ok.groupby("head_dim")[value].agg(["mean", "std"]).reset_index()
                summary.append(m.assign(task=TASK_NAMES[task], n=n, measure=value))
    return {"summary": _stack(summary, ["head_dim", "mean", "std", "task", "n", "measure"]),
            "capped": _stack(capped, ["head_dim", "test_acc", "hard_frac", "task", "n"]),
            "tasks": [TASK_NAMES[t] for t in _TASKS], "ns": list(ns)}


def saturation_intervals(retrieval: pd.DataFrame, grid: pd.DataFrame, *, ns: Sequence[int],
                         head_dims: Sequence[int]) -> dict:
    """The saturation figure's inputs: per task (name, :func:`.reduction.grid_intervals`, the band of
    each growth law that fits the one-key task's d*_acc over ``n_grid`` when three lengths at least
    are judged, keyed by the law's label), the lengths, the head sizes and ``n_grid``."""
    n_grid = np.geomspace(min(ns), max(ns), 40)
    panels = []
    for task in _TASKS:
        pts = grid_intervals(retrieval, grid, task)
        bands = law_bands(pts, n_grid).items() if task == "single" and len(pts) >= 3 else []
        panels.append((TASK_NAMES[task], pts, {LAW_LABELS[law]: band for law, band in bands}))
    return {"panels": panels, "ns": list(ns), "head_dims": list(head_dims), "n_grid": n_grid}


def classifier_summary(runs: pd.DataFrame, *, head_dims: Sequence[int]) -> dict:
    """The classifiers figure's inputs: per classifier (name; test accuracy per d_h, mean and sd over
    the plateau runs' seeds; every block's hardmax rank / n likewise, blocks numbered from 1), both
    frames empty when no run is at its plateau; the head sizes."""
    rows = []
    for kind in ("vit", "text"):
        sub = runs[(runs.kind == kind) & runs.plateau] if len(runs) else runs
        accuracy = pd.DataFrame(columns=["head_dim", "mean", "std"])
        blocks = pd.DataFrame(columns=["head_dim", "mean", "std", "block"])
        if len(sub):
            accuracy = sub.groupby("head_dim")["test_acc"].agg(["mean", "std"]).reset_index()
            per_block = []
            for layer in range(int(sub["layers"].max())):
                per = sub.assign(v=sub["layer_frac"].map(lambda xs, i=layer: xs[i] if i < len(xs) else np.nan))
                q = per.groupby("head_dim")["v"].agg(["mean", "std"]).reset_index()
                per_block.append(q.assign(block=layer + 1))
            blocks = pd.concat(per_block, ignore_index=True)
        rows.append((CLASSIFIER_NAMES[kind], accuracy, blocks))
    return {"rows": rows, "head_dims": list(head_dims)}


def mla_summary(runs: pd.DataFrame, heads: pd.DataFrame) -> dict:
    """The MLA figure's inputs: :func:`.latent.latent_summary` per kv_latent with ``head_mean``, the
    mean over heads of each head's largest logit rank; each seed's hardmax rank / n (kv_latent by seed)."""
    s = latent_summary(runs, heads)
    per_head = heads.groupby(["kv_latent", "seed", "layer", "head"])["logit_rank"].max().groupby("kv_latent").mean()
    seeds = heads.assign(f=heads.hardmax_rank / heads.n).groupby(["kv_latent", "seed"])["f"].mean().unstack("seed")
    return {"summary": s.assign(head_mean=per_head.loc[s.kv_latent.to_numpy()].to_numpy()), "seeds": seeds}


def truncation_curves(truncation: pd.DataFrame, *, ns: Sequence[int], folds: int) -> dict:
    """The truncation figure's inputs: measures (a), (b) and (c) per n and r, the lengths drawn, the
    probe's folds and the rule's levels of (a) and (b)."""
    return {"curves": truncation[["n", "r", "overlap", "sim_corr", "acc", "acc_se"]], "ns": list(ns), "folds": folds,
            **_LEVELS}


def layer_truncation(layers: pd.DataFrame, *, ranks: Sequence[int]) -> dict:
    """The one-layer truncation figure's inputs: measures (a) and (b) per layer cut and r, the ranks
    and the rule's levels of (a) and (b)."""
    return {"cuts": layers[["layer", "r", "overlap", "sim_corr"]], "ranks": list(ranks), **_LEVELS}


def figure_data(tables: Mapping[str, Any], H: Mapping[str, Any], P: Mapping[str, Any]) -> dict:
    """Every figure of the page from :func:`.runs.run`'s ``tables``, :func:`headline`'s ``H`` and the
    chapter's parameters ``P`` (the lengths, head sizes and ranks the figures show), keyed by its glue
    key without ``ch07_fig_``: the keyword arguments of its function in :mod:`lowrank.book.trained_figures`,
    less the axes and the book's styles."""
    mini, model = tables["mini"], tables["model"]
    n_max, barrier = H["ch07_n_max"], H["ch07_barrier"]
    return {
        "ranks_vs_n": rank_summary(mini, rtols=P["rtols"], head_dim=model["head_dim"]),
        "patterns": pattern_points(tables["patterns"], layers=model["layers"], n_max=n_max, barrier=barrier),
        "layers": layer_fractions(mini, rtols=P["rtols"], n_max=n_max, barrier=barrier, layers=model["layers"]),
        "retrieval": retrieval_summary(tables["retrieval"], ns=P["retrieval_ns"]),
        "dstar": saturation_intervals(tables["retrieval"], tables["retrieval_grid"], ns=P["retrieval_ns"],
                                      head_dims=P["retrieval_head_dims"]),
        "classifiers": classifier_summary(tables["classifiers"], head_dims=P["classifiers_head_dims"]),
        "mla": mla_summary(tables["mla_runs"], tables["mla_heads"]),
        "truncation": truncation_curves(tables["truncation"], ns=P["truncation_ns"], folds=P["truncation_folds"]),
        "truncation_layers": layer_truncation(tables["truncation_layers"], ranks=P["truncation_layer_ranks"]),
    }
