"""Chapter 05's near-orthonormal inputs: the barrier under the 2026 version's hypothesis
X X^T = I + E, |E_ij| = c n^-3/2 (lowrank.theory.perturbed), with c = 0 the orthonormal reference."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ...measure.rank import hardmax_rank
from ...theory.barrier import expected_distinct_columns
from ...theory.perturbed import near_orthonormal_gram
from ..shared.montecarlo import cell_seed

__all__ = ["near_orthonormal_table", "near_cells"]


def near_orthonormal_table(ns: Sequence[int], cs: Sequence[float], head_dims: Sequence[int], *, n_trials: int,
                           seed: int = 0) -> pd.DataFrame:
    """Hardmax rank of one Gaussian head on near-orthonormal tokens, one row per (n, c, d_h, trial).

    Each trial draws its own E and one Gaussian G_q, G_k of the largest d_h; a smaller d_h reads
    the first columns (nested, so the curve in d_h is one draw's), and every c (0 included) shares
    the trial's G, so the effect of the perturbation is paired within the trial. Columns: n, c,
    head_dim, trial, rank, rank_frac, bound (n (1 - (1 - 1/n)^n)).
    """
    if not ns or not cs or not head_dims or n_trials < 1:
        raise ValueError("ns, cs and head_dims must be non-empty and n_trials >= 1")
    dmax = max(head_dims)
    rows = []
    for n in ns:
        for t in range(n_trials):
            g = torch.Generator().manual_seed(cell_seed(seed, n, t))
            Z = torch.randn(2, n, dmax, generator=g, dtype=torch.float64)
            for c in cs:
                G = near_orthonormal_gram(int(n), float(c), seed=cell_seed(seed, n, t, 1))[0]
                w, U = torch.linalg.eigh(G)
                S = U @ torch.diag(w.sqrt()) @ U.T
                Q, K = S @ Z[0], S @ Z[1]
                for d in head_dims:
                    r = int(hardmax_rank(Q[:, :d] @ K[:, :d].T))
                    rows.append((int(n), float(c), int(d), t, r))
    out = pd.DataFrame(rows, columns=["n", "c", "head_dim", "trial", "rank"])
    out["rank_frac"] = out["rank"] / out["n"]
    out["bound"] = expected_distinct_columns(out["n"].to_numpy())
    return out


def near_cells(table: pd.DataFrame) -> pd.DataFrame:
    """Per (n, c, d_h): mean rank, its standard error over trials, the bound, the excess in
    standard errors, and the mean paired change from c = 0 (same trial) with its standard error."""
    cells = table.groupby(["n", "c", "head_dim"])["rank"].agg(["mean", "sem", "count"]).reset_index()
    cells["bound"] = expected_distinct_columns(cells["n"].to_numpy())
    cells["z"] = (cells["mean"] - cells["bound"]) / cells["sem"].where(cells["sem"] > 0)
    ref = table[table.c == 0].set_index(["n", "head_dim", "trial"])["rank"]
    paired = table.join(ref.rename("rank0"), on=["n", "head_dim", "trial"])
    paired["shift"] = (paired["rank"] - paired["rank0"]) / paired["n"]
    sh = paired.groupby(["n", "c", "head_dim"])["shift"].agg(["mean", "sem"]).reset_index()
    cells["shift"], cells["shift_se"] = sh["mean"].to_numpy(), sh["sem"].to_numpy()
    cells["frac"] = cells["mean"] / cells["n"]
    return cells
