"""Chapter 07's model-by-claim table: the three pretrained models against the three pretrained claims."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..verdicts import is_missing
from .model_rules import LOSS_MARGIN, MODEL_TITLES as _TITLES

__all__ = ["model_claim_table", "model_claim_display", "models_cut_display"]


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
        out.append({"model": _TITLES[row.model], "n (tokens)": row.n, "logit rank r": row.r, **shown})
    return pd.DataFrame(out).style.hide(axis="index")
