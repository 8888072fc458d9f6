"""Chapter 02, the representation theorem: exact constructions, the n - 1 threshold by fitting,
sparse versus dense targets. Tidy tables, one row per fit."""
from __future__ import annotations

import math

import pandas as pd
import torch

from ..progress import tqdm
from ..fit import logit_rank_sweep

__all__ = ["rank_grid", "threshold_sweep", "vanishing_rank", "sparse_sweep"]


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
    from ..theory.representation import min_logit_rank
    from ..theory.targets import dirichlet_targets

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
    from ..theory.targets import dirichlet_targets, permutation_targets, sparse_targets

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
