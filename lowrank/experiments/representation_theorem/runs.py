"""Chapter 02's experiments: each run function returns a dict of tables that ``run(P)`` merges."""
from __future__ import annotations

import math

import pandas as pd
import torch

from .sweeps import (bound_table, fit_causal, fit_many_inputs, sparse_sweep, threshold_sweep, threshold_targets,
                     vanishing_rank)

__all__ = ["run_construction", "run_counterexample", "run_threshold", "run_sparse", "run_bounds", "run_bottleneck",
           "run_causal", "run_d_below_n", "run_many_inputs"]


def run_construction(construction_ns, *, d_extra: int = 4, seed: int = 0) -> dict:
    """Theorem 1's construction at head size n and n - 1 (table "construction") and one worked
    example for the figure: the target P and the attention of the head of size n - 1 built for it
    ("example_P", "example_A"), at the second n of construction_ns (the first if only one)."""
    from ...theory.representation import construction_check, head_logits, representation_weights
    from ...theory.targets import dirichlet_targets

    construction = construction_check(construction_ns, d_extra=d_extra, seed=seed)
    n_show = list(construction_ns)[min(1, len(construction_ns) - 1)]
    X = torch.randn(n_show, n_show + d_extra, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    P = dirichlet_targets(n_show, seed=seed)[0]
    W_q, W_k = representation_weights(X, P, head_dim=n_show - 1)
    A = torch.softmax(head_logits(X, W_q, W_k), dim=-1)
    return {"construction": construction, "example_P": P, "example_A": A,
            "construction_params": dict(ns=list(construction_ns), d_extra=d_extra)}


def run_counterexample(*, seed: int = 0, draws: int = 10_000) -> dict:
    """The d < n counterexample under `draws` random weight pairs (entries N(0, 100)): the
    reason it fails, the largest move of row 2 away from uniform, and the smallest total
    variation from row 2 to the target's row 2 (table "counterexample", one row)."""
    from ...theory.representation import theorem1_counterexample

    ce = theorem1_counterexample()
    gen = torch.Generator().manual_seed(seed)
    W = 10 * torch.randn(2, draws, 1, 1, generator=gen, dtype=torch.float64)
    A = torch.softmax((ce.X @ W[0]) @ (ce.X @ W[1]).transpose(-2, -1), dim=-1)
    row2_tv = 0.5 * (A[:, 1] - ce.P[1]).abs().sum(-1)
    return {"counterexample": pd.DataFrame([dict(reason=ce.reason, draws=draws,
                                                 row2_max_move=float((A[:, 1] - 0.5).abs().max()),
                                                 row2_min_tv=float(row2_tv.min()))])}


def run_threshold(threshold_ns, concentrations, *, n_targets: int = 3, near: int = 3, coarse: int = 5,
                  restarts: int = 2, max_iter: int = 1000, vanish_tol: float = 1e-5, seed: int = 0) -> dict:
    """threshold_sweep ("sweep"), its best restart per target and rank ("best") and the
    vanishing rank per n at vanish_tol ("vanish")."""
    sweep = threshold_sweep(threshold_ns, concentrations, n_targets=n_targets, near=near, coarse=coarse,
                            restarts=restarts, max_iter=max_iter, seed=seed)
    best = sweep.groupby(["n", "concentration", "target", "rank"], as_index=False)["tv_max"].min()
    return {"sweep": sweep, "best": best, "vanish": vanishing_rank(sweep, tol=vanish_tol),
            "vanish_tol": vanish_tol, "threshold_params": dict(concentrations=list(concentrations), n_targets=n_targets,
                                                               restarts=restarts, max_iter=max_iter)}


def run_sparse(sparse_ns, sparse_kinds, *, k: int = 2, eps: float = 1e-3, ranks=None, n_targets: int = 2,
               restarts: int = 2, max_iter: int = 300, tol: float = 0.01, seed: int = 0) -> dict:
    """sparse_sweep ("sparse") and the smallest rank reaching tol per n and family ("reach")."""
    sparse = sparse_sweep(sparse_ns, sparse_kinds, k=k, eps=eps, ranks=ranks, n_targets=n_targets,
                          restarts=restarts, max_iter=max_iter, seed=seed)
    return {"sparse": sparse, "reach": vanishing_rank(sparse, tol=tol, by=("n", "kind")), "sparse_tol": tol,
            "sparse_params": dict(k=k, eps=eps, n_targets=n_targets, ranks=ranks)}


def run_bounds(tables: dict, concentrations, *, n_targets: int, seed: int = 0) -> dict:
    """The certified bounds next to every fitted error of run_threshold's sweep ("bounds")."""
    sweep = tables["sweep"]
    P_by_n = {int(n): threshold_targets(int(n), concentrations, n_targets=n_targets, seed=seed)
              for n in sweep["n"].unique()}
    return {"bounds": bound_table(sweep, P_by_n)}


def run_bottleneck(n: int, ranks, *, concentration: float = 1.0, n_targets: int = 3, restarts: int = 2,
                   max_iter: int = 1000, seed: int = 0) -> dict:
    """The error well below the threshold (r << n): best fitted max-row TV at each rank of `ranks`
    for n_targets Dirichlet(concentration) targets at n, with the certified bound and the
    truncated-SVD upper bound ("bottleneck", one row per (target, rank))."""
    from ...tasks.fit import logit_rank_sweep
    from ...theory.representation import logit_tail, truncation_tv, tv_lower_bound
    from ...theory.targets import dirichlet_targets

    P = dirichlet_targets(n, concentration=concentration, batch=n_targets, seed=seed + 31 * n)
    ranks = [int(r) for r in ranks if r < n - 1]
    df = logit_rank_sweep(P, ranks, restarts=restarts, max_iter=max_iter, seed=seed)
    best = df.groupby(["target", "rank"], as_index=False)["tv_max"].min().rename(columns={"tv_max": "fitted_tv"})
    best["tv_bound"] = [tv_lower_bound(P[t], r) for t, r in zip(best["target"], best["rank"])]
    best["logit_bound_rel"] = [logit_tail(P[t], r) / logit_tail(P[t], 0) for t, r in zip(best["target"], best["rank"])]
    best["truncation_tv"] = [truncation_tv(P[t], r) for t, r in zip(best["target"], best["rank"])]
    best.insert(0, "n", n)
    return {"bottleneck": best}


def run_causal(ns, *, concentration: float = 1.0, n_targets: int = 2, width: int = 2, restarts: int = 2,
               max_iter: int = 1500, tol: float = 1e-5, seed: int = 0) -> dict:
    """The head size a causal head needs: for each n, lower-triangular Dirichlet targets fitted at
    ranks 1 and floor(n/2) - width .. floor(n/2) + width (fit_causal), the certified rank bound
    (causal_rank_bound) and TV bound per target and rank. Tables "causal" (one row per target
    and rank: fitted_tv, tv_bound) and "causal_threshold" (per n: fitted threshold at tol, the
    smallest bound rank over the targets, floor(n/2))."""
    from ...theory.representation import causal_rank_bound, causal_targets, causal_tv_lower_bound

    frames, rows = [], []
    for n in ns:
        P = causal_targets(n, concentration=concentration, batch=n_targets, seed=seed + 13 * n)
        ranks = sorted({1} | {r for r in range(n // 2 - width, n // 2 + width + 1) if 1 <= r <= n - 1})
        df = fit_causal(P, ranks, restarts=restarts, max_iter=max_iter, seed=seed + n)
        best = df.groupby(["target", "n", "rank"], as_index=False)["tv_max"].min().rename(columns={"tv_max": "fitted_tv"})
        best["tv_bound"] = [causal_tv_lower_bound(P[t], r) for t, r in zip(best["target"], best["rank"])]
        frames.append(best)
        v = vanishing_rank(df, tol=tol)
        rows.append(dict(n=n, fitted_threshold=v["vanishing_rank"].iloc[0],
                         bound_threshold=min(causal_rank_bound(P[t]) for t in range(n_targets)), half=n // 2))
    return {"causal": pd.concat(frames, ignore_index=True), "causal_threshold": pd.DataFrame(rows), "causal_tol": tol,
            "causal_params": dict(n_targets=n_targets, restarts=restarts)}


def run_d_below_n(d: int, ns, *, concentration: float = 1.0, n_targets: int = 2, restarts: int = 2,
                  max_iter: int = 1000, seed: int = 0) -> dict:
    """Inputs of rank d < n: for each n, Gaussian X (n, d) and Dirichlet targets; a head of size d
    fitted (fit_heads: best max-row TV), the exact smallest centred-logit error of any head on X
    relative to ||L0||_F (input_limited_logit_error) against the law sqrt(1 - d^2 / (n (n - 1)))
    for n > d, and the certified TV bound. Table "d_below_n", one row per (n, target)."""
    from ...tasks.fit import fit_heads
    from ...theory.representation import centred_log, input_limited_logit_error, input_limited_tv_bound
    from ...theory.sampling import sample_inputs
    from ...theory.targets import dirichlet_targets

    rows = []
    for n in ns:
        X = sample_inputs(n, d, inputs="gaussian", seed=seed + n)[0]
        P = dirichlet_targets(n, concentration=concentration, batch=n_targets, seed=seed + 17 * n)
        fit = fit_heads(X, P, head_dim=min(d, n), restarts=restarts, max_iter=max_iter, seed=seed)
        best = fit.groupby("head")["tv_max"].min()
        for t in range(n_targets):
            rel = input_limited_logit_error(X, P[t]) / float(centred_log(P[t]).norm())
            rows.append(dict(n=n, d=d, target=t, fitted_tv=float(best[t]), logit_error_rel=rel,
                             law=math.sqrt(max(0.0, 1 - d * d / (n * (n - 1)))) if n > d else 0.0,
                             tv_bound=input_limited_tv_bound(X, P[t])))
    return {"d_below_n": pd.DataFrame(rows)}



def run_many_inputs(n: int, d: int, head_dims, ms, *, restarts: int = 4, max_iter: int = 2000, tol: float = 1e-5,
                    seed: int = 0) -> dict:
    """How many inputs one head of size r fits exactly: for each r in head_dims and m in ms, m
    Gaussian inputs (n, d) with Dirichlet(1) targets, one head fitted to all of them. The
    counting estimate: the head's bilinear form W_q W_k^T has 2 d r - r^2 degrees of freedom
    (d^2 for r >= d), each input imposes n (n - 1) equations, so m* = floor(dof / (n (n - 1))) when
    r >= n - 1 and 0 below (one input already needs r >= n - 1).
    Tables "many_inputs" (one row per r, m: best max-row TV) and "capacity" (per r: the largest
    m fitted below tol, the counting estimate)."""
    from ...theory.sampling import sample_inputs
    from ...theory.targets import dirichlet_targets

    rows = []
    for r in head_dims:
        for m in ms:
            X = sample_inputs(n, d, batch=m, inputs="gaussian", seed=seed + 101 * m + r)
            P = dirichlet_targets(n, batch=m, seed=seed + 103 * m + r)
            df = fit_many_inputs(X, P, r, restarts=restarts, max_iter=max_iter, seed=seed)
            rows.append(dict(n=n, d=d, rank=r, inputs=m, fitted_tv=float(df["tv_max"].min())))
    table = pd.DataFrame(rows)
    cap = []
    for r, g in table.groupby("rank"):
        ok = g[g["fitted_tv"] < tol]["inputs"]
        dof = d * d if r >= d else 2 * d * r - r * r
        cap.append(dict(rank=r, fitted_capacity=int(ok.max()) if len(ok) else 0,
                        counting=dof // (n * (n - 1)) if r >= n - 1 else 0, dof=dof))
    return {"many_inputs": table, "capacity": pd.DataFrame(cap), "many_tol": tol}

