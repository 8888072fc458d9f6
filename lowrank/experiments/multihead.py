"""Chapter 03, the multi-head bottleneck: heads of size d/h against a fixed head size, F in G,
Theorem 2. Tidy tables, one row per fit."""
from __future__ import annotations

import pandas as pd
import torch

from ..progress import tqdm
from ..fit import fit_heads

__all__ = ["head_count_sweep", "run_head_count", "run_embedding", "run_theorem2", "run_costs", "headline",
           "summary", "HEADLINE_KEYS"]


def head_count_sweep(X, heads, *, concentration: float = 1.0, fixed_head_dim: int | None = None,
                     restarts: int = 2, max_iter: int = 1000, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    """Heads of a standard layer (size d / h) and of a fixed one (size d_p) fitted to dense targets.

    X: one input (n, d). For each h in heads: h targets with Dirichlet(concentration) rows, one
    per head; each head is fitted on X with fit_heads, at d / h (standard) and at fixed_head_dim
    (default n). One row per (h, layer, head, restart): n_heads, layer, head_dim, head, restart,
    tv_max, kl, loss.
    """
    from ..theory.targets import dirichlet_targets

    X = torch.as_tensor(X).to(torch.float64)
    n, d = X.shape
    dp = n if fixed_head_dim is None else fixed_head_dim
    frames = []
    for h in tqdm(list(heads), disable=not progress, leave=False, desc="heads"):
        if d % h:
            raise ValueError(f"every h must divide d = {d} for a standard layer, got h = {h}")
        P = dirichlet_targets(n, concentration=concentration, batch=h, seed=seed + h)
        for layer, hd in (("standard", d // h), ("fixed", dp)):
            df = fit_heads(X, P, head_dim=hd, restarts=restarts, max_iter=max_iter, seed=seed + h)
            df.insert(0, "layer", layer)
            df.insert(0, "n_heads", h)
            frames.append(df)
    return pd.concat(frames, ignore_index=True)


# --- chapter runs and headline (issue 13) ----------------------------------------------------

def run_head_count(d_model: int, n: int, heads, *, concentration: float = 1.0, restarts: int = 2,
                   max_iter: int = 1000, vanish_tol: float = 1e-5, seed: int = 0) -> dict:
    """head_count_sweep on one Gaussian input (n, d_model), fixed layer at d_p = n: the fits
    ("head_count") and the worst head's best error per (h, layer) ("per_layer")."""
    from ..theory.sampling import sample_inputs

    X = sample_inputs(n, d_model, inputs="gaussian", seed=seed)[0]
    hc = head_count_sweep(X, heads, concentration=concentration, fixed_head_dim=n, restarts=restarts,
                          max_iter=max_iter, seed=seed)
    per_layer = (hc.groupby(["n_heads", "layer", "head_dim", "head"], as_index=False)["tv_max"].min()
                   .groupby(["n_heads", "layer", "head_dim"], as_index=False)["tv_max"].max()
                   .rename(columns={"tv_max": "worst_head_error"}))
    return {"head_count": hc, "per_layer": per_layer, "hc_d": d_model, "hc_n": n, "vanish_tol": vanish_tol}


@torch.no_grad()
def run_embedding(d_model: int, n_heads: int, head_dim: int, *, n: int = 7, batch: int = 64, seed: int = 0) -> dict:
    """F in G: a standard layer with N(0, 1) weights and biases against its embedding at head size
    head_dim, with and without the query rescale, max |f(X) - g(X)| over `batch` Gaussian inputs
    (table "embedding", one row)."""
    from ..attention import MultiHeadAttention
    from ..theory.multihead import embed_standard_in_fixed
    from ..theory.sampling import sample_inputs

    torch.manual_seed(seed)
    std_layer = MultiHeadAttention(d_model, n_heads).double()
    for p in std_layer.parameters():
        p.normal_()
    X = sample_inputs(n, d_model, batch=batch, inputs="gaussian", seed=seed)
    y = std_layer(X)[0]
    err = (embed_standard_in_fixed(std_layer, head_dim)(X)[0] - y).abs().max().item()
    naive = (embed_standard_in_fixed(std_layer, head_dim, absorb_scale=False)(X)[0] - y).abs().max().item()
    return {"embedding": pd.DataFrame([dict(d_model=d_model, n_heads=n_heads, head_dim=head_dim, inputs=batch,
                                            max_abs_error=err, max_abs_error_unscaled=naive)])}


def _test_error(layer, X, Y) -> float:
    with torch.no_grad():
        return float((layer(X)[0] - Y).norm() / Y.norm())


def run_theorem2(d: int, n_heads: int, head_dim: int, *, n: int = 4, samples: int = 16, std_restarts: int = 8,
                 fixed_restarts: int = 4, std_max_iter: int = 2000, fixed_max_iter: int = 3000, seed: int = 0) -> dict:
    """Theorem 2: g_V = theorem2_layer(d, n_heads, head_dim) fitted on `samples` inputs of n
    tokens (rows on the unit sphere) by a standard layer and a fixed-head-size one; errors on
    the fitting inputs and on as many fresh ones ("t2_restarts", "t2"); the separating input of
    the best standard fit ("separation", a Separation) and its gap in each case's form ("by_case")."""
    from ..fit import fit_layer
    from ..theory.multihead import separating_input, theorem2_layer
    from ..theory.sampling import sample_inputs

    g_V = theorem2_layer(d, n_heads, head_dim, seed=seed)
    X_fit = sample_inputs(n, d, batch=samples, inputs="sphere", seed=seed + 1)
    X_test = sample_inputs(n, d, batch=samples, inputs="sphere", seed=seed + 2)
    with torch.no_grad():
        Y_fit, Y_test = g_V(X_fit)[0], g_V(X_test)[0]
    std_fit = fit_layer(X_fit, Y_fit, n_heads=n_heads, restarts=std_restarts, max_iter=std_max_iter, seed=seed)
    fixed_fit = fit_layer(X_fit, Y_fit, n_heads=n_heads, head_dim=head_dim, restarts=fixed_restarts,
                          max_iter=fixed_max_iter, seed=seed)
    fits = (("standard", std_fit), ("fixed", fixed_fit))
    restarts = pd.DataFrame([dict(layer=name, head_dim=fit.layer.head_dim, restart=j, fit_error=float(e))
                             for name, fit in fits for j, e in enumerate(fit.restart_rel_err)])
    t2 = pd.DataFrame([dict(layer=name, head_dim=fit.layer.head_dim, best_fit_error=fit.rel_err,
                            test_error=_test_error(fit.layer, X_test, Y_test)) for name, fit in fits])
    sep = separating_input(std_fit.layer, g_V, n=n, seed=seed)
    by_case = pd.DataFrame([dict(case=c, max_abs_gap=s.gap, relative_gap=s.rel_gap)
                            for c in (1, 2, 3) for s in [separating_input(std_fit.layer, g_V, n=n, case=c, seed=seed)]])
    with torch.no_grad():
        fX, gX = std_fit.layer(sep.X[None])[0][0], g_V(sep.X[None])[0][0]
    return {"t2_restarts": restarts, "t2": t2, "separation": sep, "by_case": by_case, "sep_outputs": (fX, gX),
            "t2_shape": dict(d=d, n_heads=n_heads, head_dim=head_dim)}


def run_costs(d_models, heads, seq_lens) -> dict:
    """cost_table with d_p = n, with params in millions and GFLOPs ("costs")."""
    from ..theory.multihead import cost_table

    costs = cost_table(d_models, heads, seq_lens)
    costs["params (M)"] = costs["params"] / 1e6
    costs["GFLOPs"] = costs["flops"] / 1e9
    return {"costs": costs}


HEADLINE_KEYS = (
    "ch03_h_last_fit", "ch03_dh_last_fit", "ch03_h_first_fail", "ch03_dh_first_fail", "ch03_fail_error",
    "ch03_fixed_worst", "ch03_paper_h", "ch03_embed_error", "ch03_embed_naive_error",
    "ch03_t2_floor", "ch03_t2_floor_test", "ch03_t2_fixed", "ch03_t2_std_max",
    "ch03_sep_case", "ch03_sep_gap", "ch03_sep_rel_gap", "ch03_sep_best_case_gap",
    "ch03_cost_ratio", "ch03_cost_d", "ch03_cost_h", "ch03_cost_n",
)


def headline(tables: dict) -> dict:
    """Every number chapter 03 glues, from the tables of its run functions."""
    per_layer, tol, d = tables["per_layer"], tables["vanish_tol"], tables["hc_d"]
    std = per_layer[per_layer.layer == "standard"].set_index("n_heads")["worst_head_error"]
    fits, fails = std[std < tol], std[std >= tol]
    h_last = int(fits.index.max()) if len(fits) else -1
    h_fail = int(fails.index.min()) if len(fails) else -1
    out = {"ch03_h_last_fit": h_last, "ch03_dh_last_fit": int(d // h_last) if h_last > 0 else -1,
           "ch03_h_first_fail": h_fail, "ch03_dh_first_fail": int(d // h_fail) if h_fail > 0 else -1,
           "ch03_fail_error": float(fails.min()) if len(fails) else float("nan"),
           "ch03_fixed_worst": float(per_layer[per_layer.layer == "fixed"]["worst_head_error"].max()),
           "ch03_paper_h": float(d / tables["hc_n"])}
    emb = tables["embedding"].iloc[0]
    out["ch03_embed_error"], out["ch03_embed_naive_error"] = float(emb["max_abs_error"]), float(emb["max_abs_error_unscaled"])
    t2 = tables["t2"].set_index("layer")
    rs = tables["t2_restarts"]
    out["ch03_t2_floor"] = float(t2.loc["standard", "best_fit_error"])
    out["ch03_t2_floor_test"] = float(t2.loc["standard", "test_error"])
    out["ch03_t2_fixed"] = float(t2.loc["fixed", "best_fit_error"])
    out["ch03_t2_std_max"] = float(rs[rs.layer == "standard"]["fit_error"].max())
    sep = tables["separation"]
    out["ch03_sep_case"], out["ch03_sep_gap"], out["ch03_sep_rel_gap"] = int(sep.case), float(sep.gap), float(sep.rel_gap)
    out["ch03_sep_best_case_gap"] = float(tables["by_case"]["max_abs_gap"].max())
    costs = tables["costs"]
    dm, hm, nm = int(costs.d_model.max()), int(costs.n_heads.max()), int(costs.n.min())
    big = costs[(costs.d_model == dm) & (costs.n_heads == hm) & (costs.n == nm) & (costs.kind == "fixed")]
    out.update(ch03_cost_ratio=float(big["params_vs_standard"].iloc[0]), ch03_cost_d=dm, ch03_cost_h=hm, ch03_cost_n=nm)
    return out


def summary(tables: dict) -> list[str]:
    """The rounded, stable lines the chapter's NBVAL_CHECK_OUTPUT cell prints."""
    h = headline(tables)
    tol = tables["vanish_tol"]
    return [f"head-count sweep, d = {tables['hc_d']}, n = {tables['hc_n']}: standard layer fits all heads up to "
            f"h = {h['ch03_h_last_fit']} (d/h = {h['ch03_dh_last_fit']}), first fails at h = {h['ch03_h_first_fail']}; "
            f"fixed d_p = n fits every h: {h['ch03_fixed_worst'] < tol}",
            f"F in G: embedding exact to 1e-10: {h['ch03_embed_error'] < 1e-10}; without rescaling off by > 0.01: "
            f"{h['ch03_embed_naive_error'] > 0.01}",
            f"Theorem 2: standard-layer floor >= 0.01: {h['ch03_t2_floor'] >= 0.01}; "
            f"fixed layer below 1e-4: {h['ch03_t2_fixed'] < 1e-4}; separating case {h['ch03_sep_case']}",
            f"cost: fixed/standard parameters at d={h['ch03_cost_d']}, h={h['ch03_cost_h']}, d_p=n={h['ch03_cost_n']}: "
            f"{h['ch03_cost_ratio']:.1f}"]
