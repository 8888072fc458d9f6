"""Chapter 06's grid and draws: head sizes round(2^(k/m)), the nested hardmax draws that read
every head size of the grid from one draw, and the number of draws per n.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...core.progress import tqdm
from ...theory.barrier import expected_distinct_columns
from ..shared.montecarlo import cell_seed

__all__ = ["head_dim_grid", "nested_hardmax_table", "trials_per_n", "main_criterion"]


def head_dim_grid(max_head_dim: int, points_per_octave: int = 4) -> list[int]:
    """Distinct head sizes round(2^(k / points_per_octave)) from 1 to max_head_dim (inclusive)."""
    if max_head_dim < 1 or points_per_octave < 1:
        raise ValueError(f"need max_head_dim >= 1 and points_per_octave >= 1, got {max_head_dim}, "
                         f"{points_per_octave}")
    top = int(math.floor(points_per_octave * math.log2(max_head_dim) + 1e-9))
    return sorted({int(round(2 ** (k / points_per_octave))) for k in range(top + 1)})


def nested_hardmax_table(ns: Sequence[int], head_dims: Sequence[int], *, n_trials: int | Sequence[int],
                         seed: int = 0, device="cpu", max_elements: int = 2 ** 25,
                         progress: bool = False) -> pd.DataFrame:
    """Exact hardmax rank in the theorem's setting for a whole grid of d_h from one draw each.

    Under orthonormal X and Gaussian W_q, W_k, Q and K are n x d_h with i.i.d. N(0, 1)
    entries, so a draw at the largest d_h holds every smaller one in its leading columns:
    S(d) = Q[:, :d] K[:, :d]^T is accumulated column block by column block, and the hardmax
    rank (distinct row-argmax columns, O(n^2), no SVD) is read at each grid point. One draw
    costs n^2 max(d_h) multiply-adds instead of n^2 sum(d_h); the curves of one draw share
    their randomness (common random numbers), so a bootstrap resamples whole draws.
    Columns: n, head_dim, trial, rank, bound, rank_over_bound.
    """
    dims = sorted({int(d) for d in head_dims})
    trials = [int(n_trials)] * len(ns) if np.ndim(n_trials) == 0 else [int(t) for t in n_trials]
    if len(trials) != len(ns) or min(trials) < 1 or dims[0] < 1:
        raise ValueError(f"need head dims >= 1 and n_trials >= 1 (one int or one per n), got "
                         f"n_trials={n_trials!r} for ns={list(ns)!r}")
    frames = []
    for n, t in tqdm(list(zip(ns, trials)), disable=not progress, leave=False, desc="n"):
        g = torch.Generator(device=device).manual_seed(cell_seed(seed, n, dims[-1]))
        batch = max(1, min(t, max_elements // (n * n + 2 * n * dims[-1])))
        ranks = np.empty((len(dims), t))
        done = 0
        while done < t:
            b = min(batch, t - done)
            Q = torch.randn(b, n, dims[-1], generator=g, device=device)
            K = torch.randn(b, n, dims[-1], generator=g, device=device)
            S = torch.zeros(b, n, n, device=device)
            prev = 0
            hit = torch.zeros(b, n, dtype=torch.bool, device=device)
            for i, d in enumerate(dims):
                S.baddbmm_(Q[:, :, prev:d], K[:, :, prev:d].transpose(1, 2))
                prev = d
                hit.zero_()
                hit.scatter_(1, S.argmax(-1), True)
                ranks[i, done:done + b] = hit.sum(-1).cpu().numpy()
            done += b
        bound = expected_distinct_columns(n)
        frames.append(pd.DataFrame({"n": n, "head_dim": np.repeat(dims, t), "trial": np.tile(np.arange(t), len(dims)),
                                    "rank": ranks.ravel(), "bound": bound, "rank_over_bound": ranks.ravel() / bound}))
    return pd.concat(frames, ignore_index=True)


def trials_per_n(P: Mapping[str, Any]) -> list[int]:
    """Draws per n: max(min_trials, rows_per_cell // n), so every n holds about the same rows
    (the rank fraction's spread falls like 1 / sqrt(n), so each point's error stays level)."""
    return [max(P["min_trials"], P["rows_per_cell"] // n) for n in P["ns"]]


def main_criterion(P: Mapping[str, Any], what: str = "bound") -> str:
    """The middle fraction's criterion name, e.g. '75% of bound'."""
    return f"{round(100 * P['fractions'][len(P['fractions']) // 2])}% of {what}"
