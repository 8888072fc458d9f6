"""The power rule, for any chapter's rules.

A comparison is sized before it runs: :func:`seeds_for_margin` is the smallest number of paired
seeds whose two-sided t interval reaches a half-width of ``margin`` at a planning standard deviation
measured on earlier seeds (never on the mean), so that an interval wholly inside (-margin, margin)
can show that no effect larger than the margin exists.
"""
from __future__ import annotations

import math

from .intervals import t_quantile

__all__ = ["seeds_for_margin"]


def seeds_for_margin(sd: float, margin: float, *, level: float = 0.95, least: int = 2, most: int = 16) -> int:
    """The smallest n in [least, most] with t((1 + level) / 2, n - 1) sd / sqrt(n) <= margin; ``most``
    when none is, and ``least`` when ``sd`` is NaN (the planning seeds are not all stored)."""
    if not 2 <= least <= most:
        raise ValueError(f"need 2 <= least <= most, got least={least}, most={most}")
    if not margin > 0:
        raise ValueError(f"the margin must be positive, got {margin}")
    if math.isnan(sd):
        return least
    for n in range(least, most + 1):
        if t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n) <= margin:
            return n
    return most
