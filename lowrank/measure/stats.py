"""Small statistics the chapters share: means with standard errors that refuse one sample,
t intervals, paired differences and percentile bootstraps with enough replicates.

One value never yields a standard error: every function here returns NaN for the spread of
fewer than two values, never 0.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["Estimate", "mean_se", "t_interval", "paired_difference", "bootstrap_interval",
           "MIN_BOOTSTRAP"]

# A 95 % percentile interval rests on its 2.5 % tails: with 2000 replicates each tail holds 50.
MIN_BOOTSTRAP = 2000


class Estimate(NamedTuple):
    mean: float
    se: float      # NaN when n < 2
    lo: float      # interval bounds, NaN when n < 2
    hi: float
    n: int

    def text(self, fmt: str = ".3g") -> str:
        """'m [lo, hi] (n = k)', or 'm (one sample, no interval)'."""
        if self.n < 2 or math.isnan(self.lo):
            return f"{self.mean:{fmt}} (n = {self.n}, no interval)"
        return f"{self.mean:{fmt}} [{self.lo:{fmt}}, {self.hi:{fmt}}] (n = {self.n})"


def _values(x: Sequence[float]) -> np.ndarray:
    v = np.asarray(x, dtype=float).ravel()
    if v.size == 0:
        raise ValueError("no values to summarise")
    if not np.isfinite(v).all():
        raise ValueError(f"{int((~np.isfinite(v)).sum())} of {v.size} values are not finite")
    return v


def mean_se(x: Sequence[float]) -> tuple[float, float, int]:
    """(mean, standard error of the mean, n); the standard error is NaN for one value."""
    v = _values(x)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se, int(v.size)


def _t_quantile(level: float, dof: int) -> float:
    from scipy import stats  # scipy comes with seaborn; imported late to keep start-up light
    return float(stats.t.ppf(0.5 + level / 2, dof))


def t_interval(x: Sequence[float], level: float = 0.95) -> Estimate:
    """Mean with a Student-t interval over independent values (seeds)."""
    if not 0 < level < 1:
        raise ValueError(f"level = {level} must lie in (0, 1)")
    m, se, n = mean_se(x)
    if n < 2:
        return Estimate(m, se, float("nan"), float("nan"), n)
    half = _t_quantile(level, n - 1) * se
    return Estimate(m, se, m - half, m + half, n)


def paired_difference(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Estimate:
    """a - b paired element by element (same seed, same batches), with a t interval."""
    va, vb = _values(a), _values(b)
    if va.shape != vb.shape:
        raise ValueError(f"paired values need equal lengths, got {va.size} and {vb.size}")
    return t_interval(va - vb, level)


def bootstrap_interval(x: Sequence[float], statistic=np.mean, *, n_boot: int = MIN_BOOTSTRAP,
                       level: float = 0.95, seed: int = 0) -> Estimate:
    """Percentile bootstrap of a statistic over resampled values; refuses too few replicates."""
    if n_boot < MIN_BOOTSTRAP:
        raise ValueError(f"n_boot = {n_boot}: a {level:.0%} percentile interval needs at least {MIN_BOOTSTRAP}")
    v = _values(x)
    est = float(statistic(v))
    if v.size < 2:
        return Estimate(est, float("nan"), float("nan"), float("nan"), int(v.size))
    rng = np.random.default_rng(seed)
    reps = np.array([statistic(v[rng.integers(0, v.size, v.size)]) for _ in range(n_boot)], dtype=float)
    lo, hi = np.quantile(reps, [0.5 - level / 2, 0.5 + level / 2])
    return Estimate(est, float(reps.std(ddof=1)), float(lo), float(hi), int(v.size))
