"""The equivalence verdict any chapter may use: the smallest setting whose value is, by a one-sided
test across seeds, within a margin of the best setting's (a plateau shown, not merely not rejected).
"""
from __future__ import annotations

import math

import numpy as np

from .intervals import t_quantile

__all__ = ["equivalent_from"]


def equivalent_from(d: np.ndarray, V: np.ndarray, margin: float, level: float = 0.95) -> tuple[float, int]:
    """Smallest d_h whose value is within ``margin`` of the best d_h's by a one-sided test across seeds.

    V (d_h, seeds). The best is the d_h with the largest mean; for each d_h the paired (by seed)
    difference best - V[d_h] gets a one-sided ``level`` upper bound mean + t se (t on seeds - 1
    degrees of freedom); d_h qualifies when the bound is below ``margin`` (with one seed the bound
    is infinite: nothing but the best qualifies). Returns (d*, index of the best).
    """
    k = V.shape[1]
    best = int(np.argmax(V.mean(1)))
    diff = V[best][None, :] - V
    mean = diff.mean(1)
    if k >= 2:
        bound = mean + t_quantile(level, k - 1) * diff.std(1, ddof=1) / math.sqrt(k)
    else:
        bound = np.where(np.arange(len(d)) == best, 0.0, np.inf)
    ok = bound < margin
    ok[best] = True
    return float(d[int(np.argmax(ok))]), best
