"""Chapter 02's fitting sweeps: rank-r logits against dense, sparse and causal targets, one head
for many inputs, and the certified bounds beside the fits. Tidy tables, one row per fit."""
from __future__ import annotations

import math

import pandas as pd
import torch

from ...tasks.fit import logit_rank_sweep
from ...core.progress import tqdm

__all__ = ["rank_grid", "threshold_sweep", "vanishing_rank", "sparse_sweep", "bound_table", "threshold_targets",
           "fit_causal", "fit_many_inputs"]


def rank_grid(n: int, *, near: int = 3, coarse: int = 5) -> list[int]:
    """Ranks to fit at sequence length n: every rank from n - near to n, and up to `coarse`
    geometrically spaced ranks below that (always including 1)."""
    if not (isinstance(n, int) and n >= 2 and near >= 0 and coarse >= 0):
        raise ValueError(f"need n >= 2, near >= 0, coarse >= 0, got n={n!r}, near={near!r}, coarse={coarse!r}")
    top = list(range(max(1, n - near), n + 1))
    below = top[0] - 1
    low = []
    if below >= 1 and coarse > 0:
        grid = torch.logspace(0, math.log10(below), coarse, dtype=torch.float64).round().long().tolist()
        low = sorted(set(grid))
    return low + top


def threshold_sweep(ns, concentrations, *, n_targets: int = 3, near: int = 3, coarse: int = 5,
                    restarts: int = 2, max_iter: int = 1000, seed: int = 0, progress: bool = False) -> pd.DataFrame:
    """Best error of rank-r logits against dense Dirichlet targets, for every n and concentration.

    For each n: n_targets targets per concentration (rows Dirichlet(concentration)), ranks
    rank_grid(n, near=near, coarse=coarse), `restarts` L-BFGS starts each, all in one batch.
    One row per (n, concentration, target, rank, restart): tv_max, kl, loss, and the target's
    exact min_logit_rank (the rank from which an exact fit exists).
    """
    from ...theory.representation import min_logit_rank
    from ...theory.targets import dirichlet_targets

    frames = []
    for n in tqdm(list(ns), disable=not progress, leave=False, desc="n"):
        P = torch.cat([dirichlet_targets(n, concentration=c, batch=n_targets, seed=seed + 7919 * i + n)
                       for i, c in enumerate(concentrations)])
        df = logit_rank_sweep(P, rank_grid(n, near=near, coarse=coarse), restarts=restarts, max_iter=max_iter,
                              seed=seed + n)
        df.insert(1, "concentration", [concentrations[t // n_targets] for t in df["target"]])
        df["min_logit_rank"] = [min_logit_rank(P[t]) for t in df["target"]]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def vanishing_rank(df: pd.DataFrame, *, tol: float, by=("n",)) -> pd.DataFrame:
    """Smallest rank from which the error stays below tol, per group.

    df: rows of (rank, target, tv_max, ... by) as from threshold_sweep. For each target the
    best restart counts; a rank passes when every target's best tv_max is below tol; the
    vanishing rank is the smallest passing rank above which every tested rank passes (NaN if
    none). Also reports the worst best-error one rank step below it (the error just before it
    vanishes). Columns: *by, vanishing_rank, error_below, error_at.
    """
    by = list(by)
    best = df.groupby(by + ["target", "rank"], as_index=False)["tv_max"].min()
    worst = best.groupby(by + ["rank"], as_index=False)["tv_max"].max().sort_values(by + ["rank"])
    rows = []
    for key, g in worst.groupby(by):
        key = key if isinstance(key, tuple) else (key,)
        ranks, errs = g["rank"].to_numpy(), g["tv_max"].to_numpy()
        passing = errs < tol
        # index of the first rank of the final run of passing ranks
        k = len(passing)
        while k > 0 and passing[k - 1]:
            k -= 1
        row = dict(zip(by, key))
        if k == len(passing):
            row.update(vanishing_rank=float("nan"), error_below=float(errs[-1]), error_at=float("nan"))
        else:
            row.update(vanishing_rank=int(ranks[k]), error_below=float(errs[k - 1]) if k > 0 else float("nan"),
                       error_at=float(errs[k]))
        rows.append(row)
    return pd.DataFrame(rows)


def sparse_sweep(ns, kinds, *, k: int = 2, eps: float = 1e-3, concentration: float = 1.0, n_targets: int = 2,
                 ranks=None, restarts: int = 2, max_iter: int = 500, seed: int = 0,
                 progress: bool = False) -> pd.DataFrame:
    """Best error of rank-r logits against sparse, near-permutation and dense targets.

    kinds: any of "permutation" (1 - eps on a random permutation), "sparse" (k keys share
    1 - eps per row), "dense" (Dirichlet(concentration) rows). ranks: list of ranks, or None
    for 1, 2, 3, 4, 6, 8, 12, 16, ... below n, and n - 1. One row per (n, kind, target,
    rank, restart): tv_max, kl, loss. Only ranks below n - 1 are fitted.
    """
    from ...theory.targets import dirichlet_targets, permutation_targets, sparse_targets

    makers = {
        "permutation": lambda n, s: permutation_targets(n, eps=eps, batch=n_targets, seed=s),
        "sparse": lambda n, s: sparse_targets(n, k, eps=eps, batch=n_targets, seed=s),
        "dense": lambda n, s: dirichlet_targets(n, concentration=concentration, batch=n_targets, seed=s),
    }
    bad = [kd for kd in kinds if kd not in makers]
    if bad:
        raise ValueError(f"unknown target kinds {bad}; allowed: {list(makers)}")
    frames = []
    for n in tqdm(list(ns), disable=not progress, leave=False, desc="n"):
        rs = ranks if ranks is not None else sorted({r for r in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
                                                     if r < n - 1} | {n - 1})
        # From r = n - 1 every positive P is exact (chapter 02); the question is how far below.
        rs = [r for r in rs if r < n - 1]
        P = torch.cat([makers[kd](n, seed + 104729 * i + n) for i, kd in enumerate(kinds)])
        df = logit_rank_sweep(P, rs, restarts=restarts, max_iter=max_iter, seed=seed + n)
        df.insert(1, "kind", [kinds[t // n_targets] for t in df["target"]])
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def bound_table(sweep: pd.DataFrame, P_by_n: dict) -> pd.DataFrame:
    """One row per (n, concentration, target, rank) of a threshold sweep: the best fitted max-row
    TV, the certified lower bound (tv_lower_bound), the centred-logit Eckart-Young bound
    (logit_tail) and the TV of the truncated SVD (an upper bound on the optimum)."""
    from ...theory.representation import logit_tail, truncation_tv, tv_lower_bound

    best = sweep.groupby(["n", "concentration", "target", "rank"], as_index=False)["tv_max"].min()
    rows = []
    for r in best.itertuples(index=False):
        P = P_by_n[r.n][r.target]
        rows.append(dict(n=r.n, concentration=r.concentration, target=r.target, rank=r.rank, fitted_tv=r.tv_max,
                         tv_bound=tv_lower_bound(P, r.rank), logit_bound=logit_tail(P, r.rank),
                         truncation_tv=truncation_tv(P, r.rank)))
    return pd.DataFrame(rows)


def threshold_targets(n: int, concentrations, *, n_targets: int, seed: int) -> torch.Tensor:
    """The targets threshold_sweep fits at n, in its order (batch, n, n)."""
    from ...theory.targets import dirichlet_targets

    return torch.cat([dirichlet_targets(n, concentration=c, batch=n_targets, seed=seed + 7919 * i + n)
                      for i, c in enumerate(concentrations)])


def fit_causal(P, ranks, *, restarts: int = 2, max_iter: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Best causal head of every size: fit masked softmax_row(A B^T) (keys j <= i) to every
    lower-triangular positive P[t] (batch, n, n) at every rank, by L-BFGS on the mean row KL, all
    in one batch. One row per (target, rank, restart): target, n, rank, restart, tv_max, kl."""
    from ...tasks.fit import lbfgs

    P = torch.as_tensor(P, dtype=torch.float64)
    P = P[None] if P.dim() == 2 else P
    b, n, _ = P.shape
    ranks = [int(r) for r in ranks]
    rb = torch.tensor(ranks).repeat(b)
    Pb = P.repeat_interleave(len(ranks), dim=0).repeat_interleave(restarts, dim=0)
    r_max = max(ranks)
    g = torch.Generator().manual_seed(int(seed))
    mask = (torch.arange(r_max)[None, :] < rb[:, None]).to(torch.float64).repeat_interleave(restarts, 0)[:, None, :]
    std = rb.to(torch.float64).pow(-0.25).repeat_interleave(restarts)[:, None, None]
    x0 = torch.randn(len(rb) * restarts, 2, n, r_max, generator=g, dtype=torch.float64) * std[:, None] * mask[:, None]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    logP = torch.where(allowed, Pb.clamp_min(1e-300).log(), torch.zeros_like(Pb))

    def logq_of(x, rows):
        x = x.view(-1, 2, n, r_max)
        S = (x[:, 0] * mask[rows]) @ (x[:, 1] * mask[rows]).transpose(-2, -1)
        return torch.log_softmax(S.masked_fill(~allowed, float("-inf")), -1)

    def fun(x, rows):
        logq = torch.where(allowed, logq_of(x, rows), torch.zeros(()))
        return (Pb[rows] * (logP[rows] - logq)).sum(-1).mean(-1)

    x, kl, _ = lbfgs(fun, x0.reshape(len(x0), -1), max_iter=max_iter)
    Q = torch.where(allowed, logq_of(x, torch.arange(len(x))).exp(), torch.zeros(()))
    tv = 0.5 * (Q - Pb).abs().sum(-1).amax(-1)
    return pd.DataFrame([dict(target=i // (len(ranks) * restarts), n=n, rank=int(rb[i // restarts]),
                              restart=i % restarts, tv_max=float(tv[i]), kl=float(kl[i])) for i in range(len(x))])


def fit_many_inputs(X, P, head_dim: int, *, restarts: int = 4, max_iter: int = 2000, seed: int = 0) -> pd.DataFrame:
    """One head (W_q, W_k of size (d, head_dim)) fitted to m inputs at once: X (m, n, d), P (m, n, n)
    positive row-stochastic; minimises the mean over inputs of the mean row KL. One row per
    restart: restart, tv_max (largest max-row TV over the m inputs), kl."""
    from ...tasks.fit import lbfgs

    X = torch.as_tensor(X, dtype=torch.float64)
    P = torch.as_tensor(P, dtype=torch.float64)
    m, n, d = X.shape
    g = torch.Generator().manual_seed(int(seed))
    x0 = torch.randn(restarts, 2 * d * head_dim, generator=g, dtype=torch.float64) / math.sqrt(d)
    scale = 1.0 / math.sqrt(head_dim)
    logP = P.log()

    def logq_of(x):
        W = x.view(-1, 2, d, head_dim)
        S = scale * torch.einsum("mnd,rde->rmne", X, W[:, 0]) @ torch.einsum("mnd,rde->rmne", X, W[:, 1]).transpose(-2, -1)
        return torch.log_softmax(S, -1)

    def fun(x, rows):
        return (P * (logP - logq_of(x))).sum(-1).mean((-1, -2))

    x, kl, _ = lbfgs(fun, x0, max_iter=max_iter)
    tv = 0.5 * (logq_of(x).exp() - P).abs().sum(-1).amax((-1, -2))
    return pd.DataFrame([dict(restart=j, tv_max=float(tv[j]), kl=float(kl[j])) for j in range(restarts)])
