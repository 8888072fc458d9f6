"""Display tables of the theory chapters (01, 02, 03): each takes a table from the chapter's
``run(P)`` and returns it renamed for the reader and styled (index hidden, numbers formatted)."""
from __future__ import annotations

import pandas as pd
from pandas.io.formats.style import Styler

from ..layers.attention import standard_head_dim
from ..measure.rank import rank_label

__all__ = ["parameter_cost", "construction", "vanishing", "bottleneck", "causal_threshold", "d_below_n",
           "many_inputs", "head_count", "theorem2", "separation_by_case", "cost_ratios", "paper_settings"]


def _shown(frame: pd.DataFrame, columns: dict | None = None, formats=None, **kw) -> Styler:
    """The frame with its columns renamed, without its index, with its numbers formatted."""
    frame = frame.rename(columns=columns) if columns else frame
    return frame.style.hide(axis="index").format(formats, **kw)


# --- chapter 01 -----------------------------------------------------------------------------

def parameter_cost(cost: pd.DataFrame) -> Styler:
    """Projection weights relative to the standard 4d^2, one column per layer kind, one row per h."""
    wide = cost.pivot(index="heads h", columns="layer", values="ratio to 4d^2").reset_index()
    return _shown(wide, precision=2)


# --- chapter 02 -----------------------------------------------------------------------------

def construction(frame: pd.DataFrame) -> Styler:
    """Theorem 1's construction: error and logit rank per n and head size."""
    columns = {"n": "n", "d": "d", "head_dim": "head size", "max_abs_error": "max |softmax(logits) - P|",
               "logit_rank": rank_label("numerical rank", "rtol=max(m,n)eps", "logits")}
    return _shown(frame, columns, {"max |softmax(logits) - P|": "{:.1e}"})


def vanishing(frame: pd.DataFrame) -> Styler:
    """The head size from which the fitted error vanishes, per n, with the errors around it."""
    columns = {"vanishing_rank": "error vanishes from head size", "error_below": "worst error one size below",
               "error_at": "worst error there"}
    return _shown(frame, columns, {"worst error one size below": "{:.1e}", "worst error there": "{:.1e}"})


def bottleneck(frame: pd.DataFrame) -> Styler:
    """Far below the threshold, per head size: worst fit, certified bound, truncated SVD, logit share."""
    worst = frame.groupby("rank", as_index=False).agg(
        fitted=("fitted_tv", "max"), bound=("tv_bound", "min"), svd=("truncation_tv", "max"),
        logit=("logit_bound_rel", "min"))
    columns = {"rank": "head size $r$", "fitted": "worst fitted max-row TV", "bound": "certified TV bound",
               "svd": "TV of truncated SVD", "logit": "share of centred logits out of reach"}
    return _shown(worst, columns, {"worst fitted max-row TV": "{:.3f}", "certified TV bound": "{:.1e}",
                                   "TV of truncated SVD": "{:.3f}", "share of centred logits out of reach": "{:.0%}"})


def causal_threshold(frame: pd.DataFrame) -> Styler:
    """Fitted and certified causal thresholds against floor(n/2), per n."""
    columns = {"fitted_threshold": "fitted threshold", "bound_threshold": "certified bound", "half": "floor(n/2)"}
    return _shown(frame, columns, na_rep="not reached", precision=0)


def d_below_n(frame: pd.DataFrame) -> Styler:
    """Inputs of rank d < n, per n: the exact unreachable share of the logits, its law, bound and fit."""
    per_n = frame.groupby("n", as_index=False).agg(
        logit=("logit_error_rel", "mean"), law=("law", "first"), bound=("tv_bound", "min"), fitted=("fitted_tv", "max"))
    columns = {"logit": "exact relative centred-logit error (mean)", "law": "sqrt(1 - d^2/(n(n-1)))",
               "bound": "certified TV bound", "fitted": "worst fitted max-row TV"}
    return _shown(per_n, columns, {"exact relative centred-logit error (mean)": "{:.2f}",
                                   "sqrt(1 - d^2/(n(n-1)))": "{:.2f}", "certified TV bound": "{:.1e}",
                                   "worst fitted max-row TV": "{:.2f}"})


def many_inputs(frame: pd.DataFrame) -> Styler:
    """One head fitted to m inputs at once: best max-row TV, one row per m, one column per head size."""
    wide = frame.pivot(index="inputs", columns="rank", values="fitted_tv")
    wide.columns = [f"head size {r}: max-row TV" for r in wide.columns]
    return _shown(wide.reset_index(), {"inputs": "inputs m"}, "{:.1e}", subset=list(wide.columns))


# --- chapter 03 -----------------------------------------------------------------------------

def head_count(per_layer: pd.DataFrame, d_model: int, n: int) -> Styler:
    """The worst head's error per head count, standard (d/h) and fixed (d_p = n) layer."""
    wide = per_layer.pivot(index="n_heads", columns="layer", values="worst_head_error").reset_index()
    wide.insert(1, "head size d/h", [standard_head_dim(d_model, h) for h in wide["n_heads"]])
    fixed = f"fixed d_p = {n}: worst head's TV"
    columns = {"n_heads": "heads h", "standard": "standard layer: worst head's TV", "fixed": fixed}
    return _shown(wide, columns, "{:.1e}", subset=["standard layer: worst head's TV", fixed])


def theorem2(frame: pd.DataFrame) -> Styler:
    """Theorem 2's fits: each layer's heads, head size, parameters and errors."""
    columns = {"layer": "layer", "n_heads": "heads", "head_dim": "head size", "params": "parameters",
               "best_fit_error": "best relative error (fitting inputs)", "test_error": "relative error (fresh inputs)"}
    return _shown(frame, columns, {"best relative error (fitting inputs)": "{:.1e}",
                                   "relative error (fresh inputs)": "{:.1e}"})


def separation_by_case(frame: pd.DataFrame) -> Styler:
    """The gap between the fitted standard layer and g_V on each proof case's separating input."""
    columns = {"case": "input family (proof case)", "max_abs_gap": "max |f(X) - g(X)|", "relative_gap": "relative gap"}
    return _shown(frame, columns, {"max |f(X) - g(X)|": "{:.3f}", "relative gap": "{:.3f}"})


def cost_ratios(costs: pd.DataFrame) -> Styler:
    """Parameters of a fixed head size d_p = n relative to the standard layer, per d, h and n."""
    ratio = costs[costs.kind == "fixed"].pivot_table(index=["d_model", "n_heads"], columns="n",
                                                     values="params_vs_standard")
    ratio.columns = [f"n = {c}: fixed / standard" for c in ratio.columns]
    return _shown(ratio.reset_index(), {"d_model": "d", "n_heads": "heads h"}, precision=2)


def paper_settings(frame: pd.DataFrame) -> Styler:
    """The paper's BERT-large settings as worked numbers, one row per (h, n)."""
    shown = frame[["n", "n_heads", "head_dim", "bidirectional_threshold", "causal_threshold", "max_heads_exact",
                   "logit_share_missed", "truncation_tv", "fixed_cost_ratio"]]
    columns = {"n_heads": "heads h", "head_dim": "head size d/h", "bidirectional_threshold": "needed: n - 1",
               "causal_threshold": "needed causally: floor(n/2)", "max_heads_exact": "most heads without bottleneck",
               "logit_share_missed": "share of centred logits out of reach", "truncation_tv": "TV of truncated SVD",
               "fixed_cost_ratio": "cost of d_p = n (x standard)"}
    return _shown(shown, columns, {"share of centred logits out of reach": "{:.0%}", "TV of truncated SVD": "{:.3f}",
                                   "cost of d_p = n (x standard)": "{:.1f}"})
