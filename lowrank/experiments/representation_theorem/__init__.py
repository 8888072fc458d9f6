"""Chapter 02, the representation theorem: exact constructions, the n - 1 threshold by fitting,
sparse versus dense targets, causal heads, inputs of rank below n, one head for many inputs.

The package holds the chapter contract (``SCHEMA``, ``CONSTRAINTS``, ``run``, ``estimate`` here;
``headline`` and ``CLAIMS`` in their modules) and re-exports the public names of its parts.
"""
from __future__ import annotations

from typing import Any, Mapping

from ...core.params import Int, Float, IntList, FloatList, ChoiceList, Constraint, short_repr
from .claims import (CLAIMS, COUNTEREXAMPLE_TV, EXACT_TOL, MIN_LENGTHS, rule_causal_threshold,
                     rule_head_size_threshold, rule_theorem1, rule_theorem1_counterexample)
from .headlines import HEADLINE_KEYS, SPARSE_KINDS, headline, summary
from .runs import (run_bottleneck, run_bounds, run_causal, run_construction, run_counterexample, run_d_below_n,
                   run_many_inputs, run_sparse, run_threshold)
from .sweeps import (bound_table, fit_causal, fit_many_inputs, rank_grid, sparse_sweep, threshold_sweep,
                     threshold_targets, vanishing_rank)

__all__ = ["SCHEMA", "CONSTRAINTS", "run", "estimate", "headline", "summary", "HEADLINE_KEYS", "CLAIMS",
           "rank_grid", "threshold_sweep", "vanishing_rank", "sparse_sweep", "bound_table", "threshold_targets",
           "fit_causal", "fit_many_inputs", "run_construction", "run_counterexample", "run_threshold",
           "run_sparse", "run_bounds", "run_bottleneck", "run_causal", "run_d_below_n", "run_many_inputs"]


# The chapter's parameters: the notebook's parameters cell sets these names, and
# lowrank.core.params.validate checks them (and CONSTRAINTS) before anything runs.
SCHEMA = dict(
    seed=Int(0, doc="random seed"),
    construction_ns=IntList(2, 4096, doc="sequence lengths n for the exact construction"),
    d_extra=Int(0, 4096, doc="inputs X have d = n + d_extra columns"),
    threshold_ns=IntList(2, 1024, doc="sequence lengths n for the rank-threshold fits"),
    concentrations=FloatList(1e-3, 1e4, doc="Dirichlet concentrations of the dense target rows"),
    n_targets=Int(1, 1000, doc="targets (seeds) per n and concentration"),
    near=Int(0, 1024, doc="fit every rank from n - near to n"),
    coarse=Int(0, 64, doc="number of geometrically spaced lower ranks to fit"),
    restarts=Int(1, 256, doc="L-BFGS restarts per fit"),
    max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, threshold fits"),
    vanish_tol=Float(1e-14, 0.5, doc="max row total variation below which the error counts as vanished"),
    sparse_ns=IntList(3, 1024, doc="sequence lengths n for sparse vs dense targets"),
    sparse_kinds=ChoiceList("permutation", "sparse", "dense", doc="target families"),
    sparse_k=Int(1, 1024, doc="keys per row of the k-sparse targets"),
    sparse_eps=Float(1e-12, 0.5, doc="mass off the support of sparse targets"),
    sparse_n_targets=Int(1, 1000, doc="targets per n and family for sparse vs dense"),
    sparse_ranks=IntList(1, 1024, doc="logit ranks to fit for sparse vs dense targets (those below n - 1 are used)"),
    sparse_tol=Float(1e-12, 0.5, doc="max row total variation a rank must reach"),
    sparse_max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, sparse fits"),
    bottleneck_n=Int(4, 1024, doc="sequence length n for the error well below the threshold"),
    bottleneck_ranks=IntList(1, 1024, doc="head sizes r << n fitted at bottleneck_n"),
    causal_ns=IntList(3, 256, doc="sequence lengths n for the causal threshold"),
    causal_n_targets=Int(1, 100, doc="lower-triangular targets per n"),
    causal_width=Int(0, 64, doc="fit ranks floor(n/2) - width .. floor(n/2) + width (and 1)"),
    causal_restarts=Int(1, 256, doc="L-BFGS restarts per causal fit"),
    causal_max_iter=Int(1, 100_000, doc="L-BFGS iteration cap, causal fits"),
    dn_d=Int(1, 1024, doc="input rank d for the d < n sweep"),
    dn_ns=IntList(2, 4096, doc="sequence lengths n for the d < n sweep"),
    dn_n_targets=Int(1, 100, doc="targets per n in the d < n sweep"),
    many_n=Int(2, 256, doc="tokens per input for the many-inputs capacity"),
    many_d=Int(1, 1024, doc="input width d for the many-inputs capacity"),
    many_ranks=IntList(1, 1024, doc="head sizes r for the many-inputs capacity"),
    many_ms=IntList(1, 10_000, doc="numbers of inputs fitted by one head"),
    many_restarts=Int(1, 256, doc="L-BFGS restarts per many-inputs fit"),
)
CONSTRAINTS = (
    Constraint(("sparse_ranks", "sparse_ns"), lambda p: None if any(
        r < min(p["sparse_ns"]) - 1 for r in p["sparse_ranks"]) else (
        f"sparse_ranks {short_repr(p['sparse_ranks'])}: at least one must be below n - 1 = "
        f"{min(p['sparse_ns']) - 1} for the smallest sparse_ns (only those ranks are fitted)")),
    Constraint(("sparse_k", "sparse_ns"), lambda p: None if p["sparse_k"] < min(p["sparse_ns"]) else (
        f"sparse_k = {p['sparse_k']} must be below the smallest sparse_ns ({min(p['sparse_ns'])})")),
)

# run_many_inputs's iteration cap (the chapter has no parameter for it)
MANY_MAX_ITER = 1500


def run(p: Mapping[str, Any]) -> dict[str, Any]:
    """Every experiment of chapter 02 from its validated parameters (SCHEMA's names), in the order
    the chapter presents them; the tables of all run functions in one dict, and "params"."""
    seed, restarts, max_iter, vanish_tol = p["seed"], p["restarts"], p["max_iter"], p["vanish_tol"]
    concentrations, n_targets = p["concentrations"], p["n_targets"]
    tables = run_construction(p["construction_ns"], d_extra=p["d_extra"], seed=seed)
    tables.update(run_counterexample(seed=seed))
    tables.update(run_threshold(p["threshold_ns"], concentrations, n_targets=n_targets, near=p["near"],
                                coarse=p["coarse"], restarts=restarts, max_iter=max_iter, vanish_tol=vanish_tol,
                                seed=seed))
    tables.update(run_bounds(tables, concentrations, n_targets=n_targets, seed=seed))
    tables.update(run_bottleneck(p["bottleneck_n"], p["bottleneck_ranks"], n_targets=n_targets, restarts=restarts,
                                 max_iter=max_iter, seed=seed))
    tables.update(run_sparse(p["sparse_ns"], p["sparse_kinds"], k=p["sparse_k"], eps=p["sparse_eps"],
                             ranks=p["sparse_ranks"], n_targets=p["sparse_n_targets"], restarts=restarts,
                             max_iter=p["sparse_max_iter"], tol=p["sparse_tol"], seed=seed))
    tables.update(run_causal(p["causal_ns"], n_targets=p["causal_n_targets"], width=p["causal_width"],
                             restarts=p["causal_restarts"], max_iter=p["causal_max_iter"], tol=vanish_tol, seed=seed))
    tables.update(run_d_below_n(p["dn_d"], p["dn_ns"], n_targets=p["dn_n_targets"], restarts=restarts,
                                max_iter=max_iter, seed=seed))
    tables.update(run_many_inputs(p["many_n"], p["many_d"], p["many_ranks"], p["many_ms"],
                                  restarts=p["many_restarts"], max_iter=MANY_MAX_ITER, tol=vanish_tol, seed=seed))
    tables["params"] = dict(p)
    return tables


# --- cost estimate: work units the cost model (lowrank.experiments.costs) turns into time ----------

def _rank_grid_size(n: int, near: int, coarse: int) -> int:
    return len(rank_grid(n, near=near, coarse=coarse))


def estimate(p) -> tuple[dict[str, float], str]:
    """(work unit -> count, what the run does in a few words) at a full, checked parameter set."""
    lb = heads = causal = 0.0
    fits = 0

    def batch(b: int, cap: int, n: int, r: int) -> None:
        nonlocal lb, fits
        lb += b * cap * n * n * (r + 2)
        fits += b

    for n in p["threshold_ns"]:
        b = len(p["concentrations"]) * p["n_targets"] * _rank_grid_size(n, p["near"], p["coarse"]) * p["restarts"]
        batch(b, p["max_iter"], n, n)
    for n in p["sparse_ns"]:
        ranks = [r for r in p["sparse_ranks"] if r < n - 1]
        if ranks:
            batch(len(p["sparse_kinds"]) * p["sparse_n_targets"] * len(ranks) * p["restarts"], p["sparse_max_iter"],
                  n, max(ranks))
    n = p["bottleneck_n"]
    ranks = [r for r in p["bottleneck_ranks"] if r < n - 1]
    if ranks:
        batch(p["n_targets"] * len(ranks) * p["restarts"], p["max_iter"], n, max(ranks))
    for n in p["causal_ns"]:
        w = p["causal_width"]
        ranks = {1} | {r for r in range(n // 2 - w, n // 2 + w + 1) if 1 <= r <= n - 1}
        causal += p["causal_max_iter"]
        fits += p["causal_n_targets"] * len(ranks) * p["causal_restarts"]
    for n in p["dn_ns"]:
        heads += p["dn_n_targets"] * p["restarts"] * p["max_iter"] * n * (n + p["dn_d"]) * min(p["dn_d"], n)
        fits += p["dn_n_targets"] * p["restarts"]
    n, d = p["many_n"], p["many_d"]
    for r in p["many_ranks"]:
        for m in p["many_ms"]:
            heads += m * p["many_restarts"] * MANY_MAX_ITER * n * (n + d) * r
            fits += p["many_restarts"]
    return {"lbfgs": lb, "heads_fit": heads, "fit_iter": causal}, f"{fits:,} L-BFGS fits (each restart counted)"
