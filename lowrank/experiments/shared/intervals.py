"""Quantiles of the normal and t distributions, and the intervals built from them.

scipy is imported inside the functions: importing a chapter module should not load it.
"""
from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["z_quantile", "t_quantile", "wilson_interval", "t_lower_bound"]


def z_quantile(p: float) -> float:
    """The standard normal quantile at p."""
    from scipy import stats
    return float(stats.norm.ppf(p))


@functools.lru_cache(maxsize=64)
def t_quantile(level: float, dof: int) -> float:
    """The t quantile at ``level`` on ``dof`` degrees of freedom (cached: bootstraps ask for it often)."""
    from scipy import stats
    return float(stats.t.ppf(level, dof))


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial share k / n (NaN, NaN for n = 0)."""
    if n <= 0:
        return float("nan"), float("nan")
    z, p = z_quantile(0.5 + level / 2), k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def t_lower_bound(x: np.ndarray, level: float = 0.95) -> float:
    """One-sided ``level`` lower bound of the mean of x (t on len(x) - 1 degrees of freedom); the
    mean itself when x has fewer than two values or no spread."""
    from scipy import stats
    if len(x) < 2 or np.all(x == x[0]):
        return float(x.mean())
    return float(x.mean() - stats.t.ppf(level, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
