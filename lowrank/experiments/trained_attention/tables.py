"""Chapter 07's tables and check summary, from the tables of :func:`.runs.run` and :func:`headline`.

Each table function returns a styled DataFrame with readable columns; :func:`check_summary` is the text
the page's check cell prints. The figures are drawn by :mod:`lowrank.book.trained_figures` from
:func:`.plots.figure_data`.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...measure.rank import DEFAULT_TOL, FLOAT32_TOL, rank_label
from ..verdicts import is_missing
from .latent import latent_summary
from .minilm import coarse_tolerance
from .model_rules import LOSS_MARGIN, MODEL_TITLES
from .reduction import TASK_NAMES, plateau_table

__all__ = ["CLASSIFIER_NAMES", "windows_table", "retrieval_status_table", "truncation_display", "check_summary",
           "classifier_status_table", "latent_table", "model_claim_table", "model_claim_display", "models_cut_display"]

# The two classifiers as the page names them, by the ``kind`` of their runs.
CLASSIFIER_NAMES = {"vit": "vision transformer", "text": "BBC News classifier"}


def windows_table(tables: Mapping[str, Any]):
    """Windows of real text ranked per sequence length and corpus."""
    mini = tables["mini"]
    return (mini.groupby(["n", "corpus"]).seq.nunique().unstack("corpus").add_suffix(" windows").reset_index()
            .rename(columns={"n": "sequence length n (tokens)"}).style.hide(axis="index"))


def retrieval_status_table(tables: Mapping[str, Any]):
    """Per task and n: runs in the grid, stored, at their plateau, capped, seeds complete, judged."""
    status = plateau_table(tables["retrieval"], tables["retrieval_grid"]).replace({"task": TASK_NAMES})
    return (status[["task", "n", "grid", "stored", "plateau", "capped", "complete_seeds", "judged"]]
            .rename(columns={"grid": "runs in the grid", "stored": "runs stored", "plateau": "at their plateau",
                             "capped": "stopped by the cap", "complete_seeds": "seeds complete", "judged": "judged"})
            .style.hide(axis="index"))


def truncation_display(tables: Mapping[str, Any]):
    """Per n and rank r: the three measures of the cut model against the full one."""
    tr = tables["truncation"]
    return (tr[["n", "r", "overlap", "overlap_lb", "sim_corr", "cos_mean", "acc", "acc_se", "full_acc"]]
            .rename(columns={"n": "n (tokens)", "r": "logit rank r", "overlap": "(a) top-10 overlap",
                             "overlap_lb": "its 95 % lower bound", "sim_corr": "(b) similarity correlation",
                             "cos_mean": "cosine to full (mean)", "acc": "(c) probe accuracy",
                             "acc_se": "s.e. over folds", "full_acc": "full model's probe accuracy"})
            .style.hide(axis="index").format(precision=3))


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


def classifier_status_table(tables: Mapping[str, Any]):
    """Per classifier: its data, runs stored and at their plateau, and at every head size the
    seed-mean test accuracy and first-block hardmax rank / n."""
    runs, grid = tables["classifiers"], tables["classifier_grid"]
    rows = []
    for kind in ("vit", "text"):
        g = grid[grid.kind == kind]
        sub = runs[runs.kind == kind] if len(runs) else runs
        data = g["dataset" if kind == "vit" else "corpus"].iloc[0] if len(g) else ""
        row = {"classifier": CLASSIFIER_NAMES[kind], "data": data, "runs stored": f"{len(sub)} of {len(g)}",
               "at their plateau": int(sub.plateau.sum()) if len(sub) else 0}
        for d in sorted(g.head_dim.unique()):
            at = sub[(sub.head_dim == d) & sub.plateau] if len(sub) else sub
            row[f"d_h = {d}"] = (f"{at.test_acc.mean():.3f} / {at.rank_frac.mean():.2f}" if len(at) else "-")
        rows.append(row)
    return pd.DataFrame(rows).style.hide(axis="index")


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


def _num(x: Any, fmt: str) -> str:
    return "n/a" if is_missing(x) else format(x, fmt)


def model_claim_table(h: Mapping[str, Any]) -> pd.DataFrame:
    """One row per model, one column per claim: the verdict word and the numbers it rests on.

    MiniLM's cells are the chapter's own rows (whose logit-bound and barrier verdicts also read the
    retrieval heads); the two other models' cells are their own claims' verdicts, measured at the
    long scale. Ranks are named with their matrix, measure and tolerance in the column headers.
    """
    rows = [{"model": "all-MiniLM-L6-v2", "kind": f"encoder, d_h = {h['ch07_mini_dh']}",
             "logits S: numerical rank (float64 default tol.) <= d_h":
                 f"{h['ch07_verdict_mechanism_word']}: {h['ch07_logit_range']}",
             "A: hardmax rank / n against the barrier":
                 f"{h['ch07_verdict_barrier_word']}: {_num(h['ch07_head_mean'], '.2f')} against "
                 f"{_num(h['ch07_barrier'], '.2f')} at n = {h['ch07_n_max']}",
             "heads cut to logit rank near ln n":
                 f"{h['ch07_verdict_truncation_word']}: r_red {h['ch07_trr_text']}"}]
    for m, measure in (("mpnet", "neighbours and similarities"), ("smollm2", f"loss within {LOSS_MARGIN} nats")):
        p = f"ch07_pm_{m}_"
        causal = h[p + "causal"] is True
        kind = (f"decoder (causal), d_h = {h[p + 'dh']}, {h[p + 'heads']} query heads on {h[p + 'kv']} key heads"
                if causal else f"encoder, d_h = {h[p + 'dh']}")
        logit = (f"between {h[p + 'logit_min']} and {h[p + 'logit_max']}" if h[p + "logit_min"] != h[p + "logit_max"]
                 else f"exactly {h[p + 'logit_max']}")
        barrier = (f"does not apply (causal); against (n + 1) / 2n: " if causal else "") + \
            f"{h[f'ch07_pm_verdict_barrier_{m}_word']}: {_num(h[p + 'head_mean'], '.2f')} against " \
            f"{_num(h[p + 'ref'], '.2f')} at n = {h[p + 'n_max']}"
        rows.append({"model": h[p + "title"], "kind": kind,
                     "logits S: numerical rank (float64 default tol.) <= d_h":
                         f"{h[f'ch07_pm_verdict_logit_{m}_word']}: {logit}",
                     "A: hardmax rank / n against the barrier": barrier,
                     "heads cut to logit rank near ln n":
                         f"{h[f'ch07_pm_verdict_truncation_{m}_word']} ({measure}): r_red {h[p + 'cut_text']}"})
    return pd.DataFrame(rows).set_index("model")


def model_claim_display(h: Mapping[str, Any]):
    """:func:`model_claim_table` styled as the book's tables are."""
    return model_claim_table(h).style


def models_cut_display(tables: Mapping[str, Any]):
    """The two models' cuts as the chapter shows them: per (model, n, r) the measure the rule reads."""
    cut = tables["models_cut"]
    if not len(cut):
        return pd.DataFrame().style
    out = []
    for row in cut.itertuples():
        if row.model == "smollm2":
            shown = {"measure": "next-token loss increase, nats (95 % upper bound)",
                     "value": f"{row.diff:+.3f} ({row.diff_ub:+.3f})"}
        else:
            shown = {"measure": "top-10 overlap (95 % lower bound); similarity correlation",
                     "value": f"{row.overlap:.2f} ({row.overlap_lb:.2f}); {row.sim_corr:.3f}"}
        out.append({"model": MODEL_TITLES[row.model], "n (tokens)": row.n, "logit rank r": row.r, **shown})
    return pd.DataFrame(out).style.hide(axis="index")
